"""Every address the largest deployment takes from the GPU zone's subnets, and whether each
subnet fits: node groups at their maximum size with the VPC CNI's arithmetic, the interface
endpoints, the EKS control plane and system nodes, FSx, load balancers and scrapers; where the
node groups go (the private subnet, node subnets of secondary /16 blocks, the pod subnet of
custom networking).

Pure math over plain inputs: the profile's side (:mod:`fm_constructs.config.subnet_demand`)
turns a profile into one :class:`SubnetRequest`, calls :func:`plan_subnets` once and reads
the result (its findings name profile keys). Nothing here reads a profile, and nothing calls
back into config/ or rules/. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import math
from collections.abc import Sequence
from dataclasses import dataclass

from fm_constructs.catalog import InstanceSpec, get_instance_type
from fm_constructs.planning.aws_limits import node_groups_for, split_sizes
from fm_constructs.planning.efa_layout import EfaLayout, efa_interface_layout
from fm_constructs.planning.fsx_sizing import (
    DEFAULT_STORAGE_CAPACITY_GIB,
    FsxSizingRequest,
    size_fsx_lustre,
)
from fm_constructs.planning.ip_budget import (
    AWS_RESERVED_ADDRESSES_PER_SUBNET,
    NodeAddressing,
    SubnetFit,
    node_addressing,
    smallest_prefix_for,
)
from fm_constructs.planning.pod_networking import (
    DEFAULT_ACCELERATED_MAX_PODS,
    PREFIX_ADDRESSES,
    PodNetworking,
    PodSubnetAddressing,
    node_subnet_prefix_addressing,
    pod_enis_with_custom_networking,
    pod_subnet_addresses_per_node,
    prefix_blocks,
)
from fm_constructs.planning.vpc_layout import (
    NODE_BLOCK_PREFIX,
    node_cidr_blocks,
    secondary_block_problems,
    subnet_prefixes,
)

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


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeGroupRequest:
    """One node group of the deployment at its largest, as the profile asks for it.

    ``name``: the pool (``pretraining``, ``post_training.rollout``); ``workload``: the workload
    it belongs to. ``vpc_cni``: pods get VPC addresses (EKS and HyperPod-EKS, not Slurm).
    ``managed``: EKS managed node groups, which may move to node subnets of their own and get
    ENIConfigs under custom networking. ``max_pods_per_node``: the workload's kubelet maxPods
    (None: the CNI's own figure, or :data:`DEFAULT_ACCELERATED_MAX_PODS` with prefixes)."""

    name: str
    workload: str
    #: The workload's orchestrator (a value of the profile's vocabulary), carried to the result.
    orchestrator: str
    instance_type: str
    layout: EfaLayout | None
    nodes: int
    vpc_cni: bool
    managed: bool
    max_pods_per_node: int | None = None


@dataclass(frozen=True)
class FileSystemRequest:
    """A workload's own FSx for Lustre file system: sized from ``sizing`` when given, else
    ``storage_capacity_gib`` (None: the FSx default)."""

    workload: str
    sizing: FsxSizingRequest | None
    storage_capacity_gib: int | None = None


#: What the private subnet holds besides the GPU nodes: (what, addresses), or a file system
#: whose addresses follow from its capacity.
FixedRequest = tuple[str, int] | FileSystemRequest


@dataclass(frozen=True, kw_only=True)
class SubnetRequest:
    """Everything the GPU zone's subnets must hold, from one profile."""

    node_groups: tuple[NodeGroupRequest, ...]
    fixed: tuple[FixedRequest, ...] = ()
    availability_zone: str
    #: The VPC's primary block (its private subnets are a quarter of it each) and the
    #: secondary block of custom networking's pod subnets.
    vpc_cidr: str
    pod_cidr: str
    #: Pods per node that need an address, when the caller knows it (``fmc plan``'s what-if).
    pods_per_node: int | None = None

    @property
    def uses_vpc_cni(self) -> bool:
        return any(g.vpc_cni for g in self.node_groups)


def file_system_capacity_gib(request: FileSystemRequest) -> int:
    """Capacity of a workload's own file system: sized, explicit or the FSx default."""
    if request.sizing is not None:
        return size_fsx_lustre(request.sizing).storage_capacity_gib
    return request.storage_capacity_gib or DEFAULT_STORAGE_CAPACITY_GIB


def fsx_addresses(capacity_gib: int) -> int:
    """Network interfaces of a file system of ``capacity_gib`` (an allowance, see above)."""
    return FSX_FIXED_ADDRESSES + math.ceil(capacity_gib / FSX_UNIT_GIB)


def _fixed_addresses(item: FixedRequest) -> tuple[str, int]:
    if isinstance(item, FileSystemRequest):
        capacity = file_system_capacity_gib(item)
        return (f"{item.workload}: FSx for Lustre ({capacity:,} GiB)", fsx_addresses(capacity))
    return item


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class NodeGroupDemand(NodeGroupRequest):
    """One node group at its largest size: the request with what its nodes take under the pod
    networking evaluated. ``pod_addressing``: what each node takes from the pod subnet under
    custom networking (None: pods use the node subnet, or no VPC CNI)."""

    addressing: NodeAddressing
    pod_addressing: PodSubnetAddressing | None = None
    #: /28 prefixes each node holds in its own subnet (prefix delegation there; else 0).
    prefixes: int = 0
    #: Pod ENIs network card 0 leaves room for under custom networking
    #: (:func:`~fm_constructs.planning.pod_networking.pod_enis_with_custom_networking`).
    custom_networking_pod_enis: int = 0

    @property
    def addresses(self) -> int:
        return self.nodes * self.addressing.per_node

    @property
    def network_interfaces(self) -> int:
        """Network interfaces one node holds at its largest: the launch template's (primary
        and EFA), plus the ENIs the VPC CNI attaches for pods."""
        spec = get_instance_type(self.addressing.instance_type)
        layout = self.layout
        interfaces = len(efa_interface_layout(spec, layout)) if layout is not None else 1
        if self.pod_addressing is not None:
            return interfaces + self.pod_addressing.attached_enis
        addressing = self.addressing
        if addressing.cni_addresses:
            per_eni = spec.ipv4_addresses_per_interface - 1
            attached = (addressing.cni_addresses + 1) // (per_eni + 1)
            return interfaces + max(0, attached - 1)
        return interfaces

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
class NodeSubnetDemand(SubnetFit):
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
        return node_subnet_usable(delegation=self.prefix_delegation)

    @property
    def required(self) -> int:
        return sum(p.worst_case for p in self.parts)


def node_subnet_usable(*, delegation: bool) -> int:
    """Usable addresses of a /16 node subnet; with prefix delegation counted in /28s (the
    first and the last hold the addresses AWS reserves)."""
    addresses = int(2 ** (32 - NODE_BLOCK_PREFIX))
    if delegation:
        return addresses - 2 * PREFIX_ADDRESSES
    return addresses - AWS_RESERVED_ADDRESSES_PER_SUBNET


@dataclass(frozen=True)
class PodSubnetDemand(SubnetFit):
    """What the GPU zone's pod subnet (the whole secondary CIDR) must hold under custom
    networking, counted in whole /28 prefixes: ``usable`` is the /28s free to hold a prefix
    (x 16), ``required`` the /28s the node groups may take whatever addresses EC2 picks.
    ``fitting_max_pods``: when it does not fit, the largest maxPods below the groups' that
    would (None: none would, or it fits), taking ``fitting_blocks`` /28s."""

    cidr: str
    prefix: int
    node_groups: tuple[NodeGroupDemand, ...]
    fitting_max_pods: int | None = None
    fitting_blocks: int = 0

    @property
    def addresses(self) -> int:
        return int(2 ** (32 - self.prefix))

    @property
    def blocks(self) -> int:
        """/28s of the subnet that can hold a prefix."""
        return prefix_blocks(self.prefix)

    @property
    def usable(self) -> int:
        return self.blocks * PREFIX_ADDRESSES

    @property
    def required(self) -> int:
        return sum(g.pod_subnet_addresses for g in self.node_groups)

    @property
    def fits(self) -> bool:
        return self.free >= 0 and all(
            g.pod_addressing is None or g.pod_addressing.fits_node for g in self.node_groups
        )


@dataclass(frozen=True)
class OversizedPool:
    """An EFA pool that cannot have one node subnet of its own: ``capacity`` is what a node
    subnet holds (addresses, or x 16 for /28s with prefix delegation); ``fitting``: the same
    pool at the largest maxPods that would fit one (None: without prefixes, or none fits)."""

    group: NodeGroupDemand
    capacity: int
    fitting: NodeGroupDemand | None = None


@dataclass(frozen=True)
class SubnetDemand(SubnetFit):
    """Everything the GPU zone's private subnet must hold (and, under custom networking, its
    pod subnet). ``networking`` is the pod networking evaluated, with ``auto`` resolved.
    ``usable``/``required``/``free`` count the private subnet; :attr:`fits` is the whole
    deployment's answer."""

    availability_zone: str
    prefix: int
    node_groups: tuple[NodeGroupDemand, ...]
    #: (what, addresses) for everything that is not a GPU node.
    fixed: tuple[tuple[str, int], ...]
    networking: PodNetworking = PodNetworking.NODE_SUBNET
    pod_subnet: PodSubnetDemand | None = None
    #: Node subnets in secondary CIDR blocks, for the managed node groups that do not fit the
    #: private subnet (they leave its count).
    node_subnets: tuple[NodeSubnetDemand, ...] = ()
    #: Custom networking: what is wrong with the pod CIDR, and the workloads whose nodes
    #: cannot get ENIConfigs (VPC CNI pods outside EKS managed node groups).
    pod_cidr_problems: tuple[str, ...] = ()
    unsupported_workloads: tuple[str, ...] = ()
    #: EFA pools that cannot have one node subnet of their own (:func:`_node_subnets`).
    oversized_pools: tuple[OversizedPool, ...] = ()

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
    def required(self) -> int:
        return (
            private_subnet_required(self.node_groups, self.fixed, delegation=self.prefix_delegation)
            - self.moved
        )

    @property
    def moved(self) -> int:
        """What the node groups placed in node subnets would take in the private one."""
        return sum(
            p.worst_case if self.prefix_delegation else p.addresses
            for subnet in self.node_subnets
            for p in subnet.parts
        )

    @property
    def smallest_prefix(self) -> int:
        """The smallest private subnet (longest prefix) that would hold :attr:`required`."""
        return smallest_prefix_for(self.required)

    @property
    def networking_blocked(self) -> bool:
        """Custom networking cannot work at all: a bad pod CIDR, nodes outside EKS managed
        node groups, or a node without room for the pod ENIs it needs."""
        return bool(
            self.pod_cidr_problems
            or self.unsupported_workloads
            or any(
                g.pod_addressing is not None and not g.pod_addressing.fits_node
                for g in self.node_groups
            )
        )

    @property
    def node_subnet_fits(self) -> bool:
        return self.free >= 0

    @property
    def fits(self) -> bool:
        return (
            self.free >= 0
            and not self.networking_blocked
            and not self.oversized_pools
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


# --------------------------------------------------------------------------------------------
# The arithmetic
# --------------------------------------------------------------------------------------------


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


def node_group_demand(
    group: NodeGroupRequest,
    pods: int | None,
    networking: PodNetworking = PodNetworking.NODE_SUBNET,
) -> NodeGroupDemand:
    """``group`` at its largest under ``networking`` (resolved, never ``auto``), its nodes
    running ``pods`` pods that need an address (None: the group's maxPods, else as many as
    kubelet admits and the CNI can address)."""
    spec = get_instance_type(group.instance_type)
    layout = group.layout
    room = pod_enis_with_custom_networking(spec, layout)

    def demand(
        addressing: NodeAddressing,
        pod_addressing: PodSubnetAddressing | None = None,
        prefixes: int = 0,
    ) -> NodeGroupDemand:
        return NodeGroupDemand(
            **{f.name: getattr(group, f.name) for f in dataclasses.fields(NodeGroupRequest)},
            addressing=addressing,
            pod_addressing=pod_addressing,
            prefixes=prefixes,
            custom_networking_pod_enis=room,
        )

    if pods is None and group.max_pods_per_node is not None:
        pods = group.max_pods_per_node
    if not group.vpc_cni or networking is PodNetworking.NODE_SUBNET:
        return demand(node_addressing(spec, layout, vpc_cni=group.vpc_cni, pods_per_node=pods))
    max_pods = pods if pods is not None else DEFAULT_ACCELERATED_MAX_PODS
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
        return demand(addressing, pod_addressing)
    prefixes = node_subnet_prefix_addressing(spec, layout, max_pods)
    addressing = _prefix_addressing(
        spec,
        layout,
        cni_enis=prefixes.enis,
        pod_enis=prefixes.enis,
        max_pods=max_pods,
        cni_addresses=prefixes.addresses,
    )
    return demand(addressing, prefixes=prefixes.prefixes)


def plan_subnets(request: SubnetRequest, networking: PodNetworking) -> SubnetDemand:
    """The addresses the largest deployment of ``request`` needs in the GPU zone's subnets
    under ``networking``; ``auto`` takes the first that fits of the node subnet, prefix
    delegation, custom networking and prefix delegation with node subnets of their own."""
    if networking is PodNetworking.AUTO:
        plain = _demand(request, PodNetworking.NODE_SUBNET)
        if plain.fits or not request.uses_vpc_cni:
            return plain
        prefixes = _demand(request, PodNetworking.PREFIX_DELEGATION)
        if prefixes.fits:
            return prefixes
        custom = _demand(request, PodNetworking.CUSTOM_NETWORKING)
        if custom.fits:
            return custom
        spilled = _demand(request, PodNetworking.PREFIX_DELEGATION, spill=True)
        if spilled.fits or (spilled.oversized_pools and custom.networking_blocked):
            return spilled
        # Custom networking that cannot work at all (no room for pod ENIs, HyperPod) is no
        # answer: the node subnet's own shortfall says more.
        return plain if custom.networking_blocked else custom
    return _demand(request, networking, spill=networking is not PodNetworking.CUSTOM_NETWORKING)


def _demand(
    request: SubnetRequest, networking: PodNetworking, *, spill: bool = False
) -> SubnetDemand:
    """The demand under ``networking``; ``spill``: managed node groups that do not fit the
    private subnet get node subnets of their own (not with custom networking)."""
    groups = tuple(
        node_group_demand(g, request.pods_per_node, networking) for g in request.node_groups
    )
    fixed = tuple(_fixed_addresses(item) for item in request.fixed)
    prefix, _ = subnet_prefixes(request.vpc_cidr)
    node_subnets: tuple[NodeSubnetDemand, ...] = ()
    oversized: tuple[OversizedPool, ...] = ()
    pod_subnet: PodSubnetDemand | None = None
    cidr_problems: tuple[str, ...] = ()
    unsupported: tuple[str, ...] = ()
    if networking is PodNetworking.CUSTOM_NETWORKING and request.uses_vpc_cni:
        resolved = PodNetworking.CUSTOM_NETWORKING
        cidr_problems = tuple(secondary_block_problems(request.pod_cidr, request.vpc_cidr))
        # A pod_cidr that is not a valid block holds nothing (its problem is reported).
        pod_prefix = ipaddress.IPv4Network(request.pod_cidr).prefixlen if not cidr_problems else 32
        members = tuple(g for g in groups if g.pod_addressing is not None)
        pod_subnet = _pod_subnet(request.pod_cidr, pod_prefix, members)
        unsupported = tuple(
            dict.fromkeys(g.workload for g in request.node_groups if g.vpc_cni and not g.managed)
        )
    else:
        resolved = (
            PodNetworking.PREFIX_DELEGATION
            if networking is PodNetworking.PREFIX_DELEGATION and request.uses_vpc_cni
            else PodNetworking.NODE_SUBNET
        )
        if spill:
            node_subnets, oversized = _node_subnets(
                request, groups, fixed, resolved is PodNetworking.PREFIX_DELEGATION
            )
    return SubnetDemand(
        request.availability_zone,
        prefix,
        groups,
        fixed,
        resolved,
        pod_subnet=pod_subnet,
        node_subnets=node_subnets,
        pod_cidr_problems=cidr_problems,
        unsupported_workloads=unsupported,
        oversized_pools=oversized,
    )


def _pod_subnet_blocks_at(groups: Sequence[NodeGroupDemand], max_pods: int) -> int:
    """/28s the pod-subnet groups take when every node admits ``max_pods`` pods."""
    total = 0
    for g in groups:
        assert g.pod_addressing is not None
        spec = get_instance_type(g.pod_addressing.instance_type)
        total += g.nodes * pod_subnet_addresses_per_node(spec, g.layout, max_pods).blocks
    return total


def _pod_subnet(cidr: str, prefix: int, groups: tuple[NodeGroupDemand, ...]) -> PodSubnetDemand:
    """The pod subnet ``cidr`` (a /``prefix``) holding ``groups``, with the largest maxPods
    that would fit when they do not."""
    blocks = prefix_blocks(prefix)
    usable = blocks * PREFIX_ADDRESSES
    required = sum(g.pod_subnet_addresses for g in groups)
    fitting: int | None = None
    if required > usable:
        largest = max((g.pod_addressing.max_pods for g in groups if g.pod_addressing), default=0)
        fitting = next(
            (p for p in range(largest - 1, 0, -1) if _pod_subnet_blocks_at(groups, p) <= blocks),
            None,
        )
    return PodSubnetDemand(
        cidr,
        prefix,
        groups,
        fitting,
        _pod_subnet_blocks_at(groups, fitting) if fitting is not None else 0,
    )


def _node_subnets(
    request: SubnetRequest,
    groups: tuple[NodeGroupDemand, ...],
    fixed: tuple[tuple[str, int], ...],
    delegation: bool,
) -> tuple[tuple[NodeSubnetDemand, ...], tuple[OversizedPool, ...]]:
    """Node subnets for the EKS node pools that do not fit the GPU zone's private subnet, and
    the pools that cannot get one.

    A pool (all managed node groups of one workload's node group, the EFA traffic of one job)
    always stays in one subnet: the EC2 User Guide long said EFA OS-bypass traffic "is limited
    to a single subnet" and no AWS page documents it across subnets, so a pool is never split.
    The largest pools move first, until the rest fits, and are packed whole (first fit) into
    /16 subnets of secondary VPC CIDR blocks
    (:func:`~fm_constructs.planning.vpc_layout.node_cidr_blocks`). A pool larger than one
    node subnet is an :class:`OversizedPool`. Only for a VPC whose primary block is already a
    /16, the largest there is: a smaller one grows by a larger ``vpc_cidr`` first. Empty when
    everything fits, or when moving every EKS pool would still not make the private subnet
    fit."""
    prefix, _ = subnet_prefixes(request.vpc_cidr)
    usable = private_subnet_usable(prefix, delegation=delegation)
    free = usable - private_subnet_required(groups, fixed, delegation=delegation)
    primary = ipaddress.IPv4Network(request.vpc_cidr, strict=False)
    if free >= 0 or primary.prefixlen > NODE_BLOCK_PREFIX:
        return (), ()

    def cost(group: NodeGroupDemand) -> int:
        return private_subnet_required([group], [], delegation=delegation)

    capacity = node_subnet_usable(delegation=delegation)
    moved: list[NodeGroupDemand] = []
    for group in sorted((g for g in groups if g.managed), key=lambda g: -cost(g)):
        if free >= 0:
            break
        moved.append(group)
        free += cost(group)
    if free < 0:
        return (), ()
    oversized = [g for g in moved if g.worst_case_addresses(g.nodes) > capacity]
    if oversized:
        return (), tuple(OversizedPool(g, capacity, _fitting_pool(g, capacity)) for g in oversized)
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
    blocks = node_cidr_blocks(request.vpc_cidr, len(bins), avoid=(request.pod_cidr,))
    if len(blocks) < len(bins):
        return (), ()
    return tuple(
        NodeSubnetDemand(
            cidr,
            tuple(
                NodeGroupPart(g.name, i, n, n * g.addressing.per_node, g.worst_case_addresses(n))
                for g in members
                for i, n in enumerate(g.part_sizes())
            ),
            delegation,
        )
        for cidr, members in zip(blocks, bins, strict=True)
    ), ()


def _fitting_pool(group: NodeGroupDemand, capacity: int) -> NodeGroupDemand | None:
    """``group`` at the largest maxPods below its own whose worst case fits ``capacity``
    (with prefix delegation only; None without prefixes or when none fits)."""
    if not group.prefixes:
        return None
    for pods in range(group.addressing.kubelet_max_pods - 1, 0, -1):
        smaller = node_group_demand(group, pods, PodNetworking.PREFIX_DELEGATION)
        if smaller.worst_case_addresses(smaller.nodes) <= capacity:
            return smaller
    return None
