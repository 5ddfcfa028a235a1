"""Checks that run as rules over plain values, before anything is built or sized: the VPC's
argument rule, the FSx sizing request's rule, and the subnet plan read by the subnet rules."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fm_constructs.config import load_profile
from fm_constructs.config.subnet_demand import subnet_demand, subnet_plan, subnet_request
from fm_constructs.errors import FmValidationError
from fm_constructs.planning import subnet_demand as planning
from fm_constructs.planning.fsx_sizing import FsxSizingRequest, size_fsx_lustre
from fm_constructs.planning.pod_networking import PodNetworking
from fm_constructs.rules.subnets import planned_demand
from fm_constructs.rules.vpc import vpc_arguments

ROOT = Path(__file__).resolve().parents[2]


def test_the_vpc_rule_reports_every_argument_in_order_with_its_code() -> None:
    findings = vpc_arguments(
        ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"],
        "10.0.0.0/8",
        region="us-east-1",
        pod_cidr="100.64.0.0/16",
        pod_subnet_zone="eu-west-1a",
        node_subnet_cidrs=["100.64.0.0/16"],
        node_subnet_zone=None,
    )
    assert [(f.code, f.key) for f in findings] == [
        ("FM801", "availability_zones"),
        ("FM105", "cidr"),
        ("FM801", "pod_subnet_zone"),
        ("FM801", "node_subnet_cidrs[0]"),
        ("FM801", "node_subnet_zone"),
    ]
    assert findings[3].allowed == "must not overlap the pod CIDR or another node block"
    assert all(f.is_error for f in findings)


def test_the_vpc_rule_checks_zones_only_against_a_known_region() -> None:
    arguments = {
        "pod_cidr": None,
        "pod_subnet_zone": None,
        "node_subnet_cidrs": (),
        "node_subnet_zone": None,
    }
    assert vpc_arguments(["eu-west-1a"], "10.0.0.0/16", region=None, **arguments) == []
    (finding,) = vpc_arguments(["eu-west-1a"], "10.0.0.0/16", region="us-east-1", **arguments)
    assert (finding.code, finding.key) == ("FM102", "availability_zones[0]")


def test_an_fsx_sizing_request_is_checked_before_it_is_sized() -> None:
    request = FsxSizingRequest(
        checkpoint_size_gib=-1, target_checkpoint_write_seconds=0, checkpoints_to_keep=0
    )
    findings = request.findings()
    assert [(f.code, f.key) for f in findings] == [
        ("FM823", "checkpoint_size_gib"),
        ("FM823", "target_checkpoint_write_seconds"),
        ("FM823", "checkpoints_to_keep"),
    ]
    with pytest.raises(FmValidationError) as raised:
        size_fsx_lustre(request)
    assert raised.value.findings == tuple(findings)
    assert raised.value.context == "FsxSizingRequest"


def test_one_of_checkpoint_size_and_parameters_is_a_finding_on_the_pair() -> None:
    """Keyed on both fields, so a caller's prefix (``sizing.``, a profile's table) reaches it."""
    (finding,) = FsxSizingRequest(target_checkpoint_write_seconds=60).findings()
    assert (finding.code, finding.key) == ("FM823", "checkpoint_size_gib / model_parameters")
    assert finding.value == {"checkpoint_size_gib": None, "model_parameters": None}
    assert (
        finding.under("sizing.")
        .message()
        .startswith(
            "sizing.checkpoint_size_gib / model_parameters: give exactly one of them, got {"
        )
    )


@pytest.mark.parametrize("networking", list(PodNetworking))
def test_the_subnet_rules_read_the_plan_alone(networking: PodNetworking) -> None:
    profile = load_profile(ROOT / "config" / "default.toml")
    profile = dataclasses.replace(
        profile,
        pretraining=dataclasses.replace(
            profile.pretraining, instance_type="p5en.48xlarge", instance_count=1000
        ),
    )
    plan = subnet_plan(profile, networking=networking)
    assert type(plan) is planning.SubnetDemand
    assert plan == planning.plan_subnets(subnet_request(profile), networking)
    assert subnet_demand(profile, networking=networking) == planned_demand(profile, plan)
