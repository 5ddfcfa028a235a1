"""The one mapping from a validated profile to the options of the workload patterns.

The stacks build from these options and ``fmc plan`` prints them, so what the plan shows (which
cluster a workload runs on, its node pools, its Kueue queue and quotas) is what the templates
hold by construction. Pure data: no aws_cdk import.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fm_constructs.config.model import (
    SHARED_CLUSTER,
    CapacityConfig,
    Orchestrator,
    Profile,
    WorkloadConfig,
)
from fm_constructs.config.subnet_demand import accelerated_max_pods, subnet_demand
from fm_constructs.domain import names
from fm_constructs.domain.names import MAIN_POOL as MAIN_POOL
from fm_constructs.domain.names import ROLLOUT_POOL as ROLLOUT_POOL
from fm_constructs.domain.names import WORKLOAD_ROLE_LABEL as ROLE_LABEL
from fm_constructs.domain.workload_data import DATA_INPUTS as DATA_INPUTS
from fm_constructs.domain.workload_data import DATA_OUTPUTS as DATA_OUTPUTS
from fm_constructs.domain.workload_data import DATA_PREFIXES as DATA_PREFIXES
from fm_constructs.domain.workload_data import FSX_DIRECTORIES as FSX_DIRECTORIES
from fm_constructs.domain.workload_data import OPERATORS as OPERATORS
from fm_constructs.planning.aws_limits import node_groups_for
from fm_constructs.planning.kueue_quota import capacity_quota as capacity_quota
from fm_constructs.planning.pod_networking import PodNetworking


@dataclass(frozen=True)
class NodePoolOptions:
    """One accelerated node group of a workload (one Kueue ResourceFlavor).

    ``flavor`` names the ResourceFlavor and is the value of the node label
    :data:`~fm_constructs.domain.names.NODE_POOL_LABEL` the group carries; ``taints`` and
    ``labels`` come on top of the accelerator taint and labels every accelerated node gets.
    """

    name: str
    flavor: str
    instance_type: str
    desired_size: int
    min_size: int
    max_size: int
    capacity: CapacityConfig = field(default_factory=CapacityConfig)
    labels: tuple[tuple[str, str], ...] = ()
    taints: tuple[tuple[str, str], ...] = ()

    @property
    def autoscaled(self) -> bool:
        """True when the group can grow (the Cluster Autoscaler then manages it)."""
        return self.max_size > self.min_size

    @property
    def node_groups(self) -> int:
        """Managed node groups the pool is built from (EKS allows 450 nodes in one)."""
        return node_groups_for(self.max_size)


@dataclass(frozen=True)
class WorkloadOptions:
    """What a workload pattern builds on its cluster."""

    name: str
    orchestrator: Orchestrator
    cluster: str | None
    namespace: str
    service_account: str
    cluster_queue: str
    local_queue: str
    fsx_claim: str
    node_pools: tuple[NodePoolOptions, ...]
    operators: frozenset[str]
    #: Data-bucket prefixes the workload writes (its outputs, :data:`DATA_OUTPUTS`).
    data_prefixes: tuple[str, ...]
    #: Data-bucket prefixes the workload only reads (:data:`DATA_INPUTS`).
    read_prefixes: tuple[str, ...] = ()
    #: kubelet maxPods of the accelerated nodes (None: the VPC CNI's own figure).
    max_pods_per_node: int | None = None

    @property
    def on_eks(self) -> bool:
        return self.cluster is not None


@dataclass(frozen=True)
class ClusterOptions:
    """One EKS cluster: the shared one, or a workload's dedicated one."""

    key: str
    workloads: tuple[str, ...]
    operators: frozenset[str]
    dedicated: bool

    @property
    def stack_suffix(self) -> str:
        """``cluster`` for the shared cluster, ``<workload>-cluster`` for a dedicated one."""
        if not self.dedicated:
            return "cluster"
        return f"{self.key.replace('_', '-')}-cluster"


@dataclass(frozen=True)
class DeploymentOptions:
    """Every cluster and workload of a profile."""

    clusters: dict[str, ClusterOptions]
    workloads: dict[str, WorkloadOptions]
    #: Where pods get addresses (``auto`` resolved by the IP budget).
    pod_networking: PodNetworking = PodNetworking.NODE_SUBNET
    #: Secondary CIDR blocks of the GPU zone's node subnets (the IP budget's node_subnets).
    node_subnet_cidrs: tuple[str, ...] = ()
    #: Per node-group demand (``pretraining``, ``post_training.rollout``): the subnet of each
    #: of its managed node groups, 0 for the private subnet, i for node_subnet_cidrs[i - 1].
    #: A pool that is not listed stays in the private subnet.
    node_group_subnets: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def custom_networking(self) -> bool:
        return self.pod_networking is PodNetworking.CUSTOM_NETWORKING

    @property
    def prefix_delegation(self) -> bool:
        """Prefix delegation in the node subnet (custom networking has its own)."""
        return self.pod_networking is PodNetworking.PREFIX_DELEGATION

    def cluster_of(self, workload: str) -> ClusterOptions | None:
        key = self.workloads[workload].cluster
        return None if key is None else self.clusters[key]


def node_pools(w: WorkloadConfig) -> tuple[NodePoolOptions, ...]:
    """The accelerated node groups of ``w`` (EKS): the main group and, for RL post-training,
    the rollout group labelled and tainted ``workload-role=rollout``."""
    maximum = w.largest_size
    pools = [
        NodePoolOptions(
            name=MAIN_POOL,
            flavor=names.resource_flavor_name(w.name, MAIN_POOL),
            instance_type=w.instance_type,
            desired_size=w.instance_count,
            min_size=w.instance_count,
            max_size=maximum,
            capacity=w.capacity,
        )
    ]
    rollout = w.rollout_group
    if rollout is not None:
        pools.append(
            NodePoolOptions(
                name=ROLLOUT_POOL,
                flavor=names.resource_flavor_name(w.name, ROLLOUT_POOL),
                instance_type=rollout.instance_type,
                desired_size=rollout.instance_count,
                min_size=rollout.instance_count,
                max_size=rollout.instance_count,
                labels=((ROLE_LABEL, ROLLOUT_POOL),),
                taints=((ROLE_LABEL, ROLLOUT_POOL),),
            )
        )
    return tuple(pools)


def workload_options(
    w: WorkloadConfig, networking: PodNetworking = PodNetworking.NODE_SUBNET
) -> WorkloadOptions:
    """Options of one enabled workload under ``networking``."""
    return WorkloadOptions(
        name=w.name,
        orchestrator=w.orchestrator,
        cluster=w.eks_cluster,
        namespace=names.workload_namespace(w.name),
        service_account=names.service_account_name(w.name),
        cluster_queue=names.cluster_queue_name(w.name),
        local_queue=names.local_queue_name(w.name),
        fsx_claim=names.fsx_claim_name(w.name),
        node_pools=node_pools(w) if w.orchestrator is Orchestrator.EKS else (),
        operators=OPERATORS[w.name],
        data_prefixes=DATA_OUTPUTS[w.name],
        read_prefixes=DATA_INPUTS[w.name],
        max_pods_per_node=(
            accelerated_max_pods(w)
            if networking in (PodNetworking.CUSTOM_NETWORKING, PodNetworking.PREFIX_DELEGATION)
            else w.max_pods_per_node
        ),
    )


def deployment_options(profile: Profile) -> DeploymentOptions:
    """Options of every enabled workload and of the clusters they run on: one shared cluster
    for every EKS-orchestrated workload unless it asks for ``dedicated_cluster``."""
    demand = subnet_demand(profile)
    networking = demand.networking
    workloads = {w.name: workload_options(w, networking) for w in profile.enabled_workloads}
    members: dict[str, list[str]] = {}
    for options in workloads.values():
        if options.cluster is not None:
            members.setdefault(options.cluster, []).append(options.name)
    clusters = {
        key: ClusterOptions(
            key=key,
            workloads=tuple(names_),
            operators=frozenset().union(*(workloads[n].operators for n in names_)),
            dedicated=key != SHARED_CLUSTER,
        )
        for key, names_ in members.items()
    }
    moved = {p.group for subnet in demand.node_subnets for p in subnet.parts}
    return DeploymentOptions(
        clusters=clusters,
        workloads=workloads,
        pod_networking=networking,
        node_subnet_cidrs=tuple(subnet.cidr for subnet in demand.node_subnets),
        node_group_subnets={
            g.name: tuple(demand.subnet_of(g.name, i) for i in range(len(g.part_sizes())))
            for g in demand.node_groups
            if g.name in moved
        },
    )
