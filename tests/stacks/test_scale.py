"""The 1,024-node profile as synthesized: pod subnets and ENIConfigs for custom networking,
the pool split into node groups within the EKS quota, kubelet maxPods on every node."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from fm_constructs.domain import names
from fm_constructs.domain.topology import TOPOLOGY_LEVELS
from fm_constructs.planning import aws_limits as lim
from fm_constructs.planning.kubernetes_versions import DEFAULT_KUBERNETES_VERSION
from fm_constructs.planning.pod_networking import PodNetworking, vpc_cni_environment
from tests.kubernetes_schemas import validate_object
from tests.stacks.profiles import synthesize

PROFILE = "pretraining-1024"
pytestmark = pytest.mark.xdist_group(PROFILE)


def _resources(template: dict[str, Any], kind: str) -> Iterator[tuple[str, dict[str, Any]]]:
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == kind:
            yield logical_id, resource


def _template(suffix: str) -> dict[str, Any]:
    return synthesize(PROFILE).templates[f"fm-xl-{suffix}"]


def test_platform_adds_the_pod_cidr_and_a_pod_subnet_in_the_gpu_zone() -> None:
    platform = _template("platform")
    ((block_id, block),) = _resources(platform, "AWS::EC2::VPCCidrBlock")
    assert block["Properties"]["CidrBlock"] == "100.64.0.0/16"
    pod_subnets = [
        (lid, r)
        for lid, r in _resources(platform, "AWS::EC2::Subnet")
        if r["Properties"]["CidrBlock"] == "100.64.0.0/16"
    ]
    ((subnet_id, subnet),) = pod_subnets
    assert subnet["Properties"]["AvailabilityZone"] == "us-east-1a"
    assert block_id in subnet["DependsOn"]
    associations = [
        r["Properties"]
        for _, r in _resources(platform, "AWS::EC2::SubnetRouteTableAssociation")
        if r["Properties"]["SubnetId"] == {"Ref": subnet_id}
    ]
    assert len(associations) == 1
    ingress = [
        r["Properties"]
        for _, r in _resources(platform, "AWS::EC2::SecurityGroup")
        for r in [{"Properties": rule} for rule in r["Properties"].get("SecurityGroupIngress", [])]
    ]
    assert any(rule.get("CidrIp") == "100.64.0.0/16" for rule in ingress)


def test_cluster_switches_on_custom_networking_before_any_node_joins() -> None:
    cluster = _template("cluster-addons")
    (cni,) = [
        r["Properties"]
        for _, r in _resources(cluster, "AWS::EKS::Addon")
        if r["Properties"]["AddonName"] == "vpc-cni"
    ]
    assert json.loads(cni["ConfigurationValues"]) == {
        "env": vpc_cni_environment(PodNetworking.CUSTOM_NETWORKING),
        "enableNetworkPolicy": "true",
    }
    ((manifest_id, manifest),) = [
        (lid, r)
        for lid, r in _resources(cluster, "Custom::AWSCDK-EKS-KubernetesResource")
        if "EniConfigs" in lid
    ]
    # The subnets are deploy-time values: put a subnet id in their place, then check the CRD.
    parts = manifest["Properties"]["Manifest"]["Fn::Join"][1]
    text = "".join(p if isinstance(p, str) else "subnet-0123456789abcdef0" for p in parts)
    objects = json.loads(text)
    assert [o["metadata"]["name"] for o in objects] == ["us-east-1a", "us-east-1b"]
    for obj in objects:
        assert validate_object(obj, DEFAULT_KUBERNETES_VERSION) == "vpc-cni-crd"
    ((_, system_nodes),) = [
        (lid, r)
        for lid, r in _resources(cluster, "AWS::EKS::Nodegroup")
        if "SystemNodeGroup" in lid
    ]
    assert manifest_id in system_nodes["DependsOn"]


def test_the_pool_is_split_within_the_node_group_quota_behind_one_flavor() -> None:
    compute = _template("pretraining-compute")
    groups = [r["Properties"] for _, r in _resources(compute, "AWS::EKS::Nodegroup")]
    assert len(groups) == 3
    sizes = [g["ScalingConfig"]["DesiredSize"] for g in groups]
    assert sum(sizes) == 1024
    assert max(sizes) <= lim.NODES_PER_MANAGED_NODE_GROUP.value
    flavors = {g["Labels"][names.NODE_POOL_LABEL] for g in groups}
    assert flavors == {names.resource_flavor_name("pretraining", "gpu")}
    for _, template in _resources(compute, "AWS::EC2::LaunchTemplate"):
        user_data = template["Properties"]["LaunchTemplateData"]["UserData"]["Fn::Base64"]
        assert "kubelet:\n    config:\n      maxPods: 16\n" in user_data


def test_reserved_groups_terminate_first_in_one_subnet() -> None:
    """Done when of the frontier-scale work: every ODCR node group updates with EKS's MINIMAL
    strategy (a fully used reservation has no spare instance) at 20 % a group, every EFA node
    group of the workload shares one subnet."""
    compute = _template("pretraining-compute")
    groups = [r["Properties"] for _, r in _resources(compute, "AWS::EKS::Nodegroup")]
    for group in groups:
        assert group["UpdateConfig"] == {
            "MaxUnavailablePercentage": 20,
            "UpdateStrategy": "MINIMAL",
        }
    assert len({json.dumps(g["Subnets"], sort_keys=True) for g in groups}) == 1


def test_every_template_stays_within_cloudformation_limits() -> None:
    result = synthesize(PROFILE)
    for name, template in result.templates.items():
        assert len(template["Resources"]) < lim.CFN_RESOURCES_PER_STACK.value, name
        size = result.template_paths[name].stat().st_size
        assert size < lim.CFN_TEMPLATE_BYTES.value, name


def test_jobs_are_placed_by_the_ec2_network_topology() -> None:
    cluster = _template("cluster-addons")
    objects = [
        obj
        for lid, r in _resources(cluster, "Custom::AWSCDK-EKS-KubernetesResource")
        if isinstance(r["Properties"]["Manifest"], str)
        for obj in json.loads(r["Properties"]["Manifest"])
    ]
    (topology,) = [o for o in objects if o["kind"] == "Topology"]
    assert [lvl["nodeLabel"] for lvl in topology["spec"]["levels"]] == list(TOPOLOGY_LEVELS)
    (flavor,) = [o for o in objects if o["kind"] == "ResourceFlavor"]
    assert flavor["spec"]["topologyName"] == topology["metadata"]["name"]
    for obj in (topology, flavor):
        validate_object(obj, DEFAULT_KUBERNETES_VERSION)
