"""How much of every AWS limit of :mod:`fm_constructs.planning.aws_limits` a profile's largest
deployment takes.

``fmc plan`` prints every usage at 80% or more of its limit, and the profile loader refuses a
profile that exceeds a fixed (not adjustable) limit; both read :func:`limit_usages`. Each count
follows what the stacks build: node groups split at the EKS quota, one placement group per node
group that gets one, the pod networking the IP budget chose. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from fm_constructs.config.model import CapacityKind, Orchestrator, Profile, WorkloadConfig
from fm_constructs.config.subnet_demand import NodeGroupDemand, fsx_capacity_gib, subnet_plan
from fm_constructs.planning import aws_limits as lim
from fm_constructs.planning.subnet_demand import SubnetDemand
from fm_constructs.planning.vpc_layout import PRIVATE_CLUSTER_ENDPOINT_NAMES
from fm_constructs.rules import scale as scale_rules
from fm_constructs.rules.findings import Finding

#: Node groups the platform's EKS cluster has besides the workloads' (the system nodes).
SYSTEM_NODE_GROUPS = 1


def _workload_of(profile: Profile, group: NodeGroupDemand) -> WorkloadConfig:
    return profile.workloads_by_name[group.name.split(".", 1)[0]]


def network_interfaces_per_node(group: NodeGroupDemand) -> int:
    """Network interfaces one node of ``group`` holds at its largest (the planning figure,
    :attr:`~fm_constructs.planning.subnet_demand.NodeGroupDemand.network_interfaces`)."""
    return group.network_interfaces


def _eks_groups(profile: Profile, demand: SubnetDemand) -> list[NodeGroupDemand]:
    return [
        g for g in demand.node_groups if _workload_of(profile, g).orchestrator is Orchestrator.EKS
    ]


def _node_group_usages(profile: Profile, demand: SubnetDemand) -> list[lim.LimitUsage]:
    out: list[lim.LimitUsage] = []
    # One EKS cluster per key the workloads name (the shared one, or their own).
    clusters = dict.fromkeys(w.eks_cluster for w in profile.enabled_workloads if w.eks_cluster)
    groups_per_cluster: dict[str, int] = {key: SYSTEM_NODE_GROUPS for key in clusters}
    largest: tuple[int, str] = (0, "")
    for group in _eks_groups(profile, demand):
        parts = lim.node_groups_for(group.nodes)
        per_part = -(-group.nodes // parts)
        if per_part > largest[0]:
            largest = (per_part, f"{group.name}: {group.nodes:,} nodes in {parts} node groups")
        cluster = _workload_of(profile, group).eks_cluster
        if cluster is not None:
            groups_per_cluster[cluster] = groups_per_cluster.get(cluster, 0) + parts
    if largest[0]:
        out.append(lim.LimitUsage(lim.NODES_PER_MANAGED_NODE_GROUP, largest[0], largest[1]))
    for cluster, count in groups_per_cluster.items():
        out.append(
            lim.LimitUsage(
                lim.MANAGED_NODE_GROUPS_PER_CLUSTER,
                count,
                f"cluster {cluster!r}: system nodes and every workload node group",
            )
        )
    return out


def _network_usages(profile: Profile, demand: SubnetDemand) -> list[lim.LimitUsage]:
    interfaces = sum(g.nodes * network_interfaces_per_node(g) for g in demand.node_groups)
    endpoints = (
        len(PRIVATE_CLUSTER_ENDPOINT_NAMES) * len(profile.platform.availability_zones)
        if profile.platform.interface_endpoints
        else 0
    )
    heaviest = max(demand.node_groups, key=lambda g: network_interfaces_per_node(g), default=None)
    what = "accelerated nodes at their largest, interface endpoints"
    if heaviest is not None:
        what = (
            f"{heaviest.name} {network_interfaces_per_node(heaviest)} per node; every node group "
            f"at its largest, {endpoints} endpoint interfaces"
        )
    names = ["platform.vpc_cidr"]
    if demand.pod_subnet is not None:
        names.append("platform.pod_cidr")
    names += [f"node subnet {subnet.cidr}" for subnet in demand.node_subnets]
    return [
        lim.LimitUsage(lim.NETWORK_INTERFACES_PER_REGION, interfaces + endpoints, what),
        lim.LimitUsage(lim.IPV4_CIDR_BLOCKS_PER_VPC, len(names), ", ".join(names)),
    ]


def _capacity_usages(profile: Profile, demand: SubnetDemand) -> list[lim.LimitUsage]:
    out: list[lim.LimitUsage] = []
    placement_groups = 0
    for group in _eks_groups(profile, demand):
        workload = _workload_of(profile, group)
        capacity = workload.capacity
        fixed = workload.largest_size == workload.instance_count
        if (
            capacity.kind in (CapacityKind.ON_DEMAND, CapacityKind.ODCR)
            and capacity.placement_group_arn is None
            and fixed
            and not group.name.endswith(".rollout")
        ):
            placement_groups += lim.node_groups_for(group.nodes)
        if capacity.kind is CapacityKind.CAPACITY_BLOCK and not group.name.endswith(".rollout"):
            out.append(
                lim.LimitUsage(
                    lim.CAPACITY_BLOCK_INSTANCES,
                    capacity.reserved_instance_count or group.nodes,
                    f"{group.name}: one block for the pool",
                )
            )
    if placement_groups:
        out.append(
            lim.LimitUsage(
                lim.PLACEMENT_GROUPS_PER_REGION,
                placement_groups,
                "one cluster placement group per fixed-size node group (account-wide)",
            )
        )
    return out


def _storage_usages(profile: Profile) -> list[lim.LimitUsage]:
    capacities = [
        (w.name, fsx_capacity_gib(w))
        for w in profile.enabled_workloads
        if fsx_capacity_gib(w) is not None
    ]
    if not capacities:
        return []
    total = sum(c or 0 for _, c in capacities)
    what = ", ".join(f"{name} {c:,} GiB" for name, c in capacities)
    return [lim.LimitUsage(lim.FSX_LUSTRE_STORAGE_PER_ACCOUNT, total, what + " (account-wide)")]


def limit_usages(profile: Profile, *, demand: SubnetDemand | None = None) -> list[lim.LimitUsage]:
    """Every limit the largest deployment of ``profile`` counts against, with its use."""
    demand = demand or subnet_plan(profile)
    return [
        *_node_group_usages(profile, demand),
        *_network_usages(profile, demand),
        *_capacity_usages(profile, demand),
        *_storage_usages(profile),
    ]


def reached_limits(profile: Profile, *, demand: SubnetDemand | None = None) -> list[lim.LimitUsage]:
    """The usages at or above :data:`~fm_constructs.planning.aws_limits.WARN_AT` of their
    limit, largest share first."""
    usages = [u for u in limit_usages(profile, demand=demand) if u.reached]
    return sorted(usages, key=lambda u: -u.share)


def fixed_limit_problems(profile: Profile) -> list[Finding]:
    """A profile error for every fixed limit the deployment would exceed
    (:func:`fm_constructs.rules.scale.fixed_limits` on the profile's limit usages)."""
    return scale_rules.fixed_limits(limit_usages(profile))
