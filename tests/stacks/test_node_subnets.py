"""The 1,024 x p5 variant: the default profile at 1,024 nodes (``pretraining.instance_count =
1024``, p5.48xlarge, ``max_pods_per_node = 16``), bought as three ODCRs each made in its own
cluster placement group, as synthesized: the pool's three node groups in one node subnet of a
secondary VPC CIDR block (an EFA pool is never split across subnets), where the IP budget put
it, with prefix delegation; node group i on reservation i in its placement group, no new
placement group, terminate-first updates; cfn-lint and cdk-nag clean.

p5.48xlarge cannot use custom networking (card 0 holds the primary and the efa-only
interface), so this is how that profile reaches 1,024 nodes. One synthesis for the module."""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest

from fm_constructs.config import load_profile
from fm_constructs.config.model import CapacityConfig, CapacityKind, ReservationConfig
from fm_constructs.config.options import deployment_options
from fm_constructs.config.subnet_demand import subnet_demand
from fm_constructs.planning.pod_networking import PodNetworking, vpc_cni_environment
from tests.stacks.profiles import ROOT, SynthesizedProfile, synthesize_profile
from tests.support import cfn_lint

pytestmark = pytest.mark.xdist_group("default-1024")
NODES = 1024


#: (reservation id, placement group name, instances) of each managed node group.
RESERVATIONS = (
    ("cr-0a0000000000000a1", "fm-p5-a", 342),
    ("cr-0a0000000000000a2", "fm-p5-b", 341),
    ("cr-0a0000000000000a3", "fm-p5-c", 341),
)


def _profile() -> Any:
    profile = load_profile(ROOT / "config" / "default.toml")
    capacity = CapacityConfig(
        kind=CapacityKind.ODCR,
        node_groups=tuple(
            ReservationConfig(
                reservation_id=cr,
                placement_group_arn=f"arn:aws:ec2:us-east-1:111122223333:placement-group/{pg}",
                instance_count=count,
            )
            for cr, pg, count in RESERVATIONS
        ),
        reserved_instance_count=NODES,
    )
    pretraining = dataclasses.replace(
        profile.pretraining, instance_count=NODES, max_pods_per_node=16, capacity=capacity
    )
    return dataclasses.replace(profile, pretraining=pretraining)


@functools.cache
def _synth() -> SynthesizedProfile:
    return synthesize_profile("default-1024", _profile())


def _resources(template: dict[str, Any], kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == kind:
            yield logical_id, resource


def _template(suffix: str) -> dict[str, Any]:
    return _synth().templates[f"fm-{suffix}"]


def test_the_plan_puts_the_pool_in_one_node_subnet() -> None:
    demand = subnet_demand(_profile())
    assert demand.fits and demand.networking is PodNetworking.PREFIX_DELEGATION
    assert [s.cidr for s in demand.node_subnets] == ["10.1.0.0/16"]


def test_platform_adds_one_block_and_one_routed_subnet_per_node_subnet() -> None:
    platform = _template("platform")
    blocks = {
        r["Properties"]["CidrBlock"]: lid
        for lid, r in _resources(platform, "AWS::EC2::VPCCidrBlock")
    }
    assert set(blocks) == {"10.1.0.0/16"}
    subnets = {
        r["Properties"]["CidrBlock"]: (lid, r)
        for lid, r in _resources(platform, "AWS::EC2::Subnet")
    }
    (private_1a,) = [
        lid
        for lid, r in subnets.values()
        if r["Properties"]["AvailabilityZone"] == "us-east-1a"
        and r["Properties"]["CidrBlock"].startswith("10.0.")
        and not r["Properties"]["MapPublicIpOnLaunch"]
    ]
    route_tables = {
        r["Properties"]["SubnetId"]["Ref"]: r["Properties"]["RouteTableId"]
        for _, r in _resources(platform, "AWS::EC2::SubnetRouteTableAssociation")
    }
    for cidr, block_id in blocks.items():
        subnet_id, subnet = subnets[cidr]
        assert subnet["Properties"]["AvailabilityZone"] == "us-east-1a"
        assert block_id in subnet["DependsOn"]
        # routed like the GPU zone's private subnet: its NAT gateway and the S3 endpoint
        assert route_tables[subnet_id] == route_tables[private_1a]
    ingress = [
        rule
        for _, r in _resources(platform, "AWS::EC2::SecurityGroup")
        for rule in r["Properties"].get("SecurityGroupIngress", [])
    ]
    for cidr in blocks:
        assert {"CidrIp": cidr, "FromPort": 443, "ToPort": 443}.items() <= next(
            rule for rule in ingress if rule.get("CidrIp") == cidr
        ).items()


def test_each_node_group_launches_in_the_subnet_the_plan_gave_it() -> None:
    result = _synth()
    platform = _template("platform")
    exported = {
        output["Export"]["Name"]: output["Value"]["Ref"]
        for output in platform.get("Outputs", {}).values()
        if isinstance(output.get("Value"), dict) and "Ref" in output["Value"] and "Export" in output
    }
    node_subnet = {
        r["Properties"]["CidrBlock"]: lid for lid, r in _resources(platform, "AWS::EC2::Subnet")
    }
    compute = _template("pretraining-compute")
    placed = {}
    for lid, group in _resources(compute, "AWS::EKS::Nodegroup"):
        (subnet,) = group["Properties"]["Subnets"]
        placed[lid] = exported[subnet["Fn::ImportValue"]]
    expected = deployment_options(result.profile).node_group_subnets["pretraining"]
    cidrs = deployment_options(result.profile).node_subnet_cidrs
    ordered = [placed[lid] for lid in sorted(placed, key=lambda x: (len(x), x))]
    assert ordered == [node_subnet[cidrs[i - 1]] for i in expected]
    # every EFA node group of the pool in the same subnet
    assert len(ordered) == 3 and len(set(ordered)) == 1


def test_each_node_group_on_its_reservation_in_its_placement_group() -> None:
    """No new cluster placement group over the reserved hosts; group i launches into the
    placement group reservation i was made in and targets it alone; updates terminate first."""
    compute = _template("pretraining-compute")
    assert list(_resources(compute, "AWS::EC2::PlacementGroup")) == []
    templates = dict(_resources(compute, "AWS::EC2::LaunchTemplate"))
    seen = []
    for _, group in sorted(
        _resources(compute, "AWS::EKS::Nodegroup"), key=lambda x: (len(x[0]), x[0])
    ):
        props = group["Properties"]
        assert props["UpdateConfig"] == {
            "MaxUnavailablePercentage": 20,
            "UpdateStrategy": "MINIMAL",
        }
        (template_id,) = [
            t for t in templates if json.dumps({"Ref": t}) in json.dumps(props["LaunchTemplate"])
        ]
        data = templates[template_id]["Properties"]["LaunchTemplateData"]
        target = data["CapacityReservationSpecification"]
        seen.append(
            (
                target["CapacityReservationTarget"]["CapacityReservationId"],
                data["Placement"]["GroupName"],
                props["ScalingConfig"]["MaxSize"],
            )
        )
        assert target["CapacityReservationPreference"] == "capacity-reservations-only"
    assert seen == list(RESERVATIONS)


def test_the_cluster_turns_on_prefix_delegation() -> None:
    (cni,) = [
        r["Properties"]
        for _, r in _resources(_template("cluster-addons"), "AWS::EKS::Addon")
        if r["Properties"]["AddonName"] == "vpc-cni"
    ]
    assert json.loads(cni["ConfigurationValues"]) == {
        "env": vpc_cni_environment(PodNetworking.PREFIX_DELEGATION),
        "enableNetworkPolicy": "true",
    }


@pytest.mark.parametrize("stack", ["platform", "pretraining-compute", "cluster-addons"])
def test_changed_stacks_pass_cfn_lint(stack: str) -> None:
    # cdk-nag ran during the synthesis: an unacknowledged finding would have raised there.
    result = _synth()
    assert cfn_lint(result.template_paths[f"fm-{stack}"].read_text(), "us-east-1") == []
