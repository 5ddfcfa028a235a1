"""Every address the largest possible deployment of a profile takes from the GPU zone's
private subnet: node groups at their maximum size with the VPC CNI's arithmetic, the interface
endpoints, the EKS control plane and system nodes, FSx, load balancers and scrapers.

The profile loader refuses a profile whose demand does not fit (under ``platform.vpc_cidr``,
with the numbers and the fixes), and ``fmc plan`` prints it, so both read this one function.
Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass

from fm_constructs.catalog import InstanceSpec, get_instance_type
from fm_constructs.config.model import (
    SHARED_CLUSTER,
    InferenceConfig,
    LoadBalancer,
    Orchestrator,
    Profile,
    WorkloadConfig,
)
from fm_constructs.config.sizing import workload_fsx_sizing_request
from fm_constructs.domain.kinds import HYPERPOD
from fm_constructs.planning.aws_limits import node_groups_for, split_sizes
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.fsx_sizing import DEFAULT_STORAGE_CAPACITY_GIB, size_fsx_lustre
from fm_constructs.planning.ip_budget import (
    AWS_RESERVED_ADDRESSES_PER_SUBNET,
    NodeAddressing,
    node_addressing,
    smallest_prefix_for,
)
from fm_constructs.planning.pod_networking import (
    DEFAULT_ACCELERATED_MAX_PODS,
    PREFIX_ADDRESSES,
    PodNetworking,
    PodSubnetAddressing,
    node_subnet_prefix_addressing,
    pod_cidr_problems,
    pod_enis_with_custom_networking,
    pod_subnet_addresses_per_node,
    prefix_blocks,
)
from fm_constructs.planning.vpc_layout import (
    NODE_BLOCK_PREFIX,
    PRIVATE_CLUSTER_ENDPOINT_NAMES,
    node_cidr_blocks,
    subnet_prefixes,
)
from fm_constructs.rules import scale as scale_rules
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.scale import NODE_SUBNET_SHORT

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


@dataclass(frozen=True)
class NodeGroupDemand:
    """One node group at its largest size. ``pod_addressing``: what each node takes from the
    pod subnet under custom networking (None: pods use the node subnet, or no VPC CNI)."""

    name: str
    orchestrator: Orchestrator
    layout: EfaLayout | None  # None: a type without EFA
    nodes: int
    addressing: NodeAddressing
    pod_addressing: PodSubnetAddressing | None = None

    @property
    def addresses(self) -> int:
        return self.nodes * self.addressing.per_node

    #: /28 prefixes each node holds in its own subnet (prefix delegation there; else 0).
    prefixes: int = 0

    @property
    def pod_subnet_addresses(self) -> int:
        """What the group takes from the pod subnet, in whole /28s (x 16 addresses): a node's
        prefixes each need a free aligned /28, and each of its pod ENIs' own addresses may
        spoil one more (:attr:`PodSubnetAddressing.blocks`)."""
        if self.pod_addressing is None:
            return 0
        return self.nodes * self.pod_addressing.blocks * PREFIX_ADDRESSES

    @property
    def node_subnet_blocks(self) -> int:
        """Whole /28s one node takes from its own subnet under prefix delegation there: its
        prefixes, and one for each single address (its own, one per extra ENI); 0 without."""
        if not self.prefixes:
            return 0
        return self.prefixes + self.addressing.per_node - self.prefixes * PREFIX_ADDRESSES

    def part_sizes(self) -> tuple[int, ...]:
        """Nodes of each managed node group the pool is built from at its largest size: EKS
        allows 450 nodes per group, and the constructs split a pool the same way
        (:func:`~fm_constructs.planning.aws_limits.split_sizes`)."""
        parts = node_groups_for(self.nodes)
        return tuple(size[2] for size in split_sizes(self.nodes, self.nodes, self.nodes, parts))

    def worst_case_addresses(self, nodes: int) -> int:
        """What ``nodes`` of the group take from a subnet whatever addresses EC2 picks. With
        prefix delegation a prefix needs a free, aligned /28, and each single address of a
        node (its own, one per extra ENI) may fall in a /28 of its own (the fragmentation
        behind the VPC CNI's ``InsufficientCidrBlocks``), so a node takes at most
        ``prefixes + single addresses`` whole /28s. Without prefixes: the plain count."""
        if not self.prefixes:
            return nodes * self.addressing.per_node
        return nodes * self.node_subnet_blocks * PREFIX_ADDRESSES


@dataclass(frozen=True)
class NodeGroupPart:
    """Managed node group ``index`` (0: ``GpuNodes``, 1: ``GpuNodes2``, ...) of the pool of
    node-group demand ``group``, with ``nodes`` at its largest. ``addresses``: its plain count
    (what it would take in the private subnet); ``worst_case``: what it takes in a node subnet
    (:meth:`NodeGroupDemand.worst_case_addresses`)."""

    group: str
    index: int
    nodes: int
    addresses: int
    worst_case: int


@dataclass(frozen=True)
class NodeSubnetDemand:
    """A node subnet in the GPU zone spanning one secondary VPC CIDR block (a /16). It holds
    whole managed node groups and nothing else, so its count is exact: a managed node group
    launches every node in the subnets it is given, and each of these groups gets one."""

    cidr: str
    parts: tuple[NodeGroupPart, ...]
    prefix_delegation: bool

    @property
    def addresses(self) -> int:
        return int(2 ** (32 - NODE_BLOCK_PREFIX))

    @property
    def usable(self) -> int:
        if self.prefix_delegation:
            # Counted in /28s: the first and the last hold the addresses AWS reserves.
            return self.addresses - 2 * PREFIX_ADDRESSES
        return self.addresses - AWS_RESERVED_ADDRESSES_PER_SUBNET

    @property
    def required(self) -> int:
        return sum(p.worst_case for p in self.parts)

    @property
    def free(self) -> int:
        return self.usable - self.required

    @property
    def fits(self) -> bool:
        return self.free >= 0


@dataclass(frozen=True)
class PodSubnetDemand:
    """What the GPU zone's pod subnet (the whole secondary CIDR) must hold under custom
    networking, counted in whole /28 prefixes: ``usable`` is the /28s free to hold a prefix
    (x 16), ``required`` the /28s the node groups may take whatever addresses EC2 picks."""

    cidr: str
    prefix: int
    node_groups: tuple[NodeGroupDemand, ...]

    @property
    def addresses(self) -> int:
        return int(2 ** (32 - self.prefix))

    @property
    def usable(self) -> int:
        return prefix_blocks(self.prefix) * PREFIX_ADDRESSES

    @property
    def blocks(self) -> int:
        """/28s of the subnet that can hold a prefix."""
        return prefix_blocks(self.prefix)

    @property
    def required(self) -> int:
        return sum(g.pod_subnet_addresses for g in self.node_groups)

    @property
    def free(self) -> int:
        return self.usable - self.required

    @property
    def fits(self) -> bool:
        return self.free >= 0 and all(
            g.pod_addressing is None or g.pod_addressing.fits_node for g in self.node_groups
        )


@dataclass(frozen=True)
class SubnetDemand:
    """Everything the GPU zone's private subnet must hold (and, under custom networking, its
    pod subnet). ``networking`` is the profile's pod networking with ``auto`` resolved."""

    availability_zone: str
    prefix: int
    node_groups: tuple[NodeGroupDemand, ...]
    #: (what, addresses) for everything that is not a GPU node.
    fixed: tuple[tuple[str, int], ...]
    networking: PodNetworking = PodNetworking.NODE_SUBNET
    pod_subnet: PodSubnetDemand | None = None
    #: Profile problems of the pod networking itself (pod_cidr, unsupported combinations).
    networking_problems: tuple[Finding, ...] = ()
    #: Node subnets in secondary CIDR blocks, for the managed node groups that do not fit the
    #: private subnet (they leave its count).
    node_subnets: tuple[NodeSubnetDemand, ...] = ()

    @property
    def addresses(self) -> int:
        return int(2 ** (32 - self.prefix))

    @property
    def prefix_delegation(self) -> bool:
        """Pods take /28 prefixes in the node subnets: the private subnet is counted in whole
        /28s too (:func:`private_subnet_usable`, :func:`private_subnet_required`)."""
        return self.networking is PodNetworking.PREFIX_DELEGATION

    @property
    def usable(self) -> int:
        return private_subnet_usable(self.prefix, delegation=self.prefix_delegation)

    @property
    def moved(self) -> int:
        """What the node groups placed in node subnets would take in the private one."""
        return sum(
            p.worst_case if self.prefix_delegation else p.addresses
            for subnet in self.node_subnets
            for p in subnet.parts
        )

    @property
    def required(self) -> int:
        return (
            private_subnet_required(self.node_groups, self.fixed, delegation=self.prefix_delegation)
            - self.moved
        )

    @property
    def free(self) -> int:
        return self.usable - self.required

    #: EFA pools that cannot have one node subnet of their own (:func:`_node_subnets`).
    pool_problems: tuple[Finding, ...] = ()

    @property
    def fits(self) -> bool:
        return (
            self.free >= 0
            and not self.networking_problems
            and not self.pool_problems
            and (self.pod_subnet is None or self.pod_subnet.fits)
            and all(subnet.fits for subnet in self.node_subnets)
        )

    def subnet_of(self, group: str, index: int) -> int:
        """Where managed node group ``index`` of ``group`` goes: 0 for the GPU zone's private
        subnet, ``i`` for ``node_subnets[i - 1]``."""
        for number, subnet in enumerate(self.node_subnets, start=1):
            if any(p.group == group and p.index == index for p in subnet.parts):
                return number
        return 0

    @property
    def node_subnet_fits(self) -> bool:
        return self.free >= 0


def private_subnet_usable(prefix: int, *, delegation: bool) -> int:
    """Usable addresses of the GPU zone's private subnet: all but the five AWS reserves, or,
    with prefix delegation, its whole /28s that can hold a prefix (x 16)."""
    if delegation:
        return prefix_blocks(prefix) * PREFIX_ADDRESSES
    return int(2 ** (32 - prefix)) - AWS_RESERVED_ADDRESSES_PER_SUBNET


def private_subnet_required(
    groups: Sequence[NodeGroupDemand],
    fixed: Sequence[tuple[str, int]],
    *,
    delegation: bool,
) -> int:
    """What ``groups`` at their largest and the ``fixed`` addresses take from the private
    subnet: the plain count, or with prefix delegation whole /28s (each node's worst case,
    and a /28 for each single fixed address, which may spoil one)."""
    if not delegation:
        return sum(g.addresses for g in groups) + sum(n for _, n in fixed)
    return sum(g.worst_case_addresses(g.nodes) for g in groups) + sum(
        n * PREFIX_ADDRESSES for _, n in fixed
    )


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
    return workload.largest_size


def accelerated_max_pods(workload: WorkloadConfig) -> int:
    """kubelet maxPods of the workload's accelerated nodes under custom networking."""
    return workload.max_pods_per_node or DEFAULT_ACCELERATED_MAX_PODS


def _prefix_addressing(
    spec: InstanceSpec,
    layout: EfaLayout | None,
    *,
    cni_enis: int,
    pod_enis: int,
    max_pods: int,
    cni_addresses: int,
) -> NodeAddressing:
    """One node's addresses when pods get /28 prefixes (prefix delegation in the node subnet,
    or custom networking): the layout's interface addresses, ``cni_addresses`` more from the
    node subnet for the VPC CNI's ``cni_enis`` there, and pod capacity from ``pod_enis`` ENIs
    of ``IPv4 addresses per interface - 1`` prefixes each; kubelet admits ``max_pods``."""
    interfaces = node_addressing(spec, layout, vpc_cni=False)
    capacity = pod_enis * (spec.ipv4_addresses_per_interface - 1) * PREFIX_ADDRESSES
    return NodeAddressing(
        spec.name, interfaces.interface_ips, cni_enis, capacity, max_pods, cni_addresses
    )


def _node_group(
    name: str,
    workload: WorkloadConfig,
    instance_type: str,
    nodes: int,
    pods: int | None,
    networking: PodNetworking = PodNetworking.NODE_SUBNET,
) -> NodeGroupDemand:
    """One node group at ``nodes`` under ``networking`` (resolved, never ``auto``)."""
    layout = requested_layout(workload, instance_type)
    spec = get_instance_type(instance_type)
    vpc_cni = not workload.orchestrator.is_slurm
    if pods is None and workload.max_pods_per_node is not None:
        pods = workload.max_pods_per_node
    if not vpc_cni or networking is PodNetworking.NODE_SUBNET:
        addressing = node_addressing(spec, layout, vpc_cni=vpc_cni, pods_per_node=pods)
        return NodeGroupDemand(name, workload.orchestrator, layout, nodes, addressing)
    max_pods = pods if pods is not None else accelerated_max_pods(workload)
    if networking is PodNetworking.CUSTOM_NETWORKING:
        pod_addressing = pod_subnet_addresses_per_node(spec, layout, max_pods)
        addressing = _prefix_addressing(
            spec,
            layout,
            cni_enis=0,
            pod_enis=pod_addressing.pod_enis,
            max_pods=max_pods,
            cni_addresses=0,
        )
        return NodeGroupDemand(
            name, workload.orchestrator, layout, nodes, addressing, pod_addressing
        )
    prefixes = node_subnet_prefix_addressing(spec, layout, max_pods)
    addressing = _prefix_addressing(
        spec,
        layout,
        cni_enis=prefixes.enis,
        pod_enis=prefixes.enis,
        max_pods=max_pods,
        cni_addresses=prefixes.addresses,
    )
    return NodeGroupDemand(
        name, workload.orchestrator, layout, nodes, addressing, prefixes=prefixes.prefixes
    )


def fsx_capacity_gib(workload: WorkloadConfig) -> int | None:
    """Capacity of the workload's own file system (None: it has none or reuses one)."""
    storage = workload.storage
    if not storage.enabled or workload.reuses_pretraining_storage:
        return None
    request = workload_fsx_sizing_request(workload)
    if request is not None:
        return size_fsx_lustre(request).storage_capacity_gib
    return storage.storage_capacity_gib or DEFAULT_STORAGE_CAPACITY_GIB


def fsx_addresses(capacity_gib: int) -> int:
    return FSX_FIXED_ADDRESSES + math.ceil(capacity_gib / FSX_UNIT_GIB)


def subnet_demand(
    profile: Profile,
    *,
    pods_per_node: int | None = None,
    networking: PodNetworking | None = None,
) -> SubnetDemand:
    """The addresses the largest deployment of ``profile`` needs in the GPU zone's subnet
    (and its pod subnet under custom networking).

    ``pods_per_node``: pods per Kubernetes node that need an address, when the user knows it
    (default: the workload's ``max_pods_per_node``, else as many as kubelet admits and the VPC
    CNI can address). ``networking``: evaluate this pod networking instead of the profile's
    (``auto`` resolved: the node subnet when it fits, else custom networking).
    """
    chosen = networking or profile.platform.pod_networking
    if chosen is PodNetworking.AUTO:
        plain = _demand(profile, pods_per_node, PodNetworking.NODE_SUBNET)
        if plain.fits or not _uses_vpc_cni(profile):
            return plain
        prefixes = _demand(profile, pods_per_node, PodNetworking.PREFIX_DELEGATION)
        if prefixes.fits:
            return prefixes
        custom = _demand(profile, pods_per_node, PodNetworking.CUSTOM_NETWORKING)
        if custom.fits:
            return custom
        spilled = _demand(profile, pods_per_node, PodNetworking.PREFIX_DELEGATION, spill=True)
        if spilled.fits or (spilled.pool_problems and custom.networking_problems):
            return spilled
        # Custom networking that cannot work at all (no room for pod ENIs, HyperPod) is no
        # answer: the node subnet's own shortfall says more.
        return plain if custom.networking_problems else custom
    return _demand(
        profile, pods_per_node, chosen, spill=chosen is not PodNetworking.CUSTOM_NETWORKING
    )


def _uses_vpc_cni(profile: Profile) -> bool:
    return any(not w.orchestrator.is_slurm for w in profile.enabled_workloads)


def _networking_problems(profile: Profile, groups: list[NodeGroupDemand]) -> list[Finding]:
    """Why custom networking cannot work for ``profile`` (empty when it can)."""
    platform = profile.platform
    out = scale_rules.pod_cidr(platform.pod_cidr, platform.vpc_cidr, key="platform.pod_cidr")
    for w in profile.enabled_workloads:
        if w.orchestrator is Orchestrator.HYPERPOD_EKS:
            out.append(
                Finding(
                    scale_rules.CUSTOM_NETWORKING_HYPERPOD,
                    Severity.ERROR,
                    f"{w.name}.orchestrator",
                    w.orchestrator.value,
                    "custom networking is set up for EKS managed node groups only (SageMaker "
                    "HyperPod does not document ENIConfig support)",
                    f"run {w.name} on 'eks', or keep pods in the node subnet "
                    "(platform.pod_networking = 'node-subnet') with a larger vpc_cidr",
                )
            )
    for g in groups:
        if g.pod_addressing is not None and g.pod_addressing.pod_enis == 0:
            out.append(
                Finding(
                    scale_rules.CUSTOM_NETWORKING_CARD_FULL,
                    Severity.ERROR,
                    "platform.pod_networking",
                    PodNetworking.CUSTOM_NETWORKING.value,
                    "custom networking puts pods on ENIs of network card 0 beside the primary "
                    f"interface, but {g.pod_addressing.instance_type} ({g.name}) has no free "
                    "interface slot there (the primary ENA and the efa-only interface fill "
                    "it), so its nodes would never become ready",
                    "use an instance type with room on card 0 (p5en.48xlarge, "
                    "p6-b200.48xlarge, p4d.24xlarge), or keep pods in the node subnet and "
                    "split the nodes across fewer addresses (lower instance_count or "
                    "max_pods_per_node)",
                )
            )
        elif g.pod_addressing is not None and not g.pod_addressing.fits_node:
            out.append(
                Finding(
                    scale_rules.POD_SUBNET_SHORT,
                    Severity.ERROR,
                    f"{g.name}.max_pods_per_node",
                    g.pod_addressing.max_pods,
                    f"{g.pod_addressing.max_pods} pods need {g.pod_addressing.attached_enis} "
                    f"pod ENIs on {g.pod_addressing.instance_type}, which has room for "
                    f"{g.pod_addressing.pod_enis}",
                    "lower max_pods_per_node",
                )
            )
    return out


def _node_subnets(
    profile: Profile,
    groups: list[NodeGroupDemand],
    fixed: list[tuple[str, int]],
    networking: PodNetworking,
    pods_per_node: int | None,
) -> tuple[tuple[NodeSubnetDemand, ...], tuple[Finding, ...]]:
    """Node subnets for the EKS node pools that do not fit the GPU zone's private subnet, and
    the pools that cannot get one.

    A pool (all managed node groups of one workload's node group, the EFA traffic of one job)
    always stays in one subnet: the EC2 User Guide long said EFA OS-bypass traffic "is limited
    to a single subnet" and no AWS page documents it across subnets, so a pool is never split.
    The largest pools move first, until the rest fits, and are packed whole (first fit) into
    /16 subnets of secondary VPC CIDR blocks
    (:func:`~fm_constructs.planning.vpc_layout.node_cidr_blocks`). A pool larger than one
    node subnet is a finding naming the fix. Only for a VPC whose primary block is already a
    /16, the largest there is: a smaller one grows by a larger ``vpc_cidr`` first (the
    shortfall message says which). Empty when everything fits, or when moving every EKS pool
    would still not make the private subnet fit."""
    delegation = networking is PodNetworking.PREFIX_DELEGATION
    prefix, _ = subnet_prefixes(profile.platform.vpc_cidr)
    usable = private_subnet_usable(prefix, delegation=delegation)
    free = usable - private_subnet_required(groups, fixed, delegation=delegation)
    primary = ipaddress.IPv4Network(profile.platform.vpc_cidr, strict=False)
    if free >= 0 or primary.prefixlen > NODE_BLOCK_PREFIX:
        return (), ()

    def cost(group: NodeGroupDemand) -> int:
        return private_subnet_required([group], [], delegation=delegation)

    capacity = NodeSubnetDemand("", (), delegation).usable
    moved: list[NodeGroupDemand] = []
    for group in sorted(
        (g for g in groups if g.orchestrator is Orchestrator.EKS), key=lambda g: -cost(g)
    ):
        if free >= 0:
            break
        moved.append(group)
        free += cost(group)
    if free < 0:
        return (), ()
    oversized = [g for g in moved if g.worst_case_addresses(g.nodes) > capacity]
    if oversized:
        return (), tuple(
            _pool_too_large(profile, g, capacity, networking, pods_per_node) for g in oversized
        )
    bins: list[list[NodeGroupDemand]] = []
    for group in moved:
        need = group.worst_case_addresses(group.nodes)
        room = next(
            (b for b in bins if sum(g.worst_case_addresses(g.nodes) for g in b) + need <= capacity),
            None,
        )
        if room is None:
            bins.append([group])
        else:
            room.append(group)
    platform = profile.platform
    blocks = node_cidr_blocks(platform.vpc_cidr, len(bins), avoid=(platform.pod_cidr,))
    if len(blocks) < len(bins):
        return (), ()
    return tuple(
        NodeSubnetDemand(
            cidr,
            tuple(
                NodeGroupPart(g.name, i, n, n * g.addressing.per_node, g.worst_case_addresses(n))
                for g in b
                for i, n in enumerate(g.part_sizes())
            ),
            delegation,
        )
        for cidr, b in zip(blocks, bins, strict=True)
    ), ()


def _workload_of(profile: Profile, group: str) -> WorkloadConfig:
    """The workload a node-group demand belongs to (``post_training.rollout``: post_training)."""
    name = group.split(".", 1)[0]
    return next(w for w in profile.enabled_workloads if w.name == name)


def _pool_too_large(
    profile: Profile,
    group: NodeGroupDemand,
    capacity: int,
    networking: PodNetworking,
    pods_per_node: int | None,
) -> Finding:
    """Why ``group`` cannot have a node subnet of its own, with the max pods and the node
    count that would fit one."""
    workload = _workload_of(profile, group.name)
    instance_type = group.addressing.instance_type
    delegation = bool(group.prefixes)
    unit = PREFIX_ADDRESSES if delegation else 1
    room = capacity // unit
    per_node = group.node_subnet_blocks if delegation else group.addressing.per_node
    what = "whole /28s for prefixes" if delegation else "usable addresses"
    fixes = []
    for pods in range(group.addressing.kubelet_max_pods - 1, 0, -1) if delegation else ():
        smaller = _node_group(group.name, workload, instance_type, group.nodes, pods, networking)
        if smaller.worst_case_addresses(smaller.nodes) <= capacity:
            fixes.append(
                f"set {workload.name}.max_pods_per_node = {pods} ("
                + (
                    f"{smaller.prefixes} prefixes and {smaller.node_subnet_blocks} /28s per node"
                    if delegation
                    else f"{smaller.addressing.per_node} addresses per node"
                )
                + f": {smaller.worst_case_addresses(smaller.nodes) // unit:,} of {room:,})"
            )
            break
    if not delegation:
        fixes.append(
            "give pods /28 prefixes: platform.pod_networking = 'auto' or 'prefix-delegation'"
        )
    fixes.append(
        f"or lower the pool to {room // max(per_node, 1):,} nodes, or split it over two workloads"
    )
    return Finding(
        NODE_SUBNET_SHORT,
        Severity.ERROR,
        f"{workload.name}.max_pods_per_node" if delegation else "platform.pod_networking",
        group.addressing.kubelet_max_pods if delegation else networking.value,
        f"the {group.nodes:,} {instance_type} nodes of {group.name} are one EFA pool and stay "
        f"in one node subnet (no AWS page documents EFA traffic across subnets); a "
        f"/{NODE_BLOCK_PREFIX} node subnet holds {room:,} {what}, and each node takes up to "
        + (
            f"{per_node} ({group.prefixes} prefixes and its single addresses, prefix delegation)"
            if delegation
            else f"{per_node}"
        )
        + f": {group.nodes * per_node:,} needed",
        "; ".join(fixes),
    )


def _demand(
    profile: Profile,
    pods_per_node: int | None,
    networking: PodNetworking,
    *,
    spill: bool = False,
) -> SubnetDemand:
    """The demand under ``networking``; ``spill``: managed node groups that do not fit the
    private subnet get node subnets of their own (not with custom networking)."""
    groups: list[NodeGroupDemand] = []
    fixed: list[tuple[str, int]] = []
    platform = profile.platform
    if platform.interface_endpoints and profile.enabled_workloads:
        fixed.append(("interface endpoints", len(PRIVATE_CLUSTER_ENDPOINT_NAMES)))
    for w in profile.enabled_workloads:
        groups.append(
            _node_group(
                w.name, w, w.instance_type, largest_node_count(w), pods_per_node, networking
            )
        )
        rollout = w.rollout_group
        if rollout is not None:
            groups.append(
                _node_group(
                    f"{w.name}.rollout",
                    w,
                    rollout.instance_type,
                    rollout.instance_count,
                    pods_per_node,
                    networking,
                )
            )
        capacity = fsx_capacity_gib(w)
        if capacity is not None:
            fixed.append((f"{w.name}: FSx for Lustre ({capacity:,} GiB)", fsx_addresses(capacity)))
        if isinstance(w, InferenceConfig) and w.load_balancer is not LoadBalancer.NONE:
            fixed.append(("inference: network load balancer", NLB_ADDRESSES))
    # One control plane, system node group and scraper per EKS cluster the stacks build: the
    # shared cluster, plus each workload's dedicated one.
    clusters = dict.fromkeys(w.eks_cluster for w in profile.enabled_workloads if w.eks_cluster)
    for cluster in clusters:
        label = "shared EKS cluster" if cluster == SHARED_CLUSTER else f"{cluster}: EKS cluster"
        fixed.append((f"{label} control plane", EKS_CONTROL_PLANE_ADDRESSES))
        fixed.append((f"{label} system nodes", EKS_SYSTEM_NODE_ADDRESSES))
        if platform.observability:
            fixed.append((f"{label} Prometheus scraper", SCRAPER_ADDRESSES))
    prefix, _ = subnet_prefixes(platform.vpc_cidr)
    if networking is not PodNetworking.CUSTOM_NETWORKING or not _uses_vpc_cni(profile):
        resolved = (
            PodNetworking.PREFIX_DELEGATION
            if networking is PodNetworking.PREFIX_DELEGATION and _uses_vpc_cni(profile)
            else PodNetworking.NODE_SUBNET
        )
        node_subnets, pool_problems = (
            _node_subnets(profile, groups, fixed, resolved, pods_per_node) if spill else ((), ())
        )
        return SubnetDemand(
            platform.availability_zone,
            prefix,
            tuple(groups),
            tuple(fixed),
            networking=resolved,
            node_subnets=node_subnets,
            pool_problems=pool_problems,
        )
    problems = _networking_problems(profile, groups)
    # A pod_cidr that is not a valid block holds nothing (its problem is reported).
    valid_cidr = not pod_cidr_problems(platform.pod_cidr, platform.vpc_cidr)
    pod_subnet = PodSubnetDemand(
        platform.pod_cidr,
        ipaddress.IPv4Network(platform.pod_cidr).prefixlen if valid_cidr else 32,
        tuple(g for g in groups if g.pod_addressing is not None),
    )
    return SubnetDemand(
        platform.availability_zone,
        prefix,
        tuple(groups),
        tuple(fixed),
        networking=PodNetworking.CUSTOM_NETWORKING,
        pod_subnet=pod_subnet,
        networking_problems=tuple(problems),
    )


def shortfall_finding(demand: SubnetDemand, vpc_cidr: str) -> Finding:
    """The numbers and the fixes when the node subnet of ``demand`` (a quarter of
    ``vpc_cidr``) does not fit, under ``platform.vpc_cidr``."""
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
    elif demand.prefix > 18:
        fixes.append(
            "give platform.vpc_cidr a /16: node groups that still do not fit its private "
            "subnet then get node subnets of their own in secondary /16 blocks"
        )
    if any(
        g.layout is EfaLayout.LEGACY and g.orchestrator is Orchestrator.EKS
        for g in demand.node_groups
    ):
        fixes.append("use efa_layout = 'efa-only' (one address per node for the interfaces)")
    custom_possible = all(
        pod_enis_with_custom_networking(get_instance_type(g.addressing.instance_type), g.layout)
        for g in demand.node_groups
        if g.addressing.cni_enis
    )
    if any(g.addressing.cni_enis for g in demand.node_groups) and custom_possible:
        fixes.append(
            "give pods their own addresses from a secondary VPC CIDR: platform.pod_networking "
            "= 'custom-networking' (or 'auto', which switches it on when the node subnet is "
            "too small)"
        )
    elif any(g.addressing.cni_enis for g in demand.node_groups):
        full = sorted(
            {
                g.addressing.instance_type
                for g in demand.node_groups
                if g.addressing.cni_enis
                and not pod_enis_with_custom_networking(
                    get_instance_type(g.addressing.instance_type), g.layout
                )
            }
        )
        fixes.append(
            f"VPC CNI custom networking cannot help {', '.join(full)}: network card 0 holds only "
            "the primary ENA and the efa-only interface, leaving no ENI for pods; at this size "
            "use a type with room on card 0 (p5en.48xlarge, p6-b200.48xlarge) or split the "
            "nodes over several deployments"
        )
    fixes.append("or lower instance_count / max_instance_count")
    return Finding(
        NODE_SUBNET_SHORT,
        Severity.ERROR,
        "platform.vpc_cidr",
        vpc_cidr,
        f"the private subnet /{demand.prefix} in {demand.availability_zone} must hold "
        f"{demand.required:,} addresses at the largest size of every node group, but has "
        f"{demand.usable:,} usable ("
        + (
            f"{demand.usable // PREFIX_ADDRESSES:,} whole /28s free for prefixes, counted in "
            "/28s with prefix delegation"
            if demand.prefix_delegation
            else f"{demand.addresses:,} - {AWS_RESERVED_ADDRESSES_PER_SUBNET} reserved by AWS"
        )
        + f"); short by {-demand.free:,}. Node groups (nodes x addresses per "
        f"node, VPC CNI arithmetic): {groups}. Other: {fixed or 'none'}",
        "; ".join(fixes),
    )


def _pod_subnet_blocks_at(groups: Sequence[NodeGroupDemand], max_pods: int) -> int:
    """/28s the pod-subnet groups take when every node admits ``max_pods`` pods."""
    total = 0
    for g in groups:
        assert g.pod_addressing is not None
        spec = get_instance_type(g.pod_addressing.instance_type)
        total += g.nodes * pod_subnet_addresses_per_node(spec, g.layout, max_pods).blocks
    return total


def pod_subnet_shortfall_finding(demand: SubnetDemand) -> Finding:
    """The numbers and the fixes when the pod subnet of ``demand`` is too small, counted in
    whole /28s (:class:`PodSubnetDemand`)."""
    pods = demand.pod_subnet
    assert pods is not None
    members = [g for g in pods.node_groups if g.pod_addressing is not None]
    groups = ", ".join(
        f"{g.name} {g.nodes:,} x {g.pod_addressing.blocks} /28s "
        f"({g.pod_addressing.max_pods} pods: {g.pod_addressing.prefixes} prefixes and "
        f"{g.pod_addressing.attached_enis} pod ENI address(es)) = "
        f"{g.pod_subnet_addresses // PREFIX_ADDRESSES:,}"
        for g in members
        if g.pod_addressing is not None
    )
    fixes = ["give platform.pod_cidr a larger block (a VPC CIDR block is at most a /16)"]
    largest = max((g.pod_addressing.max_pods for g in members if g.pod_addressing), default=0)
    fitting = next(
        (p for p in range(largest - 1, 0, -1) if _pod_subnet_blocks_at(members, p) <= pods.blocks),
        None,
    )
    if fitting is not None:
        fixes.append(
            f"set max_pods_per_node = {fitting} ({_pod_subnet_blocks_at(members, fitting):,} "
            f"/28s of {pods.blocks:,})"
        )
    if len(members) == 1 and members[0].pod_addressing is not None:
        fixes.append(
            f"or lower {members[0].name} to "
            f"{pods.blocks // members[0].pod_addressing.blocks:,} nodes"
        )
    else:
        fixes.append("or lower instance_count / max_instance_count")
    return Finding(
        scale_rules.POD_SUBNET_SHORT,
        Severity.ERROR,
        "platform.pod_cidr",
        pods.cidr,
        f"the pod subnet {pods.cidr} in {demand.availability_zone} holds {pods.blocks:,} "
        f"whole /28s for prefixes (the first and last hold addresses AWS reserves), and the "
        f"node groups at their largest may take {pods.required // PREFIX_ADDRESSES:,}: each "
        f"prefix needs a free aligned /28 and each pod ENI's own address may spoil one "
        f"(prefix delegation, WARM_PREFIX_TARGET=1); short by "
        f"{-pods.free // PREFIX_ADDRESSES:,} /28s. Node groups: {groups}",
        ", ".join(fixes[:-1]) + ", " + fixes[-1],
    )


def demand_problems(demand: SubnetDemand, vpc_cidr: str) -> list[Finding]:
    """Every reason ``demand`` cannot be built (empty when it fits): the pod networking's own
    problems, the node subnet's shortfall (a quarter of ``vpc_cidr``) and the pod subnet's."""
    out = list(demand.networking_problems) + list(demand.pool_problems)
    if not demand.node_subnet_fits and not demand.pool_problems:
        out.append(shortfall_finding(demand, vpc_cidr))
    pods = demand.pod_subnet
    if pods is not None and not demand.networking_problems and pods.free < 0:
        out.append(pod_subnet_shortfall_finding(demand))
    for subnet in demand.node_subnets:
        if not subnet.fits:
            groups = ", ".join(
                f"{p.group} group {p.index + 1}: {p.nodes} nodes" for p in subnet.parts
            )
            out.append(
                Finding(
                    NODE_SUBNET_SHORT,
                    Severity.ERROR,
                    "platform.vpc_cidr",
                    vpc_cidr,
                    f"the node subnet {subnet.cidr} in {demand.availability_zone} must hold "
                    f"{subnet.required:,} addresses ({groups}) but has {subnet.usable:,} usable",
                    "lower max_pods_per_node or instance_count / max_instance_count",
                )
            )
    return out
