"""The largest deployment of a profile planned once: its subnets and the AWS limits it uses.

``config/`` maps a profile to one :class:`DeploymentRequest` (the subnet request of
:mod:`fm_constructs.planning.subnet_demand` and the :class:`LimitRequest` below), and
:func:`plan_deployment` does the arithmetic: the subnet plan, then every limit of
:mod:`fm_constructs.planning.aws_limits` counted on it. The profile loader, the deployment and
``fmc plan`` read the same :class:`DeploymentPlan`. Each count follows what the stacks build:
node groups split at the EKS quota, one placement group per node group that gets one, the pod
networking the IP budget chose. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from dataclasses import dataclass

from fm_constructs.planning import aws_limits as lim
from fm_constructs.planning.pod_networking import PodNetworking
from fm_constructs.planning.subnet_demand import (
    FileSystemRequest,
    NodeGroupDemand,
    SubnetDemand,
    SubnetRequest,
    file_system_capacity_gib,
    plan_subnets,
)

#: Node groups the platform's EKS cluster has besides the workloads' (the system nodes).
SYSTEM_NODE_GROUPS = 1


@dataclass(frozen=True)
class WorkloadLimits:
    """What the limits count of one workload's node groups (named ``<workload>`` and
    ``<workload>.rollout`` in the subnet plan).

    ``eks_cluster``: the EKS cluster it runs on (None: none). ``placement_groups``: each of its
    main node groups gets a cluster placement group of its own (fixed-size on-demand or ODCR
    capacity without a given placement group). ``capacity_block``: its main pool runs on a
    Capacity Block of ``reserved_instances`` (None: as many as the pool's nodes).
    """

    workload: str
    eks_cluster: str | None
    placement_groups: bool = False
    capacity_block: bool = False
    reserved_instances: int | None = None


@dataclass(frozen=True)
class LimitRequest:
    """The limit counting input: the workloads' node groups, the interface endpoints the
    private subnets hold and the file systems the deployment creates."""

    workloads: tuple[WorkloadLimits, ...]
    endpoint_interfaces: int = 0
    file_systems: tuple[FileSystemRequest, ...] = ()

    def of(self, group: NodeGroupDemand) -> WorkloadLimits:
        """The workload whose node group ``group`` is."""
        return next(w for w in self.workloads if w.workload == group.workload)


@dataclass(frozen=True)
class DeploymentRequest:
    """Everything the plan of a deployment reads: its subnets under ``networking`` and its
    limit counts."""

    subnets: SubnetRequest
    limits: LimitRequest
    networking: PodNetworking


@dataclass(frozen=True)
class DeploymentPlan:
    """The subnet plan of the largest deployment, every limit it counts against and, for
    each node group the IP budget moved to node subnets, the node subnet of each of its parts
    (:func:`moved_group_subnets`)."""

    subnets: SubnetDemand
    usages: tuple[lim.LimitUsage, ...]
    node_group_subnets: dict[str, tuple[int, ...]]


def moved_group_subnets(demand: SubnetDemand) -> dict[str, tuple[int, ...]]:
    """Node group -> the index of the node subnet of each of its parts, for the groups
    ``demand`` moved out of the private subnet."""
    moved = {p.group for subnet in demand.node_subnets for p in subnet.parts}
    return {
        g.name: tuple(demand.subnet_of(g.name, i) for i in range(len(g.part_sizes())))
        for g in demand.node_groups
        if g.name in moved
    }


def network_interfaces_per_node(group: NodeGroupDemand) -> int:
    """Network interfaces one node of ``group`` holds at its largest (the planning figure,
    :attr:`~fm_constructs.planning.subnet_demand.NodeGroupDemand.network_interfaces`)."""
    return group.network_interfaces


def _eks_groups(demand: SubnetDemand) -> list[NodeGroupDemand]:
    """The node groups on EKS managed node groups (what the EKS quotas count)."""
    return [g for g in demand.node_groups if g.managed]


def _node_group_usages(request: LimitRequest, demand: SubnetDemand) -> list[lim.LimitUsage]:
    out: list[lim.LimitUsage] = []
    # One EKS cluster per key the workloads name (the shared one, or their own).
    clusters = dict.fromkeys(w.eks_cluster for w in request.workloads if w.eks_cluster)
    groups_per_cluster: dict[str, int] = {key: SYSTEM_NODE_GROUPS for key in clusters}
    largest: tuple[int, str] = (0, "")
    for group in _eks_groups(demand):
        parts = lim.node_groups_for(group.nodes)
        per_part = -(-group.nodes // parts)
        if per_part > largest[0]:
            largest = (per_part, f"{group.name}: {group.nodes:,} nodes in {parts} node groups")
        cluster = request.of(group).eks_cluster
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


def _network_usages(request: LimitRequest, demand: SubnetDemand) -> list[lim.LimitUsage]:
    interfaces = sum(g.nodes * network_interfaces_per_node(g) for g in demand.node_groups)
    endpoints = request.endpoint_interfaces
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


def _capacity_usages(request: LimitRequest, demand: SubnetDemand) -> list[lim.LimitUsage]:
    out: list[lim.LimitUsage] = []
    placement_groups = 0
    for group in _eks_groups(demand):
        workload = request.of(group)
        if group.name.endswith(".rollout"):
            continue  # placement groups and Capacity Blocks are counted for main pools
        if workload.placement_groups:
            placement_groups += lim.node_groups_for(group.nodes)
        if workload.capacity_block:
            out.append(
                lim.LimitUsage(
                    lim.CAPACITY_BLOCK_INSTANCES,
                    workload.reserved_instances or group.nodes,
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


def _storage_usages(request: LimitRequest) -> list[lim.LimitUsage]:
    capacities = [(fs.workload, file_system_capacity_gib(fs)) for fs in request.file_systems]
    if not capacities:
        return []
    total = sum(c for _, c in capacities)
    what = ", ".join(f"{name} {c:,} GiB" for name, c in capacities)
    return [lim.LimitUsage(lim.FSX_LUSTRE_STORAGE_PER_ACCOUNT, total, what + " (account-wide)")]


def limit_usages(request: LimitRequest, demand: SubnetDemand) -> list[lim.LimitUsage]:
    """Every limit the deployment of ``request`` planned as ``demand`` counts against."""
    return [
        *_node_group_usages(request, demand),
        *_network_usages(request, demand),
        *_capacity_usages(request, demand),
        *_storage_usages(request),
    ]


def plan_deployment(request: DeploymentRequest) -> DeploymentPlan:
    """The subnet plan of ``request``, the limit usages counted on it and the node subnets
    of the groups it moved."""
    subnets = plan_subnets(request.subnets, request.networking)
    usages = tuple(limit_usages(request.limits, subnets))
    return DeploymentPlan(subnets, usages, moved_group_subnets(subnets))
