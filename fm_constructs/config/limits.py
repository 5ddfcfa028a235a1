"""How much of every AWS limit of :mod:`fm_constructs.planning.aws_limits` a profile's largest
deployment takes.

``fmc plan`` prints every usage at 80% or more of its limit, and the profile loader refuses a
profile that exceeds a fixed (not adjustable) limit; both read :func:`limit_usages`. This module
maps the profile to its :class:`~fm_constructs.planning.deployment_plan.LimitRequest`
(:func:`limit_request`); :mod:`fm_constructs.planning.deployment_plan` does the counting.
Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from fm_constructs.config.model import CapacityKind, Profile, WorkloadConfig
from fm_constructs.config.subnet_demand import file_system_request, subnet_plan
from fm_constructs.planning import aws_limits as lim
from fm_constructs.planning import deployment_plan as planning
from fm_constructs.planning.deployment_plan import SYSTEM_NODE_GROUPS as SYSTEM_NODE_GROUPS
from fm_constructs.planning.deployment_plan import LimitRequest, WorkloadLimits
from fm_constructs.planning.deployment_plan import (
    network_interfaces_per_node as network_interfaces_per_node,
)
from fm_constructs.planning.subnet_demand import SubnetDemand
from fm_constructs.planning.vpc_layout import PRIVATE_CLUSTER_ENDPOINT_NAMES


def _workload_limits(workload: WorkloadConfig) -> WorkloadLimits:
    capacity = workload.capacity
    fixed = workload.largest_size == workload.instance_count
    return WorkloadLimits(
        workload=workload.name,
        eks_cluster=workload.eks_cluster,
        placement_groups=(
            capacity.kind in (CapacityKind.ON_DEMAND, CapacityKind.ODCR)
            and capacity.placement_group_arn is None
            and fixed
        ),
        capacity_block=capacity.kind is CapacityKind.CAPACITY_BLOCK,
        reserved_instances=capacity.reserved_instance_count,
    )


def limit_request(profile: Profile) -> LimitRequest:
    """The limit counting input of ``profile``: every enabled workload's capacity, the
    interface endpoints of every zone and the workloads' own file systems."""
    platform = profile.platform
    endpoints = (
        len(PRIVATE_CLUSTER_ENDPOINT_NAMES) * len(platform.availability_zones)
        if platform.interface_endpoints
        else 0
    )
    file_systems = (file_system_request(w) for w in profile.enabled_workloads)
    return LimitRequest(
        workloads=tuple(_workload_limits(w) for w in profile.enabled_workloads),
        endpoint_interfaces=endpoints,
        file_systems=tuple(fs for fs in file_systems if fs is not None),
    )


def limit_usages(profile: Profile, *, demand: SubnetDemand | None = None) -> list[lim.LimitUsage]:
    """Every limit the largest deployment of ``profile`` (planned as ``demand``) counts
    against, with its use."""
    request = limit_request(profile)
    return planning.limit_usages(request, demand or subnet_plan(profile))


def reached_limits(profile: Profile, *, demand: SubnetDemand | None = None) -> list[lim.LimitUsage]:
    """The usages at or above :data:`~fm_constructs.planning.aws_limits.WARN_AT` of their
    limit, largest share first."""
    usages = [u for u in limit_usages(profile, demand=demand) if u.reached]
    return sorted(usages, key=lambda u: -u.share)
