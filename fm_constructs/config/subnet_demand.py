"""Every address the largest possible deployment of a profile takes from the GPU zone's
private subnet: node groups at their maximum size with the VPC CNI's arithmetic, the interface
endpoints, the EKS control plane and system nodes, FSx, load balancers and scrapers.

``fmc plan`` prints it and synthesis refuses a profile whose demand does not fit, so both read
this one function. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fm_constructs.catalog import get_instance_type
from fm_constructs.config.model import LoadBalancer, Orchestrator, Profile, WorkloadConfig
from fm_constructs.config.sizing import fsx_sizing_request
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.fsx_sizing import DEFAULT_STORAGE_CAPACITY_GIB, size_fsx_lustre
from fm_constructs.planning.ip_budget import (
    AWS_RESERVED_ADDRESSES_PER_SUBNET,
    NodeAddressing,
    node_addressing,
    smallest_prefix_for,
)
from fm_constructs.planning.vpc_layout import PRIVATE_CLUSTER_ENDPOINT_NAMES, subnet_prefixes

#: EKS control-plane ENIs in the cluster's subnets: up to 4, and 4 new ones beside them during
#: a version upgrade (EKS User Guide, "VPC and subnet requirements"; awsdocs/amazon-eks-user-
#: guide#688). All of them may land in the GPU zone's subnet.
EKS_CONTROL_PLANE_ADDRESSES = 8
#: The EKS system node group: at most 2 x 2 m7i.xlarge (GpuEksCluster's defaults), each able
#: to hold 4 ENIs x 15 IPv4 addresses with the VPC CNI (EC2 DescribeInstanceTypes).
EKS_SYSTEM_NODE_ADDRESSES = 4 * 4 * 15
#: FSx for Lustre: one network interface per file server (the FSx API: "an FSx for Lustre file
#: system can have more than one"); estimated as one per 1.2 TiB storage unit plus two for the
#: metadata and management servers (an allowance, not a figure AWS publishes).
FSX_UNIT_GIB = 1200
FSX_FIXED_ADDRESSES = 2
#: One ENI per subnet for a network load balancer, and for a managed Prometheus scraper.
NLB_ADDRESSES = 1
SCRAPER_ADDRESSES = 1
HYPERPOD = (Orchestrator.HYPERPOD_EKS, Orchestrator.HYPERPOD_SLURM)


@dataclass(frozen=True)
class NodeGroupDemand:
    """One node group at its largest size."""

    name: str
    orchestrator: Orchestrator
    layout: EfaLayout | None  # None: a type without EFA
    nodes: int
    addressing: NodeAddressing

    @property
    def addresses(self) -> int:
        return self.nodes * self.addressing.per_node


@dataclass(frozen=True)
class SubnetDemand:
    """Everything the GPU zone's private subnet must hold."""

    availability_zone: str
    prefix: int
    node_groups: tuple[NodeGroupDemand, ...]
    #: (what, addresses) for everything that is not a GPU node.
    fixed: tuple[tuple[str, int], ...]

    @property
    def addresses(self) -> int:
        return int(2 ** (32 - self.prefix))

    @property
    def usable(self) -> int:
        return self.addresses - AWS_RESERVED_ADDRESSES_PER_SUBNET

    @property
    def required(self) -> int:
        return sum(g.addresses for g in self.node_groups) + sum(n for _, n in self.fixed)

    @property
    def free(self) -> int:
        return self.usable - self.required

    @property
    def fits(self) -> bool:
        return self.free >= 0


def requested_layout(
    workload: WorkloadConfig, instance_type: str | None = None
) -> EfaLayout | None:
    """The interface layout a workload's nodes really get.

    EKS node groups use the profile's ``efa_layout`` in their launch template. HyperPod
    instance groups request ``NetworkInterface.InterfaceType`` from it too: ``efa-only`` where
    every EFA card of the type accepts it, else ``efa`` (one address per EFA interface),
    counted here as the legacy layout.
    """
    spec = get_instance_type(instance_type or workload.instance_type)
    if not spec.efa_supported:
        return None  # a type without EFA (inference within one node): no EFA interfaces
    layout = EfaLayout(workload.efa_layout)
    if workload.orchestrator in HYPERPOD and not spec.efa_only_supported:
        return EfaLayout.LEGACY
    return layout


def largest_node_count(workload: WorkloadConfig) -> int:
    """The most nodes the workload's group can reach (autoscaling maximum included)."""
    return max(workload.instance_count, workload.max_instance_count or 0)


def _node_group(
    name: str, workload: WorkloadConfig, instance_type: str, nodes: int, pods: int | None
) -> NodeGroupDemand:
    layout = requested_layout(workload, instance_type)
    addressing = node_addressing(
        get_instance_type(instance_type),
        layout,
        vpc_cni=workload.orchestrator is not Orchestrator.HYPERPOD_SLURM,
        pods_per_node=pods,
    )
    return NodeGroupDemand(name, workload.orchestrator, layout, nodes, addressing)


def fsx_capacity_gib(workload: WorkloadConfig) -> int | None:
    """Capacity of the workload's own file system (None: it has none or reuses one)."""
    storage = workload.storage
    if not storage.enabled or storage.reuse_pretraining:
        return None
    request = fsx_sizing_request(storage)
    if request is not None:
        return size_fsx_lustre(request).storage_capacity_gib
    return storage.storage_capacity_gib or DEFAULT_STORAGE_CAPACITY_GIB


def fsx_addresses(capacity_gib: int) -> int:
    return FSX_FIXED_ADDRESSES + math.ceil(capacity_gib / FSX_UNIT_GIB)


def subnet_demand(profile: Profile, *, pods_per_node: int | None = None) -> SubnetDemand:
    """The addresses the largest deployment of ``profile`` needs in the GPU zone's subnet.

    ``pods_per_node``: pods per Kubernetes node that need an address, when the user knows it
    (default: as many as kubelet admits and the VPC CNI can address).
    """
    groups: list[NodeGroupDemand] = []
    fixed: list[tuple[str, int]] = []
    platform = profile.platform
    if platform.interface_endpoints and profile.enabled_workloads:
        fixed.append(("interface endpoints", len(PRIVATE_CLUSTER_ENDPOINT_NAMES)))
    for w in profile.enabled_workloads:
        groups.append(_node_group(w.name, w, w.instance_type, largest_node_count(w), pods_per_node))
        if w.rollout.enabled:
            groups.append(
                _node_group(
                    f"{w.name}.rollout",
                    w,
                    w.rollout.instance_type,
                    w.rollout.instance_count,
                    pods_per_node,
                )
            )
        if w.orchestrator in (Orchestrator.EKS, Orchestrator.HYPERPOD_EKS):
            fixed.append((f"{w.name}: EKS control plane", EKS_CONTROL_PLANE_ADDRESSES))
            fixed.append((f"{w.name}: EKS system nodes", EKS_SYSTEM_NODE_ADDRESSES))
            if platform.observability:
                fixed.append((f"{w.name}: Prometheus scraper", SCRAPER_ADDRESSES))
        capacity = fsx_capacity_gib(w)
        if capacity is not None:
            fixed.append((f"{w.name}: FSx for Lustre ({capacity:,} GiB)", fsx_addresses(capacity)))
        if w.name == "inference" and w.load_balancer is not LoadBalancer.NONE:
            fixed.append(("inference: network load balancer", NLB_ADDRESSES))
    prefix, _ = subnet_prefixes(platform.vpc_cidr)
    return SubnetDemand(platform.availability_zone, prefix, tuple(groups), tuple(fixed))


def shortfall_message(demand: SubnetDemand) -> str:
    """The numbers and the fixes when ``demand`` does not fit (for the profile's error)."""
    groups = ", ".join(
        f"{g.name} {g.nodes} x {g.addressing.per_node} = {g.addresses:,}"
        for g in demand.node_groups
    )
    fixed = ", ".join(f"{what} {n}" for what, n in demand.fixed)
    fixes = []
    needed = smallest_prefix_for(demand.required)
    vpc_prefix = needed - 2
    if vpc_prefix >= 16:
        fixes.append(
            f"give platform.vpc_cidr a /{vpc_prefix} or larger (private subnets are a quarter "
            f"of the VPC: a /{needed} holds {2 ** (32 - needed) - 5:,})"
        )
    if any(
        g.layout is EfaLayout.LEGACY and g.orchestrator is Orchestrator.EKS
        for g in demand.node_groups
    ):
        fixes.append("use efa_layout = 'efa-only' (one address per node for the interfaces)")
    if any(g.addressing.cni_enis for g in demand.node_groups):
        fixes.append(
            "give pods their own addresses from a secondary VPC CIDR (VPC CNI custom networking)"
        )
    fixes.append("or lower instance_count / max_instance_count")
    return (
        f"platform.vpc_cidr: the private subnet /{demand.prefix} in {demand.availability_zone} "
        f"must hold {demand.required:,} addresses at the largest size of every node group, but "
        f"has {demand.usable:,} usable ({demand.addresses:,} - "
        f"{AWS_RESERVED_ADDRESSES_PER_SUBNET} reserved by AWS); short by {-demand.free:,}. "
        f"Node groups (nodes x addresses per node, VPC CNI arithmetic): {groups}. Other: "
        f"{fixed or 'none'}. Fix: " + "; ".join(fixes)
    )
