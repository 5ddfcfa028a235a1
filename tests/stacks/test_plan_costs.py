"""fmc plan's platform cost lines count what the stacks really build: each count is checked
against the synthesized templates of every shipped profile (EKS control planes and their system
nodes, NAT gateways, interface endpoint zones, Prometheus and Grafana workspaces, FSx)."""

from __future__ import annotations

from typing import Any

import pytest

from fm_constructs.cli.costs import SYSTEM_INSTANCE_TYPE
from fm_constructs.cli.plan import build_plan
from fm_constructs.cli.pricing import load_prices
from tests.stacks.profiles import profile_params, synthesize


def _resources(profile: str) -> list[dict[str, Any]]:
    return [
        resource
        for template in synthesize(profile).templates.values()
        for resource in template["Resources"].values()
    ]


def _built(profile: str) -> dict[str, float]:
    resources = _resources(profile)

    def count(kind: str) -> int:
        return sum(1 for r in resources if r["Type"] == kind)

    system_nodes = sum(
        r["Properties"]["ScalingConfig"]["DesiredSize"]
        for r in resources
        if r["Type"] == "AWS::EKS::Nodegroup"
        and r["Properties"].get("InstanceTypes") == [SYSTEM_INSTANCE_TYPE]
    )
    endpoint_zones = sum(
        len(r["Properties"]["SubnetIds"])
        for r in resources
        if r["Type"] == "AWS::EC2::VPCEndpoint"
        and r["Properties"].get("VpcEndpointType") == "Interface"
    )
    return {
        "EKS control planes": count("AWS::EKS::Cluster"),
        f"EKS system nodes ({SYSTEM_INSTANCE_TYPE})": system_nodes,
        "NAT gateways": count("AWS::EC2::NatGateway"),
        "interface VPC endpoints": endpoint_zones,
        "Managed Prometheus workspace": count("AWS::APS::Workspace"),
        "Managed Grafana workspace": count("AWS::Grafana::Workspace"),
        "FSx for Lustre": count("AWS::FSx::FileSystem"),
    }


def _planned(profile: str) -> dict[str, float]:
    result = synthesize(profile)
    plan = build_plan(result.profile, load_prices())
    planned = dict.fromkeys(_built(profile), 0.0)
    for line in plan.costs:
        for key in planned:
            if line.item.startswith(key) or (
                key == "FSx for Lustre" and "FSx for Lustre" in line.item
            ):
                planned[key] += (
                    1 if key in {"FSx for Lustre", "Managed Grafana workspace"} else line.quantity
                )
    return planned


@pytest.mark.parametrize("profile", profile_params())
def test_plan_counts_what_the_templates_build(profile: str) -> None:
    # A failure here means the stacks changed what they build (say, one shared EKS cluster):
    # update the counts in fm_constructs/cli/costs.py to match.
    assert _planned(profile) == _built(profile)


@pytest.mark.parametrize("profile", profile_params())
def test_plan_sizes_each_file_system_as_the_stacks_build_it(profile: str) -> None:
    """The FSx capacity and per-unit throughput ``fmc plan`` prints are the ones the workload
    stacks synthesize for the same profile (read from the shared synthesis, so drift in how
    the stacks map the profile to LustreFileSystem shows here)."""
    result = synthesize(profile)
    planned = sorted(
        (w.storage.storage_capacity_gib, w.storage.throughput_mb_s_per_tib)
        for w in build_plan(result.profile, load_prices()).workloads
        if w.storage is not None
    )
    built = sorted(
        (
            r["Properties"]["StorageCapacity"],
            r["Properties"]["LustreConfiguration"]["PerUnitStorageThroughput"],
        )
        for r in _resources(profile)
        if r["Type"] == "AWS::FSx::FileSystem"
    )
    assert built == planned
    if profile == "default":
        assert built == [(4800, 250), (9600, 500)]
