"""The compute rules called on plain arguments, without a construct or a synthesis."""

from __future__ import annotations

from datetime import UTC, datetime

from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.rules import compute
from fm_constructs.rules.constructs import CAPACITY_RESERVATION, CAPACITY_SOURCE, LAUNCH_TEMPLATE

_LT = {
    "vpc_given": True,
    "efa_security_group_given": False,
    "capacity_kind": CapacityKind.ON_DEMAND,
    "training_plan_arn": None,
    "capacity_allows_placement_group": True,
    "capacity_placement_group_arn": None,
    "reserved": compute.Placement(),
    "placement_group_given": False,
    "create_placement_group": None,
    "nodes": compute.Placement(2, None, "p5.48xlarge"),
    "root_volume_size_gib": 500,
    "nodeadm_cluster_name": None,
    "nodeadm_user_data": True,
    "imds_hop_limit": 1,
}


def test_a_valid_capacity_source_has_no_findings() -> None:
    assert compute.capacity_source(kind=CapacityKind.ON_DEMAND) == []
    assert (
        compute.capacity_source(
            kind=CapacityKind.ODCR,
            reservation_id="cr-0123456789abcdef0",
            availability_zone="us-east-1a",
            instance_count=4,
        )
        == []
    )


def test_capacity_source_findings_carry_its_code_keys_and_messages() -> None:
    found = compute.capacity_source(
        kind=CapacityKind.ON_DEMAND,
        reservation_id="cr-0123456789abcdef0",
        availability_zone="use1-az1",
        instance_count=0,
        fall_back_to_on_demand=True,
    )
    assert {f.code for f in found} == {CAPACITY_SOURCE}
    assert [f.key for f in found] == [
        "reservation_id",
        "fall_back_to_on_demand",
        "availability_zone",
        "instance_count",
    ]
    assert (
        found[0].message()
        == "reservation_id: must be unset for on-demand, got 'cr-0123456789abcdef0'"
    )


def test_an_odcr_needs_exactly_one_target_and_a_well_formed_id() -> None:
    (neither,) = compute.capacity_source(kind=CapacityKind.ODCR)
    assert neither.key == ""
    assert "exactly one of a reservation id" in neither.message()
    (malformed,) = compute.capacity_source(kind=CapacityKind.ODCR, reservation_id="cr-1")
    assert (malformed.code, malformed.key) == (CAPACITY_SOURCE, "reservation_id")


def test_a_token_is_not_checked() -> None:
    token = "${Token[TOKEN.12]}"
    assert compute.capacity_source(kind=CapacityKind.ODCR, reservation_id=token) == []


def test_capacity_fit_reports_count_zone_and_type() -> None:
    found = compute.capacity_fit(
        CapacityKind.CAPACITY_BLOCK,
        compute.Placement(2, "us-east-1a", "p5.48xlarge"),
        compute.Placement(4, "us-east-1b", "ml.p5.48xlarge"),
    )
    assert [f.message().split(":")[0] for f in found] == ["node_count", "subnet_availability_zone"]


def test_a_valid_launch_template_has_no_findings() -> None:
    assert compute.launch_template(**_LT) == []  # type: ignore[arg-type]


def test_launch_template_findings() -> None:
    found = compute.launch_template(
        **{  # type: ignore[arg-type]
            **_LT,
            "vpc_given": False,
            "capacity_kind": CapacityKind.CAPACITY_BLOCK,
            "capacity_allows_placement_group": False,
            "create_placement_group": True,
            "nodes": compute.Placement(-1, None, "p5.48xlarge"),
            "root_volume_size_gib": 10,
            "nodeadm_cluster_name": "c",
            "nodeadm_user_data": False,
            "imds_hop_limit": True,
        }
    )
    assert {f.code for f in found} == {LAUNCH_TEMPLATE}
    assert [f.key or f.allowed.split(":")[0] for f in found] == [
        "vpc",
        "create_placement_group",
        "node_count",
        "root_volume_size_gib",
        "nodeadm_cluster",
        "imds_hop_limit",
    ]
    assert compute.root_device("/dev/sda1", ubuntu_device="u", amazon_linux_device="a") == []
    (missing,) = compute.root_device(None, ubuntu_device="u", amazon_linux_device="a")
    assert missing.key == "root_volume_device_name"


def test_capacity_reservation_rules() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    ok = {"availability_zone": "us-east-1a", "instance_count": 1, "tenancy": "default"}
    assert compute.capacity_reservation(**ok, end_date=None, now=now) == []  # type: ignore[arg-type]
    past = compute.capacity_reservation(**ok, end_date="2025-01-01T00:00:00Z", now=now)  # type: ignore[arg-type]
    assert [(f.code, f.key, f.allowed) for f in past] == [
        (CAPACITY_RESERVATION, "end_date", "must be in the future")
    ]
    naive = compute.capacity_reservation(**ok, end_date=datetime(2030, 1, 1), now=now)  # type: ignore[arg-type]
    assert [f.allowed for f in naive] == ["must be timezone-aware (UTC)"]
    bad = compute.capacity_reservation(
        availability_zone="use1-az1", instance_count=1001, tenancy="host", end_date="x", now=now
    )
    assert [f.key for f in bad] == ["availability_zone", "instance_count", "tenancy", "end_date"]
    assert (
        compute.reservation_end_text(datetime(2030, 1, 1, 12, tzinfo=UTC)) == "2030-01-01T12:00:00Z"
    )
