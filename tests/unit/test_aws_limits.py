"""AWS limits at scale: every limit has its source, usages are counted as the stacks build."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from fm_constructs.config import CapacityKind, load_profile
from fm_constructs.config.limits import (
    limit_usages,
    network_interfaces_per_node,
    reached_limits,
)
from fm_constructs.config.model import Profile
from fm_constructs.config.subnet_demand import subnet_demand
from fm_constructs.planning import aws_limits as lim
from fm_constructs.rules import scale as scale_rules

ROOT = Path(__file__).resolve().parents[2]


def _profile(name: str) -> Profile:
    return load_profile(ROOT / "config" / f"{name}.toml")


def _usage(usages: list[lim.LimitUsage], limit: lim.AwsLimit) -> lim.LimitUsage:
    (usage,) = [u for u in usages if u.limit is limit]
    return usage


def test_every_limit_names_its_source_and_says_whether_it_is_adjustable() -> None:
    assert len(lim.LIMITS) >= 10
    for limit in lim.LIMITS.values():
        assert limit.source.startswith("https://docs.aws.amazon.com/"), limit.key
        assert limit.value > 0
        # Every adjustable quota names its Service Quotas code; fixed limits have none.
        assert bool(limit.quota_code) == limit.adjustable, limit.key
        if limit.quota_code:
            assert re.fullmatch(r"L-[0-9A-F]{8}", limit.quota_code), limit.key


def test_storage_and_metrics_quotas_carry_their_service_quotas_codes() -> None:
    # Service Quotas: fsx "Lustre Persistent_2 storage capacity", aps "Active series per
    # workspace" and "Ingestion rate per workspace".
    assert lim.FSX_LUSTRE_STORAGE_PER_ACCOUNT.quota_code == "L-8F1B9C74"
    assert lim.FSX_LUSTRE_STORAGE_PER_ACCOUNT.name == "Lustre Persistent_2 storage capacity"
    assert lim.AMP_ACTIVE_SERIES_PER_WORKSPACE.quota_code == "L-5A151448"
    assert lim.AMP_INGESTION_RATE_PER_WORKSPACE.quota_code == "L-F4BCE0BA"


@pytest.mark.parametrize(
    ("desired", "parts", "sizes"),
    [
        (1024, 3, [342, 341, 341]),
        (900, 2, [450, 450]),
        (451, 2, [226, 225]),
    ],
)
def test_pools_split_evenly_within_the_node_group_quota(
    desired: int, parts: int, sizes: list[int]
) -> None:
    assert lim.node_groups_for(desired) == parts
    split = lim.split_sizes(desired, desired, desired, parts)
    assert [d for d, _, _ in split] == sizes
    assert sum(sizes) == desired
    assert max(sizes) <= lim.NODES_PER_MANAGED_NODE_GROUP.value
    assert lim.node_groups_for(450) == 1
    assert lim.node_groups_for(0) == 1


def test_usage_line_and_threshold() -> None:
    usage = lim.LimitUsage(lim.NODES_PER_MANAGED_NODE_GROUP, 360, "pool")
    assert usage.reached and not usage.exceeded
    assert usage.line().startswith(
        "Nodes per managed node group (Amazon EKS, L-BD136A63, adjustable): 360 of 450"
    )
    assert not lim.LimitUsage(lim.NODES_PER_MANAGED_NODE_GROUP, 359, "pool").reached


def test_the_1024_node_profile_counts_its_limits() -> None:
    profile = _profile("pretraining-1024")
    usages = limit_usages(profile)
    nodes = _usage(usages, lim.NODES_PER_MANAGED_NODE_GROUP)
    assert nodes.used == 342  # 1,024 nodes in 3 node groups
    groups = _usage(usages, lim.MANAGED_NODE_GROUPS_PER_CLUSTER)
    assert groups.used == 1 + 3  # system nodes and the three GPU groups
    # p5en.48xlarge: primary + 16 efa-only + 1 pod ENI; 12 endpoints in each of 2 zones
    interfaces = _usage(usages, lim.NETWORK_INTERFACES_PER_REGION)
    assert interfaces.used == 1024 * 18 + 24
    assert interfaces.exceeded and interfaces.limit.adjustable
    assert _usage(usages, lim.IPV4_CIDR_BLOCKS_PER_VPC).used == 2
    reached = {u.limit.key for u in reached_limits(profile)}
    assert lim.NETWORK_INTERFACES_PER_REGION.key in reached
    assert lim.FSX_LUSTRE_STORAGE_PER_ACCOUNT.key in reached
    assert (
        scale_rules.fixed_limits(limit_usages(profile)) == []
    )  # adjustable ones need a quota increase only


def test_network_interfaces_of_a_node_in_the_node_subnet() -> None:
    demand = subnet_demand(_profile("default"))
    (group,) = [g for g in demand.node_groups if g.name == "pretraining"]
    # p5.48xlarge efa-only: the primary and 32 efa-only interfaces, no room for a CNI ENI
    assert network_interfaces_per_node(group) == 33


def test_a_capacity_block_larger_than_one_block_is_a_profile_problem() -> None:
    profile = _profile("pretraining-capacity-block")
    capacity = dataclasses.replace(profile.pretraining.capacity, reserved_instance_count=128)
    big = dataclasses.replace(
        profile,
        pretraining=dataclasses.replace(profile.pretraining, instance_count=128, capacity=capacity),
    )
    assert big.pretraining.capacity.kind is CapacityKind.CAPACITY_BLOCK
    (problem,) = scale_rules.fixed_limits(limit_usages(big))
    assert (problem.code, problem.key, problem.value) == (
        "FM605",
        "ec2.capacity_block_instances",
        128,
    )
    assert problem.line().startswith(
        "ec2.capacity_block_instances: the deployment needs 128 instances"
    )
    assert scale_rules.fixed_limits(limit_usages(profile)) == []


def test_shipped_profiles_stay_inside_every_fixed_limit() -> None:
    for path in sorted((ROOT / "config").glob("*.toml")):
        assert scale_rules.fixed_limits(limit_usages(load_profile(path))) == [], path.name
