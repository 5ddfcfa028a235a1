"""fmc preflight with every AWS call stubbed (botocore Stubber): passes, failures with fixes,
throttling and access denied (clear message, exit 3, no traceback), and the --json schema."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli_stubs import DEFAULT_PROFILE, PLATFORM, REPO, Stubs, run, stubs, write_profile

__all__ = ["stubs"]  # the fixture


def _offerings(instance_type: str, zones: list[str]) -> dict:  # type: ignore[type-arg]
    return {
        "InstanceTypeOfferings": [
            {"InstanceType": instance_type, "LocationType": "availability-zone", "Location": z}
            for z in zones
        ]
    }


def _offering_params(instance_type: str) -> dict:  # type: ignore[type-arg]
    return {
        "LocationType": "availability-zone",
        "Filters": [{"Name": "instance-type", "Values": [instance_type]}],
    }


def _quota(code: str, value: float) -> dict:  # type: ignore[type-arg]
    return {"Quota": {"ServiceCode": "ec2", "QuotaCode": code, "QuotaName": code, "Value": value}}


def _queue_default_profile(
    stubs: Stubs, *, p_quota: float = 1152.0, g_quota: float = 1152.0
) -> None:
    ec2 = stubs["ec2"]
    for instance_type in ("p5.48xlarge", "p5en.48xlarge", "g6e.48xlarge"):
        ec2.add_response(
            "describe_instance_type_offerings",
            _offerings(instance_type, ["us-east-1a", "us-east-1b"]),
            _offering_params(instance_type),
        )
    quotas = stubs["service-quotas"]
    # P: 4 * 192 (p5) + 2 * 192 (p5en) = 1152 vCPUs; G: every g6e.48xlarge node that can
    # exist: 2 rollout + 4 inference (autoscaling maximum) = 6 * 192 = 1152
    quotas.add_response(
        "get_service_quota",
        _quota("L-417A185B", p_quota),
        {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    quotas.add_response(
        "get_service_quota",
        _quota("L-DB2E81BA", g_quota),
        {"ServiceCode": "ec2", "QuotaCode": "L-DB2E81BA"},
    )
    quotas.add_response(
        "list_service_quotas",
        {
            "Quotas": [
                {
                    "QuotaCode": "L-FSX1",
                    "QuotaName": "Lustre Persistent_2 storage capacity",
                    "Value": 100800.0,
                }
            ]
        },
        {"ServiceCode": "fsx"},
    )
    stubs["fsx"].add_response(
        "describe_file_systems",
        {
            "FileSystems": [
                {
                    "FileSystemId": "fs-0123456789abcdef0",
                    "FileSystemType": "LUSTRE",
                    "StorageCapacity": 2400,
                    "LustreConfiguration": {"DeploymentType": "PERSISTENT_2"},
                }
            ]
        },
        {},
    )
    stubs["eks"].add_response(
        "describe_cluster_versions",
        {"clusterVersions": [{"clusterVersion": "1.35", "versionStatus": "STANDARD_SUPPORT"}]},
        {"clusterVersions": ["1.35"]},
    )


def test_default_profile_passes(stubs: Stubs) -> None:
    _queue_default_profile(stubs)
    result = run("preflight", "--config", DEFAULT_PROFILE)
    assert result.code == 0, result.out + result.err
    assert "FAIL" not in result.out
    assert "p5.48xlarge is offered in us-east-1a" in result.out
    # 1152 vCPUs needed of 1152: passes; FSx 2400 existing + 9600 + 4800 planned <= 100800
    assert "1,152 vCPUs, the profile needs 1,152" in result.out
    assert "existing PERSISTENT_2 file systems 2,400 GiB + planned 14,400 GiB" in result.out
    # The profile's platform.kubernetes_version is the one checked, and the profile's own
    # warnings (no admin role yet) are shown as the loader and `fmc plan` give them.
    assert "Kubernetes 1.35: STANDARD_SUPPORT" in result.out
    assert "platform.admin_role_arns: no admin role is given" in result.out
    assert "[FM203]" in result.out
    stubs.assert_done()


def test_online_checks_use_the_finding_type_and_registered_codes() -> None:
    from fm_constructs.cli.preflight import CHECK_CODES, Check, Status
    from fm_constructs.rules.findings import Severity
    from fm_constructs.rules.reference import all_rules

    assert set(CHECK_CODES.values()) <= set(all_rules())
    failed = Check("EKS version", None, Status.FAIL, "1.29 is not offered", "choose 1.35")
    assert failed.finding is not None and failed.finding.severity is Severity.ERROR
    assert failed.finding.line() == "1.29 is not offered [FM709]"
    assert Check("EKS version", None, Status.PASS, "ok").finding is None
    with pytest.raises(ValueError, match="has no code"):
        Check("a check without a code", None, Status.FAIL, "x")


def test_json_schema_and_low_quota_fails_with_the_increase_command(stubs: Stubs) -> None:
    _queue_default_profile(stubs, p_quota=768.0)
    result = run("preflight", "--config", DEFAULT_PROFILE, "--json")
    assert result.code == 1
    doc = json.loads(result.out)
    assert doc["schema"] == "fmc.preflight/v1"
    assert set(doc) == {
        "schema",
        "profile",
        "region",
        "availability_zone",
        "checks",
        "summary",
        "exit_code",
    }
    assert set(doc["checks"][0]) == {"name", "workload", "status", "code", "detail", "fix"}
    assert doc["exit_code"] == 1 and doc["summary"]["fail"] == 1
    (failed,) = [c for c in doc["checks"] if c["status"] == "fail"]
    assert failed["code"] == "FM706"  # the online checks report codes like the offline rules
    assert "768 vCPUs, the profile needs 1,152" in failed["detail"]
    assert "--quota-code L-417A185B --desired-value 1152" in failed["fix"]
    assert result.err == ""  # no progress lines in --json mode


def test_quota_counts_rollout_groups_and_autoscaling_maxima(stubs: Stubs) -> None:
    # 384 G vCPUs covered the 2 inference nodes alone; rollout (2) and the inference maximum
    # (4) need 1152.
    _queue_default_profile(stubs, g_quota=384.0)
    result = run("preflight", "--config", DEFAULT_PROFILE, "--json")
    assert result.code == 1
    (failed,) = [c for c in json.loads(result.out)["checks"] if c["status"] == "fail"]
    assert "384 vCPUs, the profile needs 1,152" in failed["detail"]
    assert "post_training.rollout 2 x g6e.48xlarge" in failed["detail"]
    assert "inference 4 x g6e.48xlarge" in failed["detail"]


def test_zone_without_the_type_fails_and_names_the_zones(stubs: Stubs) -> None:
    _queue_default_profile(stubs)
    ec2 = stubs["ec2"]
    # replace the first queued answer: p5 only in us-east-1b and us-east-1c
    ec2._queue.popleft()
    queued = list(ec2._queue)
    ec2._queue.clear()
    ec2.add_response(
        "describe_instance_type_offerings",
        _offerings("p5.48xlarge", ["us-east-1c", "us-east-1b"]),
        _offering_params("p5.48xlarge"),
    )
    ec2._queue.extend(queued)
    result = run("preflight", "--config", DEFAULT_PROFILE)
    assert result.code == 1
    assert "not offered in us-east-1a; it is offered in us-east-1b, us-east-1c" in result.out
    assert "set platform.availability_zone to one of us-east-1b, us-east-1c" in result.out


CAPACITY_BLOCK = (
    PLATFORM
    + """
[pretraining]
enabled = true
instance_type = "p5.48xlarge"
instance_count = 2

[pretraining.capacity]
kind = "capacity-block"
reservation_id = "cr-0123456789abcdef0"

[pretraining.storage]
enabled = false
"""
)


def _reservation(**overrides: object) -> dict:  # type: ignore[type-arg]
    r = {
        "CapacityReservationId": "cr-0123456789abcdef0",
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": "us-east-1a",
        "TotalInstanceCount": 2,
        "State": "active",
        "ReservationType": "capacity-block",
        "EndDate": datetime.now(UTC) + timedelta(days=5),
    }
    r.update(overrides)
    return {"CapacityReservations": [r]}


def _queue_capacity_block(stubs: Stubs, reservation: dict | None, error: str | None = None) -> None:  # type: ignore[type-arg]
    stubs["ec2"].add_response(
        "describe_instance_type_offerings",
        _offerings("p5.48xlarge", ["us-east-1a"]),
        _offering_params("p5.48xlarge"),
    )
    params = {"CapacityReservationIds": ["cr-0123456789abcdef0"]}
    if error:
        stubs["ec2"].add_client_error(
            "describe_capacity_reservations", service_error_code=error, expected_params=params
        )
    else:
        stubs["ec2"].add_response("describe_capacity_reservations", reservation, params)
    stubs["eks"].add_response(
        "describe_cluster_versions",
        {"clusterVersions": [{"clusterVersion": "1.35", "versionStatus": "STANDARD_SUPPORT"}]},
        {"clusterVersions": ["1.35"]},
    )


def test_capacity_block_matching_passes(stubs: Stubs, tmp_path: Path) -> None:
    _queue_capacity_block(stubs, _reservation())
    result = run("preflight", "--config", write_profile(tmp_path, CAPACITY_BLOCK))
    assert result.code == 0, result.out
    assert "cr-0123456789abcdef0: active, 2 x p5.48xlarge in us-east-1a" in result.out
    # no EC2 quota call: Capacity Blocks are reserved capacity
    assert "no on-demand or ODCR workload" in result.out
    stubs.assert_done()


def test_capacity_block_mismatches_fail_and_expiry_warns(stubs: Stubs, tmp_path: Path) -> None:
    _queue_capacity_block(
        stubs,
        _reservation(
            AvailabilityZone="us-east-1b",
            TotalInstanceCount=1,
            EndDate=datetime.now(UTC) + timedelta(hours=5),
        ),
    )
    result = run("preflight", "--config", write_profile(tmp_path, CAPACITY_BLOCK), "--json")
    assert result.code == 1
    (check,) = [c for c in json.loads(result.out)["checks"] if c["name"] == "capacity reservation"]
    assert check["status"] == "fail"
    assert "it is in us-east-1b, the GPU zone is us-east-1a" in check["detail"]
    assert "it holds 1 instances, the profile wants 2" in check["detail"]
    assert "it ends in 5 h" in check["detail"]
    assert "set platform.availability_zone = 'us-east-1b'" in check["fix"]


def test_capacity_block_times_platform_and_tenancy_are_compared(
    stubs: Stubs, tmp_path: Path
) -> None:
    start = datetime(2027, 1, 4, 11, 30, tzinfo=UTC)
    profile = CAPACITY_BLOCK.replace(
        'reservation_id = "cr-0123456789abcdef0"',
        'reservation_id = "cr-0123456789abcdef0"\n'
        'start_time = "2027-01-04T11:30:00Z"\nend_time = "2027-01-18T11:30:00Z"',
    )
    _queue_capacity_block(
        stubs,
        _reservation(
            StartDate=start,
            EndDate=start + timedelta(days=7),
            Tenancy="dedicated",
            InstancePlatform="Linux with SQL Server Standard",
        ),
    )
    result = run("preflight", "--config", write_profile(tmp_path, profile), "--json")
    (check,) = [c for c in json.loads(result.out)["checks"] if c["name"] == "capacity reservation"]
    assert check["status"] == "fail"
    assert "its EndDate is 2027-01-11T11:30:00Z, the profile's end_time is" in check["detail"]
    assert "StartDate" not in check["detail"]  # the start agrees
    assert "tenancy is 'dedicated'" in check["detail"]
    assert "platform is 'Linux with SQL Server Standard'" in check["detail"]
    assert "end_time = '2027-01-11T11:30:00Z'" in check["fix"]


ODCR_GROUP = (
    PLATFORM
    + """
[pretraining]
enabled = true
instance_type = "p5.48xlarge"
instance_count = 3

[pretraining.capacity]
kind = "odcr"
resource_group_arn = "arn:aws:resource-groups:us-east-1:111122223333:group/gpus"

[pretraining.storage]
enabled = false
"""
)


def test_reservation_group_members_are_read_and_counted(stubs: Stubs, tmp_path: Path) -> None:
    ec2 = stubs["ec2"]
    ec2.add_response(
        "describe_instance_type_offerings",
        _offerings("p5.48xlarge", ["us-east-1a"]),
        _offering_params("p5.48xlarge"),
    )
    arn = "arn:aws:ec2:us-east-1:111122223333:capacity-reservation/"
    stubs["resource-groups"].add_response(
        "list_group_resources",
        {
            "Resources": [
                {
                    "Identifier": {
                        "ResourceArn": arn + cr,
                        "ResourceType": "AWS::EC2::CapacityReservation",
                    }
                }
                for cr in ("cr-0123456789abcdef0", "cr-0fedcba9876543210")
            ]
        },
        {"Group": "arn:aws:resource-groups:us-east-1:111122223333:group/gpus"},
    )
    ec2.add_response(
        "describe_capacity_reservations",
        {
            "CapacityReservations": [
                {**_reservation()["CapacityReservations"][0], "ReservationType": "default"},
                {
                    **_reservation()["CapacityReservations"][0],
                    "CapacityReservationId": "cr-0fedcba9876543210",
                    "AvailabilityZone": "us-east-1b",  # wrong zone: not usable
                },
            ]
        },
        {"CapacityReservationIds": ["cr-0123456789abcdef0", "cr-0fedcba9876543210"]},
    )
    stubs["service-quotas"].add_response(
        "get_service_quota",
        _quota("L-417A185B", 4000.0),
        {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    stubs["eks"].add_response(
        "describe_cluster_versions",
        {"clusterVersions": [{"clusterVersion": "1.35", "versionStatus": "STANDARD_SUPPORT"}]},
        {"clusterVersions": ["1.35"]},
    )
    result = run("preflight", "--config", write_profile(tmp_path, ODCR_GROUP), "--json")
    assert result.code == 1
    doc = json.loads(result.out)
    (check,) = [c for c in doc["checks"] if c["name"] == "capacity reservation group"]
    assert check["status"] == "fail"
    assert "2 reservations, 1 usable for p5.48xlarge in us-east-1a holding 2" in check["detail"]
    assert "never falls back to On-Demand" in check["detail"]
    assert "fall_back_to_on_demand = true" in check["fix"]
    stubs.assert_done()


def test_expiry_alone_is_a_warning(stubs: Stubs, tmp_path: Path) -> None:
    _queue_capacity_block(stubs, _reservation(EndDate=datetime.now(UTC) + timedelta(hours=30)))
    result = run("preflight", "--config", write_profile(tmp_path, CAPACITY_BLOCK), "--json")
    assert result.code == 0
    (check,) = [c for c in json.loads(result.out)["checks"] if c["name"] == "capacity reservation"]
    assert check["status"] == "warn" and "terminated" in check["fix"]


def test_missing_reservation_fails(stubs: Stubs, tmp_path: Path) -> None:
    _queue_capacity_block(stubs, None, error="InvalidCapacityReservationId.NotFound")
    result = run("preflight", "--config", write_profile(tmp_path, CAPACITY_BLOCK))
    assert result.code == 1
    assert "cr-0123456789abcdef0 does not exist in us-east-1" in result.out


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("ThrottlingException", "AWS throttled the request (ThrottlingException)"),
        ("RequestLimitExceeded", "AWS throttled the request (RequestLimitExceeded)"),
        ("UnauthorizedOperation", "access denied (UnauthorizedOperation)"),
    ],
)
def test_throttling_and_access_denied_exit_3_without_traceback(
    stubs: Stubs, tmp_path: Path, code: str, message: str
) -> None:
    stubs["ec2"].add_client_error(
        "describe_instance_type_offerings",
        service_error_code=code,
        expected_params=_offering_params("p5.48xlarge"),
    )
    stubs["ec2"].add_response(
        "describe_capacity_reservations",
        _reservation(),
        {"CapacityReservationIds": ["cr-0123456789abcdef0"]},
    )
    stubs["eks"].add_response(
        "describe_cluster_versions",
        {"clusterVersions": [{"clusterVersion": "1.35", "versionStatus": "STANDARD_SUPPORT"}]},
        {"clusterVersions": ["1.35"]},
    )
    result = run("preflight", "--config", write_profile(tmp_path, CAPACITY_BLOCK))
    assert result.code == 3
    assert message in result.out
    assert "ec2:DescribeInstanceTypeOfferings" in result.out
    assert "Traceback" not in result.out + result.err
    stubs.assert_done()  # the other checks still ran


def test_access_denied_on_quotas(stubs: Stubs) -> None:
    _queue_default_profile(stubs)
    quotas = stubs["service-quotas"]
    quotas._queue.clear()
    quotas.add_client_error(
        "get_service_quota",
        service_error_code="AccessDeniedException",
        expected_params={"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    quotas.add_client_error("list_service_quotas", service_error_code="AccessDeniedException")
    stubs["fsx"]._queue.clear()
    result = run("preflight", "--config", DEFAULT_PROFILE)
    assert result.code == 3
    assert "servicequotas:GetServiceQuota: access denied (AccessDeniedException)" in result.out
    assert "Traceback" not in result.err


HYPERPOD = (
    PLATFORM
    + """
[pretraining]
enabled = true
orchestrator = "hyperpod-slurm"
instance_type = "p5.48xlarge"
instance_count = 2

[pretraining.capacity]
kind = "training-plan"
training_plan_arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/plan-a"

[pretraining.storage]
enabled = false
"""
)


def test_hyperpod_training_plan_and_quota(stubs: Stubs, tmp_path: Path) -> None:
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/plan-a"
    stubs["sagemaker"].add_response(
        "describe_training_plan",
        {
            "TrainingPlanArn": arn,
            "TrainingPlanName": "plan-a",
            "Status": "Scheduled",
            "TotalInstanceCount": 2,
            "TargetResources": ["hyperpod-cluster"],
            "ReservedCapacitySummaries": [
                {
                    "ReservedCapacityArn": (
                        "arn:aws:sagemaker:us-east-1:111122223333:reserved-capacity/rc-1"
                    ),
                    "InstanceType": "ml.p5.48xlarge",
                    "TotalInstanceCount": 2,
                    "Status": "Scheduled",
                }
            ],
            "EndTime": datetime.now(UTC) + timedelta(days=10),
        },
        {"TrainingPlanName": arn},
    )
    stubs["service-quotas"].add_response(
        "list_service_quotas",
        {
            "Quotas": [
                {"QuotaCode": "L-HP", "QuotaName": "ml.p5.48xlarge for cluster usage", "Value": 1.0}
            ]
        },
        {"ServiceCode": "sagemaker"},
    )
    result = run("preflight", "--config", write_profile(tmp_path, HYPERPOD), "--json")
    doc = json.loads(result.out)
    statuses = {c["name"]: c["status"] for c in doc["checks"]}
    assert statuses["training plan"] == "pass"
    assert statuses["HyperPod instance type"] == "pass"
    assert statuses["instance type offered"] == "skip"
    assert statuses["HyperPod quota"] == "fail"  # 1 < 2
    assert result.code == 1
    stubs.assert_done()


def _summary(
    zone: str, count: int = 2, instance_type: str = "ml.p5.48xlarge", status: str = "Scheduled"
) -> dict[str, Any]:
    return {
        "ReservedCapacityArn": f"arn:aws:sagemaker:us-east-1:111122223333:reserved-capacity/{zone}",
        "InstanceType": instance_type,
        "TotalInstanceCount": count,
        "Status": status,
        "AvailabilityZone": zone,
    }


def _plan(**overrides: Any) -> dict[str, Any]:
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/plan-a"
    summary = _summary(overrides.pop("zone", "us-east-1a"))
    plan: dict[str, Any] = {
        "TrainingPlanArn": arn,
        "TrainingPlanName": "plan-a",
        "Status": "Scheduled",
        "TotalInstanceCount": 2,
        "AvailableInstanceCount": 2,
        "TargetResources": ["hyperpod-cluster"],
        "ReservedCapacitySummaries": [summary],
        "StartTime": datetime.now(UTC) - timedelta(hours=1),
        "EndTime": datetime.now(UTC) + timedelta(days=10),
    }
    plan.update(overrides)
    return plan


@pytest.mark.parametrize(
    ("overrides", "status", "text"),
    [
        ({}, "pass", "2 available) in us-east-1a"),
        ({"zone": "us-east-1b"}, "fail", "reserves capacity in us-east-1b, the GPU zone is"),
        ({"AvailableInstanceCount": 1, "InUseInstanceCount": 1}, "fail", "only 1 of its 2"),
        (
            {"StartTime": datetime.now(UTC) + timedelta(days=2)},
            "warn",
            "deploy the HyperPod stack after the start",
        ),
        (
            {"ReservedCapacitySummaries": [_summary("us-east-1a", 1), _summary("us-east-1b", 1)]},
            "fail",
            "it reserves 1 ml.p5.48xlarge in us-east-1a (of 2 in all)",
        ),
        (
            {"ReservedCapacitySummaries": [_summary("us-east-1a", 2, "ml.p4d.24xlarge")]},
            "fail",
            "it reserves ml.p4d.24xlarge, not ml.p5.48xlarge",
        ),
        ({"EndTime": datetime.now(UTC) - timedelta(hours=1)}, "fail", "it has ended"),
        (
            {
                "ReservedCapacitySummaries": [
                    _summary("us-east-1a", 1),
                    _summary("us-east-1a", 1, status="Expired"),
                ]
            },
            "fail",
            "it reserves 1 ml.p5.48xlarge in us-east-1a (of 2 in all)",
        ),
    ],
    ids=[
        "matches",
        "other-zone",
        "in-use",
        "not-started",
        "split-zones",
        "other-type",
        "ended",
        "expired-segment",
    ],
)
def test_training_plan_is_compared_with_the_profile(
    stubs: Stubs, tmp_path: Path, overrides: dict[str, Any], status: str, text: str
) -> None:
    """What the plan says (zone, instances still available, start) against the profile."""
    arn = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/plan-a"
    stubs["sagemaker"].add_response(
        "describe_training_plan", _plan(**overrides), {"TrainingPlanName": arn}
    )
    stubs["service-quotas"].add_response(
        "list_service_quotas",
        {
            "Quotas": [
                {"QuotaCode": "L-HP", "QuotaName": "ml.p5.48xlarge for cluster usage", "Value": 8.0}
            ]
        },
        {"ServiceCode": "sagemaker"},
    )
    result = run("preflight", "--config", write_profile(tmp_path, HYPERPOD), "--json")
    doc = json.loads(result.out)
    (check,) = [c for c in doc["checks"] if c["name"] == "training plan"]
    assert check["status"] == status, check
    assert text in json.dumps(check)
    stubs.assert_done()


def test_pinned_kubernetes_version_in_extended_support_warns(stubs: Stubs, tmp_path: Path) -> None:
    _queue_capacity_block(stubs, _reservation())
    stubs["eks"]._queue.clear()
    stubs["eks"].add_response(
        "describe_cluster_versions",
        {"clusterVersions": [{"clusterVersion": "1.29", "versionStatus": "EXTENDED_SUPPORT"}]},
        {"clusterVersions": ["1.29"]},
    )
    result = run(
        "preflight",
        "--config",
        write_profile(tmp_path, CAPACITY_BLOCK),
        "--kubernetes-version",
        "1.29",
    )
    assert result.code == 0
    assert "WARN" in result.out and "extended support" in result.out


def test_no_credentials_exit_3(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.unit.cli_stubs import fake_credentials

    fake_credentials(monkeypatch)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    result = run("preflight", "--config", DEFAULT_PROFILE)
    assert result.code == 3
    assert "no AWS credentials found" in result.err


def _get_role(stubs: Stubs, name: str, arn: str) -> None:
    stubs["iam"].add_response(
        "get_role",
        {
            "Role": {
                "Path": arn.split(":role", 1)[1].rsplit("/", 1)[0] + "/",
                "RoleName": name,
                "RoleId": "AROAEXAMPLEEXAMPLE123",
                "Arn": arn,
                "CreateDate": datetime(2026, 1, 1, tzinfo=UTC),
            }
        },
        {"RoleName": name},
    )


def test_every_admin_role_is_checked_to_exist_under_its_arn(stubs: Stubs, tmp_path: Path) -> None:
    """FM710: a role that does not exist, or exists only with a path the profile leaves out
    (an IAM Identity Center role), gives no one access: preflight fails and names the ARN."""
    account = "444455556666"
    sso = "AWSReservedSSO_MlAdmin_0123456789abcdef"
    sso_arn = f"arn:aws:iam::{account}:role/aws-reserved/sso.amazonaws.com/eu-west-2/{sso}"
    roles = [
        f"arn:aws:iam::{account}:role/Ops",  # exists
        f"arn:aws:iam::{account}:role/{sso}",  # exists, but with a path
        f"arn:aws:iam::{account}:role/Gone",  # does not exist
    ]
    text = (
        Path(DEFAULT_PROFILE)
        .read_text()
        .replace(
            "admin_role_arns = []", "admin_role_arns = [" + ", ".join(f'"{r}"' for r in roles) + "]"
        )
    )
    path = write_profile(tmp_path, text)
    _queue_default_profile(stubs)
    _get_role(stubs, "Ops", roles[0])
    _get_role(stubs, sso, sso_arn)
    stubs["iam"].add_client_error(
        "get_role",
        "NoSuchEntity",
        "The role with name Gone cannot be found.",
        expected_params={"RoleName": "Gone"},
    )
    result = run("preflight", "--config", path, "--json")
    assert result.code == 1, result.err
    stubs.assert_done()
    checks = [c for c in json.loads(result.out)["checks"] if c["name"] == "admin roles"]
    assert [c["status"] for c in checks] == ["pass", "fail", "fail"]
    assert checks[1]["code"] == "FM710" and checks[1]["fix"] == (
        f"write {sso_arn} in platform.admin_role_arns"
    )
    assert f"no role Gone in account {account}" in checks[2]["detail"]


def test_one_reservation_per_node_group_is_checked_against_its_group() -> None:
    """With [[<workload>.capacity.node_groups]] preflight checks each entry against the nodes
    of its managed node group (342 + 341 + 341 for 1,024), under its own key path, and reports
    the worst of them."""
    import dataclasses

    from fm_constructs.cli.preflight import Check, Status, _combined, _reservation_targets
    from fm_constructs.config import load_profile
    from fm_constructs.config.model import CapacityConfig, CapacityKind, ReservationConfig

    profile = load_profile(REPO / "config" / "default.toml")
    capacity = CapacityConfig(
        kind=CapacityKind.ODCR,
        node_groups=tuple(
            ReservationConfig(reservation_id=f"cr-0a0000000000000a{i}") for i in range(3)
        ),
    )
    w = dataclasses.replace(profile.pretraining, instance_count=1024, capacity=capacity)
    targets = _reservation_targets(w)
    assert [(t.key, t.wanted, t.reservation_id) for t in targets] == [
        ("pretraining.capacity.node_groups[0]", 342, "cr-0a0000000000000a0"),
        ("pretraining.capacity.node_groups[1]", 341, "cr-0a0000000000000a1"),
        ("pretraining.capacity.node_groups[2]", 341, "cr-0a0000000000000a2"),
    ]
    name = "capacity reservation"
    checks = [
        Check(name, "pretraining", Status.PASS, "cr-a0: active"),
        Check(name, "pretraining", Status.FAIL, "cr-a1: it holds 300", "reserve more"),
        Check(name, "pretraining", Status.WARN, "cr-a2: ends in 5 h", "checkpoint"),
    ]
    combined = _combined(checks)
    assert combined.status is Status.FAIL
    assert combined.detail == "cr-a0: active; cr-a1: it holds 300; cr-a2: ends in 5 h"
    assert combined.fix == "reserve more; checkpoint"
    single = dataclasses.replace(profile.pretraining, capacity=CapacityConfig())
    (target,) = _reservation_targets(single)
    assert target.key == "pretraining.capacity"


PCS_ODCR = "cr-0a1b2c3d4e5f60718"


#: The image config/pcs.toml pins for its nodes.
PCS_AMI = "ami-0a1b2c3d4e5f60718"


def _queue_pcs_profile(
    stubs: Stubs, clusters: list[dict[str, Any]], *, paged: bool, ami_state: str = "available"
) -> None:
    """config/pcs.toml: 4 x p5 from an ODCR, its pinned node image, FSx, and the PCS clusters
    of the region."""
    ec2 = stubs["ec2"]
    ec2.add_response(
        "describe_instance_type_offerings",
        _offerings("p5.48xlarge", ["us-east-1a"]),
        _offering_params("p5.48xlarge"),
    )
    reservation = _reservation(
        CapacityReservationId=PCS_ODCR, TotalInstanceCount=4, ReservationType="default"
    )
    reservation["CapacityReservations"][0].pop("EndDate")
    ec2.add_response(
        "describe_capacity_reservations", reservation, {"CapacityReservationIds": [PCS_ODCR]}
    )
    ec2.add_response(
        "describe_images",
        {
            "Images": [
                {"ImageId": PCS_AMI, "Name": "fm-pcs", "State": ami_state, "Architecture": "x86_64"}
            ]
        },
        {"ImageIds": [PCS_AMI]},
    )
    stubs["service-quotas"].add_response(
        "get_service_quota",
        _quota("L-417A185B", 768.0),
        {"ServiceCode": "ec2", "QuotaCode": "L-417A185B"},
    )
    stubs["service-quotas"].add_response(
        "list_service_quotas",
        {
            "Quotas": [
                {
                    "QuotaCode": "L-FSX1",
                    "QuotaName": "Lustre Persistent_2 storage capacity",
                    "Value": 100800.0,
                }
            ]
        },
        {"ServiceCode": "fsx"},
    )
    stubs["fsx"].add_response("describe_file_systems", {"FileSystems": []}, {})
    pcs = stubs["pcs"]
    if paged:
        pcs.add_response("list_clusters", {"clusters": clusters[:1], "nextToken": "t1"}, {})
        pcs.add_response("list_clusters", {"clusters": clusters[1:]}, {"nextToken": "t1"})
    else:
        pcs.add_response("list_clusters", {"clusters": clusters}, {})


def _cluster(name: str, status: str) -> dict[str, Any]:
    now = datetime.now(UTC)
    return {
        "name": name,
        "id": f"pcs_{name}",
        "arn": f"arn:aws:pcs:us-east-1:111122223333:cluster/pcs_{name}",
        "createdAt": now,
        "modifiedAt": now,
        "status": status,
    }


def test_pcs_profile_checks_the_reservation_and_clusters_being_created(stubs: Stubs) -> None:
    profile = str(Path(__file__).resolve().parents[2] / "config" / "pcs.toml")
    _queue_pcs_profile(stubs, [_cluster("other", "ACTIVE")], paged=False)
    result = run("preflight", "--config", profile)
    assert result.code == 0, result.out + result.err
    assert f"{PCS_ODCR}: active, 4 x p5.48xlarge in us-east-1a" in result.out
    assert "no PCS cluster is being created in us-east-1" in result.out
    assert f"{PCS_AMI} (fm-pcs) is available in us-east-1" in result.out
    stubs.assert_done()


def test_a_deregistered_pcs_node_image_fails_the_preflight(stubs: Stubs) -> None:
    profile = str(Path(__file__).resolve().parents[2] / "config" / "pcs.toml")
    _queue_pcs_profile(stubs, [], paged=False, ami_state="deregistered")
    result = run("preflight", "--config", profile, "--json")
    assert result.code == 1, result.out + result.err
    (check,) = [c for c in json.loads(result.out)["checks"] if c["name"] == "PCS node AMI"]
    assert check["status"] == "fail" and check["code"] == "FM712"
    assert "is deregistered in us-east-1" in check["detail"]
    stubs.assert_done()


def test_a_pcs_cluster_being_created_warns(stubs: Stubs) -> None:
    profile = str(Path(__file__).resolve().parents[2] / "config" / "pcs.toml")
    clusters = [_cluster("ready", "ACTIVE"), _cluster("busy", "CREATING")]
    _queue_pcs_profile(stubs, clusters, paged=True)
    result = run("preflight", "--config", profile, "--json")
    (check,) = [c for c in json.loads(result.out)["checks"] if c["name"] == "PCS cluster creation"]
    assert check["status"] == "warn" and check["code"] == "FM711"
    assert "PCS is creating busy" in check["detail"]
    stubs.assert_done()
