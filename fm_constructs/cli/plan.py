"""``fmc plan``: what a profile builds and what it costs, offline.

Every figure comes from the floor-1 functions the constructs use (catalog, EFA layout, IP
budget, FSx sizing and validity rules), so the plan and the synthesized template agree; the
CLI adds only list prices and the training-goal arithmetic on top.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from fm_constructs.catalog import InstanceSpec, get_instance_type
from fm_constructs.cli.costs import CostLine, instance_hours, missing_prices, platform_cost_lines
from fm_constructs.cli.document import document, json_field
from fm_constructs.cli.flops import peak_flops
from fm_constructs.cli.goal import GoalEstimate, TrainingGoal, estimate
from fm_constructs.cli.pricing import HOURS_PER_MONTH, PriceTable
from fm_constructs.cli.series import prometheus_usages
from fm_constructs.config import (
    CapacityConfig,
    CapacityKind,
    Orchestrator,
    PostTrainingConfig,
    Profile,
    RolloutConfig,
    TrainingGoalConfig,
    WorkloadConfig,
)
from fm_constructs.config.limits import limit_usages
from fm_constructs.config.options import capacity_quota, deployment_options, efa_layout_of
from fm_constructs.config.sizing import PROFILE_DEPLOYMENT_TYPE, workload_fsx_sizing_request
from fm_constructs.config.subnet_demand import (
    NodeGroupDemand,
    NodeSubnetDemand,
    PodSubnetDemand,
    demand_problems,
    subnet_demand,
)
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning.aws_limits import LimitUsage
from fm_constructs.planning.efa_layout import EfaLayout, efa_interface_count, efa_interface_layout
from fm_constructs.planning.fsx_sizing import (
    DEFAULT_BYTES_PER_PARAMETER,
    DEFAULT_PER_UNIT_THROUGHPUT,
    DEFAULT_STORAGE_CAPACITY_GIB,
    aggregate_throughput_mb_s,
    size_fsx_lustre,
)
from fm_constructs.planning.ip_budget import (
    AWS_RESERVED_ADDRESSES_PER_SUBNET,
    DEFAULT_POD_COUNT,
    SubnetFit,
)
from fm_constructs.planning.node_updates import NodeRoll, node_roll
from fm_constructs.planning.pcs_limits import LOGIN_INSTANCE_TYPE, cluster_size_for
from fm_constructs.planning.pcs_limits import MAX_JOBS as PCS_MAX_JOBS
from fm_constructs.planning.pcs_limits import MAX_NODES as PCS_MAX_NODES
from fm_constructs.planning.vpc_layout import subnet_prefixes
from fm_constructs.rules import scale as scale_rules
from fm_constructs.rules.findings import info

PLAN_OPTION = info(
    "FM008",
    "A command-line option of fmc plan does not fit the profile (such as --goal-workload "
    "naming a workload that is not enabled).",
    "Give a value the message lists.",
)

SCHEMA = "fmc.plan/v1"
_BYTES_PER_GIB = 1024**3
_BYTES_PER_MB = 1000**2
#: FSx for Lustre deployment type a profile builds (and sizing prices): the profile's own.
DEPLOYMENT_TYPE = PROFILE_DEPLOYMENT_TYPE


def efa_layout_for(workload: WorkloadConfig) -> EfaLayout | None:
    """The layout the stacks give the workload's nodes (None: a type without EFA)."""
    return efa_layout_of(workload)


def private_subnet_prefix(vpc_cidr: str) -> int:
    """Prefix of each private (node) subnet, from the same function the VPC construct uses."""
    private, _ = subnet_prefixes(vpc_cidr)
    return private


@dataclass(frozen=True)
class StoragePlan:
    """The FSx for Lustre file system of one workload."""

    source: str  # "sized", "explicit" or "default"
    deployment_type: str
    storage_capacity_gib: int
    throughput_mb_s_per_tib: int
    aggregate_throughput_mb_s: float
    efa_enabled: bool
    checkpoint_size_gib: float | None
    checkpoint_write_seconds: float | None
    usd_per_month: float | None
    reasoning: tuple[str, ...] = ()


@dataclass(frozen=True)
class GoalPlan:
    """The training goal on this workload's cluster (or why it cannot be estimated)."""

    parameters: float
    tokens: float
    mfu: float
    flops: float
    peak_bf16_dense_tflops: float | None = field(
        metadata=json_field("peak_bf16_dense_tflops_per_accelerator")
    )
    peak_source: str | None
    accelerator_hours: float | None
    wall_clock_days: float | None
    #: The goal's wall-clock hours at the workload's nodes and file system (None: a price of
    #: either is missing) and at its nodes alone (None: the nodes have no price).
    usd: float | None
    nodes_usd: float | None = None
    note: str | None = None


@dataclass(frozen=True)
class WorkloadCost:
    """What one workload row costs by the hour (None: a price is missing)."""

    instance_usd_per_hour: float | None
    compute_usd_per_hour: float | None
    storage_usd_per_hour: float | None
    usd_per_hour: float | None
    basis: str


def _node_roll_document(roll: NodeRoll) -> dict[str, Any]:
    """A node roll in the ``--json`` document (the planning type, flattened)."""
    return {
        "update_strategy": roll.policy.strategy.value,
        "max_unavailable": roll.policy.max_unavailable,
        "max_unavailable_percentage": roll.policy.max_unavailable_percentage,
        "node_groups": list(roll.group_sizes),
        "nodes_at_once": list(roll.parallel),
        "batches": roll.batches,
        "minutes": roll.minutes,
    }


@dataclass(frozen=True)
class WorkloadPlan:
    """Everything ``plan`` reports about one enabled workload."""

    name: str
    orchestrator: str
    capacity_kind: str
    instance_type: str
    nodes: int
    accelerator: str
    accelerators_per_node: int
    accelerators: int
    accelerator_memory_gib: float
    total_accelerator_memory_gib: float
    efa_layout: str
    efa_interfaces_per_node: int
    efa_bandwidth_gbps_per_node: float
    efa_bandwidth_gbps_total: float
    ip_addresses_per_node: int
    ip_addresses: int
    #: Largest node count (autoscaling maximum) the IP budget counts.
    max_nodes: int
    #: VPC CNI figures per node: pods kubelet admits, pods the CNI can address.
    kubelet_max_pods: int
    pod_ip_capacity: int
    #: Pods kubelet admits beyond what the CNI can address (they stay ContainerCreating).
    pods_without_address: int
    cost: WorkloadCost
    storage: StoragePlan | None
    goal: GoalPlan | None = field(metadata=json_field("training_goal"))
    notes: tuple[str, ...] = ()
    #: How a launch-template or AMI change replaces the nodes (EKS node groups; else None).
    node_roll: NodeRoll | None = field(
        default=None, metadata=json_field(encode=_node_roll_document)
    )


class FixedAddresses(NamedTuple):
    """Addresses the private subnet holds besides the GPU nodes."""

    what: str
    addresses: int


@dataclass(frozen=True)
class NodeSubnetGroup:
    """Managed node group ``group`` (1-based) of pool ``name`` in a node subnet."""

    name: str
    group: int
    nodes: int
    #: What its nodes take whatever addresses EC2 picks (whole /28s with prefix delegation).
    addresses: int


@dataclass(frozen=True)
class NodeSubnetPlan:
    """A node subnet of the GPU zone in a secondary CIDR block."""

    cidr: str
    usable: int
    required: int
    fits: bool
    prefix_delegation: bool
    node_groups: tuple[NodeSubnetGroup, ...]


@dataclass(frozen=True)
class PodSubnetGroup:
    """What one node group takes from the pod subnet under custom networking."""

    name: str
    nodes: int
    max_pods: int
    prefixes_per_node: int
    addresses_per_node: int
    blocks_per_node: int
    addresses: int


@dataclass(frozen=True)
class PodSubnetPlan:
    """The GPU zone's pod subnet under custom networking."""

    cidr: str
    usable: int
    required: int
    fits: bool
    node_groups: tuple[PodSubnetGroup, ...]


@dataclass(frozen=True, kw_only=True)
class SubnetPlan(SubnetFit):
    """The private subnet in the GPU zone that every workload's nodes share."""

    JSON_PROPERTIES = ("free", "fits")

    availability_zone: str
    prefix: int
    addresses: int
    reserved: int
    usable: int
    required: int
    #: None: each workload's default (see build_plan).
    pod_ips_per_node: int | None
    #: What the subnet holds besides the GPU nodes.
    fixed: tuple[FixedAddresses, ...] = field(default=(), metadata=json_field("other"))
    #: Pod networking with ``auto`` resolved: ``node-subnet``, ``prefix-delegation`` or
    #: ``custom-networking``.
    networking: str = field(default="node-subnet", metadata=json_field("pod_networking"))
    #: Custom networking: the GPU zone's pod subnet.
    pod_subnet: PodSubnetPlan | None = None
    #: Node subnets of the GPU zone in secondary CIDR blocks.
    node_subnets: tuple[NodeSubnetPlan, ...] = ()


@dataclass(frozen=True)
class Plan:
    """The whole plan of a profile."""

    source: str
    region: str
    availability_zone: str
    prices_as_of: str
    prices_source: str
    workloads: tuple[WorkloadPlan, ...]
    subnet: SubnetPlan
    problems: tuple[str, ...] = field(default_factory=tuple)
    #: Every hourly charge: the workloads' instances and file systems, then the platform's.
    costs: tuple[CostLine, ...] = field(default_factory=tuple)
    #: Clusters and Kueue queues, from the mapping the stacks build from
    #: (:func:`fm_constructs.config.options.deployment_options`).
    clusters: tuple[dict[str, Any], ...] = ()
    #: The profile's warnings, as the loader found them (the same lines synth and preflight
    #: give); they do not change the exit code.
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: Every AWS limit the largest deployment counts against (:mod:`fm_constructs.config.limits`).
    limits: tuple[LimitUsage, ...] = ()

    @property
    def reached_limits(self) -> tuple[LimitUsage, ...]:
        """The limits at 80% or more, largest share first."""
        return tuple(sorted((u for u in self.limits if u.reached), key=lambda u: -u.share))

    @property
    def missing_prices(self) -> tuple[str, ...]:
        """``no price for ITEM in REGION`` for each line the price table has no figure for."""
        return tuple(missing_prices(list(self.costs), self.region))

    @property
    def partial(self) -> bool:
        """True when the total leaves out lines without a price."""
        return bool(self.missing_prices)

    @property
    def usd_per_hour(self) -> float:
        """Sum of every priced line (see ``partial`` for what it leaves out)."""
        return sum(c.usd_per_hour for c in self.costs if c.usd_per_hour is not None)

    @property
    def platform_usd_per_hour(self) -> float:
        """The priced lines no workload owns: NAT gateways, interface endpoints, EKS control
        planes and system nodes, the observability workspaces. The platform bills them even
        with every workload disabled."""
        workloads = {w.name for w in self.workloads}
        return sum(
            c.usd_per_hour
            for c in self.costs
            if c.usd_per_hour is not None and c.owner not in workloads
        )

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document (schema ``fmc.plan/v1``)."""
        return {
            "schema": SCHEMA,
            "profile": self.source,
            "region": self.region,
            "availability_zone": self.availability_zone,
            "prices": {"as_of": self.prices_as_of, "source": self.prices_source},
            "workloads": document(self.workloads),
            "subnet": document(self.subnet),
            "limits": [
                {
                    "key": u.limit.key,
                    "name": u.limit.name,
                    "service": u.limit.service,
                    "quota_code": u.limit.quota_code or None,
                    "adjustable": u.limit.adjustable,
                    "limit": u.limit.value,
                    "unit": u.limit.unit,
                    "used": u.used,
                    "share": round(u.share, 4),
                    "reached": u.reached,
                    "what": u.what,
                    "source": u.limit.source,
                }
                for u in self.limits
            ],
            "costs": [c.to_json() for c in self.costs],
            "totals": {
                "nodes": sum(w.nodes for w in self.workloads),
                "accelerators": sum(w.accelerators for w in self.workloads),
                "usd_per_hour": self.usd_per_hour,
                "platform_usd_per_hour": self.platform_usd_per_hour,
                "partial": self.partial,
                "missing_prices": list(self.missing_prices),
            },
            "problems": list(self.problems),
            "clusters": list(self.clusters),
            "warnings": list(self.warnings),
        }


# --------------------------------------------------------------------------------------------
# Building the plan
# --------------------------------------------------------------------------------------------


def build_plan(
    profile: Profile,
    prices: PriceTable,
    *,
    goal: TrainingGoal | None = None,
    goal_workload: str = "pretraining",
    pod_ips_per_node: int | None = None,
) -> Plan:
    """The plan of every enabled workload of ``profile``.

    ``goal`` is estimated on ``goal_workload``'s cluster. ``pod_ips_per_node``: pods per
    Kubernetes node that need a VPC address; None means the profile check's own figure (as
    many as kubelet admits and the VPC CNI can address).
    """
    region = profile.platform.region
    problems = Problems(code=PLAN_OPTION)
    workloads: list[WorkloadPlan] = []
    enabled = profile.enabled_workloads
    if goal is not None and goal_workload not in {w.name for w in enabled}:
        problems.add_message(
            f"--goal-workload: {goal_workload!r} is not an enabled workload of the profile; "
            f"choose one of {', '.join(w.name for w in enabled) or '(none enabled)'}"
        )
    demand = subnet_demand(profile, pods_per_node=pod_ips_per_node)
    demand_by_name = {g.name: g for g in demand.node_groups}
    for workload in _node_groups(enabled):
        spec = get_instance_type(workload.instance_type, field=f"{workload.name}.instance_type")
        layout = efa_layout_for(workload)
        group = demand_by_name[workload.name]
        workload_goal = goal if goal is not None and workload.name == goal_workload else None
        workloads.append(
            _plan_workload(workload, spec, layout, group, region, prices, workload_goal, problems)
        )
    problems.extend(demand_problems(demand, profile.platform.vpc_cidr))
    usages = limit_usages(profile, demand=demand)
    problems.extend(scale_rules.fixed_limits(usages))
    subnet = SubnetPlan(
        availability_zone=profile.platform.availability_zone,
        prefix=demand.prefix,
        addresses=demand.addresses,
        reserved=AWS_RESERVED_ADDRESSES_PER_SUBNET,
        usable=demand.usable,
        required=demand.required,
        pod_ips_per_node=pod_ips_per_node,
        fixed=tuple(FixedAddresses(what, n) for what, n in demand.fixed),
        networking=demand.networking.value,
        pod_subnet=None if demand.pod_subnet is None else _pod_subnet_plan(demand.pod_subnet),
        node_subnets=tuple(_node_subnet_plan(s) for s in demand.node_subnets),
    )
    costs = [line for w in workloads for line in _workload_cost_lines(w, region, prices)]
    costs += platform_cost_lines(profile, prices)
    return Plan(
        source=profile.source,
        region=region,
        availability_zone=profile.platform.availability_zone,
        prices_as_of=prices.as_of_for(region),
        prices_source=prices.source,
        workloads=tuple(workloads),
        subnet=subnet,
        problems=tuple(problems),
        costs=tuple(costs),
        clusters=_clusters(profile),
        warnings=tuple(f.line() for f in profile.warnings),
        limits=(
            *usages,
            *prometheus_usages(profile, demand),
        ),
    )


def _fit_of(subnet: NodeSubnetDemand | PodSubnetDemand) -> dict[str, Any]:
    """The figures every subnet record shows: its block, room, need and answer."""
    return {
        "cidr": subnet.cidr,
        "usable": subnet.usable,
        "required": subnet.required,
        "fits": subnet.fits,
    }


def _node_subnet_plan(subnet: NodeSubnetDemand) -> NodeSubnetPlan:
    return NodeSubnetPlan(
        **_fit_of(subnet),
        prefix_delegation=subnet.prefix_delegation,
        node_groups=tuple(
            NodeSubnetGroup(p.group, p.index + 1, p.nodes, p.worst_case) for p in subnet.parts
        ),
    )


def _pod_subnet_plan(pods: PodSubnetDemand) -> PodSubnetPlan:
    return PodSubnetPlan(
        **_fit_of(pods),
        node_groups=tuple(
            PodSubnetGroup(
                name=g.name,
                nodes=g.nodes,
                max_pods=g.pod_addressing.max_pods,
                prefixes_per_node=g.pod_addressing.prefixes,
                addresses_per_node=g.pod_addressing.addresses,
                blocks_per_node=g.pod_addressing.blocks,
                addresses=g.pod_subnet_addresses,
            )
            for g in pods.node_groups
            if g.pod_addressing is not None
        ),
    )


def _workload_cost_lines(w: WorkloadPlan, region: str, prices: PriceTable) -> list[CostLine]:
    """The instances of one workload row and its file system, as cost lines."""
    lines = [
        instance_hours(
            prices,
            region,
            w.instance_type,
            item=f"{w.name}: {w.instance_type}",
            quantity=w.nodes,
            owner=w.name,
        )
    ]
    s = w.storage
    if s is not None:
        lines.append(
            CostLine(
                item=f"{w.name}: FSx for Lustre {s.storage_capacity_gib:,} GiB at "
                f"{s.throughput_mb_s_per_tib} MB/s/TiB",
                quantity=s.storage_capacity_gib,
                unit="GiB-hour",
                unit_usd_per_hour=(
                    None
                    if s.usd_per_month is None
                    else s.usd_per_month / s.storage_capacity_gib / HOURS_PER_MONTH
                ),
                source=prices.source_of("fsx_lustre_usd_per_gb_month", region),
                priced=f"FSx for Lustre {DEPLOYMENT_TYPE} at {s.throughput_mb_s_per_tib} MB/s/TiB",
                owner=w.name,
                no_price=prices.no_price_reason(region, "fsx_lustre"),
            )
        )
    return lines


def _clusters(profile: Profile) -> tuple[dict[str, Any], ...]:
    """Each EKS cluster (stack, workloads) with each workload's namespace, queue and the
    quota of its node pools, as the stacks build them."""
    options = deployment_options(profile)
    out = []
    for cluster in options.clusters.values():
        queues = []
        for name in cluster.workloads:
            w = options.workloads[name]
            if not w.node_pools:  # HyperPod nodes: no queue of the library's
                continue
            queues.append(
                {
                    "workload": name,
                    "namespace": w.namespace,
                    "local_queue": w.local_queue,
                    "cluster_queue": w.cluster_queue,
                    "pools": [
                        {
                            "flavor": p.flavor,
                            "quota": capacity_quota(p.instance_type, p.max_size),
                        }
                        for p in w.node_pools
                    ],
                }
            )
        out.append(
            {
                "stack": f"{profile.platform.name}-{cluster.stack_suffix}",
                "dedicated": cluster.dedicated,
                "workloads": list(cluster.workloads),
                "queues": queues,
            }
        )
    return tuple(out)


def _node_groups(workloads: Sequence[WorkloadConfig]) -> list[WorkloadConfig]:
    """Each workload, followed by its RL rollout group (``post_training.rollout``) as a row of
    its own: on-demand nodes of the rollout type, no storage, no training goal."""
    rows: list[WorkloadConfig] = []
    for workload in workloads:
        rows.append(workload)
        if isinstance(workload, PostTrainingConfig) and workload.rollout.enabled:
            rollout = workload.rollout
            rows.append(
                dataclasses.replace(
                    workload,
                    name=f"{workload.name}.rollout",
                    instance_type=rollout.instance_type,
                    instance_count=rollout.instance_count,
                    capacity=CapacityConfig(),
                    storage=dataclasses.replace(workload.storage, enabled=False),
                    training_goal=TrainingGoalConfig(),
                    rollout=RolloutConfig(),
                )
            )
    return rows


def pcs_note(nodes: int) -> str:
    """What ``fmc plan`` says of an AWS PCS workload: its cluster's size tier (the nodes and
    the login node; the size cannot change after creation), one cluster creating per region
    at a time, and what the cost leaves out."""
    size = cluster_size_for(nodes + 1)
    tier = (
        f"PCS cluster size {size.value} (up to {PCS_MAX_NODES[size]} nodes and "
        f"{PCS_MAX_JOBS[size]:,} jobs; {nodes} accelerated + 1 login)"
        if size is not None
        else "more nodes than a LARGE PCS cluster runs"
    )
    return (
        f"{tier}; PCS creates one cluster per account and region at a time, so deploy PCS "
        f"workloads one after another; the cost leaves out the PCS controller fee of the size "
        f"and the {LOGIN_INSTANCE_TYPE} login node"
    )


def _cost_basis(workload: WorkloadConfig) -> str:
    if workload.orchestrator in (Orchestrator.HYPERPOD_EKS, Orchestrator.HYPERPOD_SLURM):
        return (
            "EC2 On-Demand list price; SageMaker HyperPod bills ml.* instances (or the training "
            "plan's upfront fee) at its own rates"
        )
    if workload.capacity.kind is CapacityKind.CAPACITY_BLOCK:
        return (
            "EC2 On-Demand list price for comparison; a Capacity Block is paid up front at "
            "purchase (see fmc capacity search)"
        )
    if workload.capacity.kind is CapacityKind.ODCR:
        return "EC2 On-Demand list price (an ODCR bills at the On-Demand rate, used or not)"
    return "EC2 On-Demand list price"


def _plan_workload(
    workload: WorkloadConfig,
    spec: InstanceSpec,
    layout: EfaLayout | None,
    group: NodeGroupDemand,
    region: str,
    prices: PriceTable,
    goal: TrainingGoal | None,
    problems: Problems,
) -> WorkloadPlan:
    nodes = workload.instance_count
    notes: list[str] = []
    if workload.orchestrator is Orchestrator.PCS:
        notes.append(pcs_note(nodes))
    efa_interfaces = (
        efa_interface_count(efa_interface_layout(spec, layout)) if layout is not None else 0
    )
    instance_price = prices.on_demand_usd_per_hour(region, spec.name)
    compute = instance_price * nodes if instance_price is not None else None

    storage = _plan_storage(workload, region, prices, goal, problems, notes)
    storage_hourly = (
        storage.usd_per_month / HOURS_PER_MONTH
        if storage is not None and storage.usd_per_month is not None
        else (0.0 if storage is None else None)
    )
    total = compute + storage_hourly if compute is not None and storage_hourly is not None else None
    goal_plan = _plan_goal(goal, spec, nodes, (total, compute), notes) if goal is not None else None
    return WorkloadPlan(
        name=workload.name,
        orchestrator=workload.orchestrator.value,
        capacity_kind=workload.capacity.kind.value,
        instance_type=spec.name,
        nodes=nodes,
        accelerator=spec.accelerator_name,
        accelerators_per_node=spec.accelerator_count,
        accelerators=spec.accelerator_count * nodes,
        accelerator_memory_gib=spec.accelerator_memory_gib,
        total_accelerator_memory_gib=spec.total_accelerator_memory_gib * nodes,
        efa_layout=layout.value if layout is not None else "none",
        efa_interfaces_per_node=efa_interfaces,
        efa_bandwidth_gbps_per_node=spec.total_efa_bandwidth_gbps,
        efa_bandwidth_gbps_total=spec.total_efa_bandwidth_gbps * nodes,
        ip_addresses_per_node=group.addressing.per_node,
        ip_addresses=group.addresses,
        max_nodes=group.nodes,
        kubelet_max_pods=group.addressing.kubelet_max_pods,
        pod_ip_capacity=group.addressing.pod_ip_capacity,
        pods_without_address=group.addressing.pods_without_address,
        cost=WorkloadCost(
            instance_usd_per_hour=instance_price,
            compute_usd_per_hour=compute,
            storage_usd_per_hour=storage_hourly,
            usd_per_hour=total,
            basis=_cost_basis(workload),
        ),
        storage=storage,
        goal=goal_plan,
        notes=tuple(notes),
        node_roll=node_roll(
            group.part_sizes(),
            reserved=workload.capacity.kind is not CapacityKind.ON_DEMAND,
            capacity_block=workload.capacity.kind is CapacityKind.CAPACITY_BLOCK,
        )
        if workload.orchestrator is Orchestrator.EKS
        else None,
    )


def _plan_storage(
    workload: WorkloadConfig,
    region: str,
    prices: PriceTable,
    goal: TrainingGoal | None,
    problems: Problems,
    notes: list[str],
) -> StoragePlan | None:
    storage = workload.storage
    if not storage.enabled:
        return None
    prefix = f"{workload.name}.storage"
    try:
        request = workload_fsx_sizing_request(workload)
    except FmValidationError as error:
        problems.extend(f"{workload.name}.{p}" for p in error.problems)
        return None
    reasoning: tuple[str, ...] = ()
    checkpoint_gib: float | None = None
    if request is not None:
        try:
            result = size_fsx_lustre(request)
        except FmValidationError as error:
            problems.extend(f"{prefix}.{p}" for p in error.problems)
            return None
        source = "sized"
        capacity, tier = result.storage_capacity_gib, result.throughput_mb_s_per_tib
        checkpoint_gib = result.checkpoint_size_gib
        reasoning = result.reasoning
    else:
        source = (
            "explicit"
            if storage.storage_capacity_gib is not None
            or storage.throughput_mb_s_per_tib is not None
            else "default"
        )
        # Explicit settings were checked when the profile loaded (the FSx rules of
        # config.rules); the defaults are FSx's own floor-1 defaults, valid by construction.
        capacity = storage.storage_capacity_gib or DEFAULT_STORAGE_CAPACITY_GIB
        tier = storage.throughput_mb_s_per_tib or DEFAULT_PER_UNIT_THROUGHPUT[DEPLOYMENT_TYPE] or 0
        if goal is not None:
            checkpoint_gib = goal.parameters * DEFAULT_BYTES_PER_PARAMETER / _BYTES_PER_GIB
            notes.append(
                f"checkpoint size from the training goal: {goal.parameters:,.0f} params x "
                f"{DEFAULT_BYTES_PER_PARAMETER:g} B"
            )
    throughput = aggregate_throughput_mb_s(capacity, tier)
    write_seconds = (
        checkpoint_gib * _BYTES_PER_GIB / _BYTES_PER_MB / throughput
        if checkpoint_gib is not None and throughput > 0
        else None
    )
    unit_price = prices.fsx_usd_per_gb_month(region, DEPLOYMENT_TYPE.value, tier)
    return StoragePlan(
        source=source,
        deployment_type=DEPLOYMENT_TYPE.value,
        storage_capacity_gib=capacity,
        throughput_mb_s_per_tib=tier,
        aggregate_throughput_mb_s=throughput,
        efa_enabled=storage.efa_enabled,
        checkpoint_size_gib=checkpoint_gib,
        checkpoint_write_seconds=write_seconds,
        usd_per_month=capacity * unit_price if unit_price is not None else None,
        reasoning=reasoning,
    )


def _at(result: GoalEstimate | None, usd_per_hour: float | None) -> float | None:
    """The estimated run's wall-clock hours at ``usd_per_hour`` (None when either is missing)."""
    if result is None or usd_per_hour is None:
        return None
    return result.wall_clock_hours * usd_per_hour


def _plan_goal(
    goal: TrainingGoal,
    spec: InstanceSpec,
    nodes: int,
    rates: tuple[float | None, float | None],
    notes: list[str],
) -> GoalPlan:
    """The training goal on ``nodes`` nodes of ``spec``, costed at ``rates`` (the workload's
    $/hour with its file system, and its nodes' alone; None where a price is missing); without
    a peak FLOPS figure for its accelerator, the goal alone with a note saying why (also added
    to ``notes``)."""
    peak = peak_flops(spec.accelerator_name)
    result: GoalEstimate | None = None
    note: str | None = None
    if peak is None:
        note = f"no peak FLOPS figure for {spec.accelerator_name} ({spec.name})"
        notes.append(note)
    else:
        result = estimate(goal, accelerators=spec.accelerator_count * nodes, peak=peak)
    return GoalPlan(
        parameters=goal.parameters,
        tokens=goal.tokens,
        mfu=goal.mfu,
        flops=goal.flops,
        peak_bf16_dense_tflops=None if result is None else result.peak.bf16_dense_tflops,
        peak_source=None if result is None else result.peak.source,
        accelerator_hours=None if result is None else result.accelerator_hours,
        wall_clock_days=None if result is None else result.days,
        usd=_at(result, rates[0]),
        nodes_usd=_at(result, rates[1]),
        note=note,
    )


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def _money(value: float) -> str:
    """A dollar figure; a missing price never gets here (callers print "no price" and why)."""
    return f"${value:,.2f}"


def _figure(value: float, decimals: int) -> str:
    """``value`` with ``decimals`` places, or 3 significant digits when that would show 0."""
    if value == 0 or abs(value) >= 10**-decimals:
        return f"{value:,.{decimals}f}"
    return f"{value:.3g}"


def _unit_money(value: float | None) -> str:
    """A unit price: enough digits for per-GiB-hour figures."""
    if value is None:
        return "no price"
    return f"${value:,.4f}" if value >= 0.01 else f"${value:.3g}"


def _pod_ip_note(workloads: Sequence[WorkloadPlan]) -> list[str]:
    """The one line on node groups whose kubelet admits more pods than the VPC CNI can
    address (the "max pods" and "pod IPs" columns above)."""
    short = [w.name for w in workloads if w.pods_without_address]
    if not short:
        return []
    return [
        f"  {', '.join(short)}: kubelet admits more pods per node (max pods) than the VPC CNI can "
        "address (pod IPs: network card 0 only, less its efa-only slot); pods beyond that stay "
        "ContainerCreating"
    ]


def _nodes_money(w: WorkloadPlan) -> str:
    """A workload's nodes by the hour (its file system is a line of its own: the FSx table
    and the cost lines show it, never folded in here)."""
    compute = w.cost.compute_usd_per_hour
    return "no price" if compute is None else _money(compute)


def _storage_money(s: StoragePlan) -> str:
    """A file system's $/hour, the figure the cost lines add to the total."""
    return "no price" if s.usd_per_month is None else _money(s.usd_per_month / HOURS_PER_MONTH)


def _goal_cost_line(w: WorkloadPlan, g: GoalPlan) -> str:
    """What the training goal costs at the workload's hourly rate (nodes and file system);
    with a price missing, what the priced part costs and what it leaves out."""
    hourly = w.cost.usd_per_hour
    if g.usd is not None and hourly is not None:
        return f"  cost        {_money(g.usd)} at {w.name}'s {_money(hourly)}/hour (nodes and FSx)"
    compute = w.cost.compute_usd_per_hour
    if g.nodes_usd is not None and compute is not None:
        return (
            f"  cost        {_money(g.nodes_usd)} for the nodes alone at {_money(compute)}/hour; "
            "its file system has no price (see the cost lines below)"
        )
    return "  cost        no price for its nodes (see the cost lines below)"


def _render_pod_subnet(subnet: SubnetPlan) -> list[str]:
    pods = subnet.pod_subnet
    if pods is None:
        return []
    lines = [
        "",
        f"pod networking: VPC CNI custom networking with prefix delegation; pod subnet "
        f"{pods.cidr} in {subnet.availability_zone} ({pods.usable // 16:,} whole /28s "
        f"free for prefixes) needs {pods.required // 16:,} - "
        + ("fits" if pods.fits else "DOES NOT FIT"),
    ]
    for g in pods.node_groups:
        lines.append(
            f"  {g.name}: {g.nodes:,} nodes x {g.blocks_per_node} /28s (maxPods "
            f"{g.max_pods}: {g.prefixes_per_node} prefixes incl. 1 spare, and the pod "
            f"ENI's own address, which may spoil a /28) = {g.addresses // 16:,}"
        )
    return lines


def _render_node_rolls(workloads: Sequence[WorkloadPlan]) -> list[str]:
    """How long a launch-template or AMI change takes to replace every node of each pool."""
    rolls = [(w.name, w.node_roll) for w in workloads if w.node_roll is not None]
    if not rolls:
        return []
    return [
        "",
        "node roll (a launch-template or AMI change replaces every node; stop or checkpoint "
        "jobs first):",
        *(f"  {name}: {roll.describe()}" for name, roll in rolls if roll is not None),
    ]


def _render_node_subnets(subnet: SubnetPlan) -> list[str]:
    if not subnet.node_subnets:
        return []
    moved = sum(g.nodes for s in subnet.node_subnets for g in s.node_groups)
    lines = [
        "",
        f"node subnets in {subnet.availability_zone}: {moved:,} nodes in "
        f"{len(subnet.node_subnets)} more subnet(s), each spanning a secondary VPC CIDR block; "
        "per node "
        + (
            "(prefixes + own addresses) whole /28s, whatever addresses EC2 picks"
            if subnet.node_subnets[0].prefix_delegation
            else "its addresses"
        ),
    ]
    for s in subnet.node_subnets:
        groups = ", ".join(
            f"{g.name} group {g.group} ({g.nodes:,} nodes, {g.addresses:,})" for g in s.node_groups
        )
        lines.append(
            f"  {s.cidr} ({s.usable:,} usable) needs {s.required:,} - "
            + ("fits" if s.fits else "DOES NOT FIT")
            + f": {groups}"
        )
    return lines


def _render_limits(plan: Plan) -> list[str]:
    reached = plan.reached_limits
    lines = [""]
    series = {u.limit.key: u for u in plan.limits if u.limit.service.endswith("Prometheus")}
    active = series.get("amp.active_series_per_workspace")
    rate = series.get("amp.ingestion_samples_per_second_per_workspace")
    if active is not None and rate is not None:
        lines.append(
            f"Managed Prometheus: {active.what} = {active.used:,} active series "
            f"({active.share:.0%} of {active.limit.value:,}), {rate.used:,} samples/s "
            f"({rate.share:.0%} of {rate.limit.value:,})"
        )
    lines.append(f"AWS limits at 80% or more: {len(reached) or 'none'}")
    for usage in reached:
        fix = (
            "request an increase in Service Quotas before the deploy"
            if usage.limit.adjustable
            else "a fixed limit: change the profile"
        )
        lines.append(f"  {usage.line()}; {fix} ({usage.limit.source})")
        if usage.limit.note:
            lines.append(f"    {usage.limit.note}")
    return lines


def render_plan(plan: Plan) -> str:
    """The plan as terminal tables."""
    from fm_constructs.cli.output import render_table  # local: keeps the module import light

    lines = [f"plan of {plan.source} ({plan.region}, GPU zone {plan.availability_zone})", ""]
    if not plan.workloads:
        lines.append("no workload is enabled: the cost lines below are the platform's own")
    else:
        lines.append(
            render_table(
                [
                    "workload",
                    "instance",
                    "nodes",
                    "nodes $/hour",
                    "accelerators",
                    "acc. memory GiB",
                    "EFA/node",
                    "EFA Gbps/node",
                    "EFA Gbps total",
                ],
                [
                    [
                        w.name,
                        w.instance_type,
                        w.nodes,
                        _nodes_money(w),
                        f"{w.accelerators} x {w.accelerator}",
                        round(w.total_accelerator_memory_gib),
                        w.efa_interfaces_per_node,
                        round(w.efa_bandwidth_gbps_per_node),
                        round(w.efa_bandwidth_gbps_total),
                    ]
                    for w in plan.workloads
                ],
            )
        )
    stored = [w for w in plan.workloads if w.storage is not None]
    if stored:
        lines += ["", "FSx for Lustre (PERSISTENT_2 SSD)"]
        rows: list[list[object]] = []
        for w in stored:
            s = w.storage
            assert s is not None
            rows.append(
                [
                    w.name,
                    s.source,
                    s.storage_capacity_gib,
                    s.throughput_mb_s_per_tib,
                    _storage_money(s),
                    "no price" if s.usd_per_month is None else _money(s.usd_per_month),
                    round(s.aggregate_throughput_mb_s),
                    "-" if s.checkpoint_size_gib is None else f"{s.checkpoint_size_gib:,.1f}",
                    "-"
                    if s.checkpoint_write_seconds is None
                    else f"{s.checkpoint_write_seconds:,.0f}",
                ]
            )
        lines.append(
            render_table(
                [
                    "workload",
                    "sizing",
                    "capacity GiB",
                    "MB/s/TiB",
                    "$/hour",
                    "$/month",
                    "MB/s",
                    "checkpoint GiB",
                    "write s",
                ],
                rows,
            )
        )
    subnet = plan.subnet
    lines += [
        "",
        f"IP budget: private subnet /{subnet.prefix} in {subnet.availability_zone} "
        f"({subnet.usable:,} usable of {subnet.addresses:,}); the largest deployment needs "
        f"{subnet.required:,} - " + ("fits" if subnet.fits else f"SHORT by {-subnet.free:,}"),
        "  per node: the layout's interface addresses (pods take theirs from the pod subnet)"
        if subnet.pod_subnet is not None
        else "  per node: the layout's interface addresses plus /28 prefixes for kubelet's "
        "maxPods (VPC CNI prefix delegation, WARM_PREFIX_TARGET=1)"
        if subnet.networking == "prefix-delegation"
        else "  per node: the layout's interface addresses plus the VPC CNI's ENIs on network card "
        "0 "
        + (
            f"filled for {DEFAULT_POD_COUNT} (WARM_ENI_TARGET=1)"
            if subnet.pod_ips_per_node is None
            else f"filled for {subnet.pod_ips_per_node} pods"
        ),
    ]
    lines.append(
        render_table(
            [
                "node group",
                "layout",
                "max nodes",
                "max pods",
                "pod IPs",
                "addresses/node",
                "addresses",
            ],
            [
                [
                    w.name,
                    w.efa_layout,
                    w.max_nodes,
                    w.kubelet_max_pods or "-",
                    w.pod_ip_capacity or "-",
                    w.ip_addresses_per_node,
                    w.ip_addresses,
                ]
                for w in plan.workloads
            ],
        )
    )
    lines += _pod_ip_note(plan.workloads)
    if subnet.fixed:
        lines.append("  other: " + ", ".join(f"{what} {n:,}" for what, n in subnet.fixed))
    if subnet.node_subnets:
        lines.append(
            "  moved to node subnets (below), not counted here: "
            + ", ".join(
                f"{g.name} group {g.group}" for s in subnet.node_subnets for g in s.node_groups
            )
        )
    lines += _render_pod_subnet(subnet)
    lines += _render_node_subnets(subnet)
    lines += _render_node_rolls(plan.workloads)
    lines += _render_limits(plan)
    for w in plan.workloads:
        if w.goal is None:
            continue
        g = w.goal
        lines += ["", f"training goal on {w.name} ({w.accelerators} x {w.accelerator})"]
        lines.append(
            f"  compute     6 x {g.parameters:.3g} params x {g.tokens:.3g} tokens = "
            f"{g.flops:.3g} FLOPs"
        )
        if g.accelerator_hours is None or g.wall_clock_days is None:
            lines.append(
                f"  {g.note}: cannot estimate time; pass a cluster with a known accelerator"
            )
            continue
        lines.append(
            f"  throughput  {g.peak_bf16_dense_tflops:,.0f} TFLOPS peak dense BF16 per "
            f"accelerator x {g.mfu:.0%} MFU"
        )
        lines.append(
            f"  time        {_figure(g.accelerator_hours, 0)} accelerator-hours = "
            f"{_figure(g.wall_clock_days, 1)} days on {w.accelerators} accelerators"
        )
        lines.append(_goal_cost_line(w, g))
    lines += ["", "cost by the hour (list prices; usage-billed parts not included)"]
    sources: dict[str, int] = {}
    rows = []
    for c in plan.costs:
        ref = sources.setdefault(c.source, len(sources) + 1)
        rows.append(
            [
                c.item,
                "no price" if c.usd_per_hour is None else _money(c.usd_per_hour),
                f"{c.quantity:,g}",
                c.unit,
                "usage" if c.usage_only else _unit_money(c.unit_usd_per_hour),
                f"[{ref}]" + (f" + {c.usage}" if c.usage else ""),
            ]
        )
    lines.append(render_table(["item", "$/hour", "quantity", "unit", "$/unit", "source"], rows))
    lines.extend(f"  [{ref}] {source}" for source, ref in sources.items())
    total = plan.usd_per_hour
    lines += [
        "",
        f"total: {_money(total)}/hour (~{_money(total * HOURS_PER_MONTH)}/month running 24/7)"
        + (" PARTIAL: lines without a price are left out" if plan.partial else ""),
        f"  of which platform: {_money(plan.platform_usd_per_hour)}/hour (the lines without a "
        "workload name), billed even with every workload disabled",
    ]
    lines.extend(f"  {message}; add it with --prices FILE" for message in plan.missing_prices)
    for w in plan.workloads:
        lines.append(f"  {w.name}: {w.cost.basis}")
        lines.extend(f"  {w.name}: note: {note}" for note in w.notes)
    for cluster in plan.clusters:
        kind = "dedicated" if cluster["dedicated"] else "shared"
        lines.append(f"EKS cluster {cluster['stack']} ({kind}): {', '.join(cluster['workloads'])}")
        for queue in cluster["queues"]:
            for pool in queue["pools"]:
                quota = ", ".join(f"{k}={v}" for k, v in pool["quota"].items())
                lines.append(
                    f"  {queue['namespace']}/{queue['local_queue']} -> flavor {pool['flavor']}: "
                    f"{quota}"
                )
    lines.append(
        f"prices: list prices as of {plan.prices_as_of}; not live; override with --prices FILE"
    )
    if plan.warnings:
        lines += ["", "warnings:"]
        lines.extend(f"  - {w}" for w in plan.warnings)
    if plan.problems:
        lines += ["", "PROBLEMS (exit 1):"]
        lines.extend(f"  - {p}" for p in plan.problems)
    return "\n".join(lines)
