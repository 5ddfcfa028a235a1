"""The one mapping from a validated profile to the options of the deployment pattern.

:func:`deployment_options` turns a profile into complete, frozen options: the platform (VPC,
observability), each EKS cluster (its members, operators, device plugins), and per workload
its nodes and their capacity, node pools, rollout group, file system (settings or sizing
request), model server and autoscaling, HyperPod settings. The deployment pattern
(:mod:`fm_constructs.patterns.deployment`) builds from these options alone and ``fmc plan``
prints them, so what the plan shows is what the templates hold by construction. Pure data:
no aws_cdk import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from fm_constructs.catalog import get_instance_type
from fm_constructs.catalog.model import EksAmiFamily, lustre_efa_client_family
from fm_constructs.config.model import (
    SHARED_CLUSTER,
    CapacityConfig,
    CapacityKind,
    InferenceConfig,
    LoadBalancer,
    NatGateways,
    Orchestrator,
    PlatformConfig,
    Profile,
    ServingMetric,
    TrainingWorkloadConfig,
    WorkloadConfig,
)
from fm_constructs.config.plan import deployment_plan
from fm_constructs.config.sizing import workload_fsx_sizing_request
from fm_constructs.config.subnet_demand import accelerated_max_pods
from fm_constructs.domain import names
from fm_constructs.domain.defaults import ROOT_VOLUME_SIZE_GIB
from fm_constructs.domain.names import MAIN_POOL as MAIN_POOL
from fm_constructs.domain.names import ROLLOUT_POOL as ROLLOUT_POOL
from fm_constructs.domain.names import WORKLOAD_ROLE_LABEL as ROLE_LABEL
from fm_constructs.domain.users import ClusterUser
from fm_constructs.domain.workload_data import DATA_INPUTS as DATA_INPUTS
from fm_constructs.domain.workload_data import DATA_OUTPUTS as DATA_OUTPUTS
from fm_constructs.domain.workload_data import DATA_PREFIXES as DATA_PREFIXES
from fm_constructs.domain.workload_data import FSX_DIRECTORIES as FSX_DIRECTORIES
from fm_constructs.domain.workload_data import OPERATORS as OPERATORS
from fm_constructs.planning.aws_limits import node_groups_for
from fm_constructs.planning.deployment_plan import DeploymentPlan
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.fsx_sizing import FsxSizingRequest
from fm_constructs.planning.kubernetes_versions import DEFAULT_KUBERNETES_VERSION
from fm_constructs.planning.kueue_quota import capacity_quota as capacity_quota
from fm_constructs.planning.pod_networking import PodNetworking
from fm_constructs.planning.subnet_demand import NodeGroupRequest
from fm_constructs.rules.profile import EFA_CLIENT_ORCHESTRATORS

_T = TypeVar("_T")

#: How a workload is named in its EKS cluster's stack description, and in its own stacks'.
_CLUSTER_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training",
    "inference": "inference",
}
_WORKLOAD_TITLES = {"pretraining": "pre-training", "post_training": "post-training (SFT, RL)"}


@dataclass(frozen=True)
class StackOptions:
    """One CloudFormation stack of the deployment: its name (``<deployment>-<part>``), its
    description and ``part``, the key of what it holds (a cluster key or a workload name;
    empty for the platform's stacks)."""

    name: str
    description: str
    part: str = ""
    termination_protection: bool = False


def _stack(platform: PlatformConfig, *suffix: str, **values: Any) -> StackOptions:
    """Stack ``<deployment>-<suffix...>`` (underscores written as hyphens)."""
    return StackOptions("-".join((platform.name, *suffix)).replace("_", "-"), **values)


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
class CapacityOptions:
    """Where a group of accelerated nodes gets its capacity: the profile's
    ``[<workload>.capacity]`` table (kind, reservation ids, schedule) for nodes of
    ``instance_type`` in ``availability_zone``, the zone every reservation must be in."""

    config: CapacityConfig
    availability_zone: str
    instance_type: str

    @property
    def kind(self) -> CapacityKind:
        return self.config.kind


@dataclass(frozen=True)
class FileSystemOptions:
    """A workload's own FSx for Lustre file system: its settings or sizing request, and the
    directories linked to the data bucket (only ``exported_prefixes`` are written back)."""

    storage_capacity_gib: int | None
    throughput_mb_s_per_tib: int | None
    #: The request the file system is sized from (None: the explicit numbers above).
    sizing: FsxSizingRequest | None
    metadata_iops: int | None
    efa_enabled: bool
    automatic_backup_retention_days: int
    directories: tuple[tuple[str, str], ...]
    exported_prefixes: tuple[str, ...]

    @property
    def settings(self) -> dict[str, Any]:
        """The file system's own settings, under the keyword names of
        :class:`~fm_constructs.storage.LustreFileSystem`."""
        linked = ("directories", "exported_prefixes")
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in linked}


@dataclass(frozen=True)
class RolloutGroupOptions:
    """The RL rollout (generation) group beside a workload's main nodes: an EKS node pool, or a
    HyperPod instance group (a Slurm partition of its own on HyperPod Slurm)."""

    instance_type: str
    instance_count: int
    launch_template_version: int | None
    #: HyperPod Slurm: the partition of the group (None elsewhere).
    partition_name: str | None


@dataclass(frozen=True)
class ModelServerOptions:
    """The vLLM model server of an inference workload (the keyword arguments of
    :class:`~fm_constructs.patterns.ModelServerSpec`; None: that spec's default)."""

    model_s3_prefix: str
    served_model_name: str
    tensor_parallel_size: int
    pipeline_parallel_size: int
    replicas: int
    max_replicas: int
    gpu_memory_utilization: float
    image: str | None = None
    max_model_len: int | None = None


@dataclass(frozen=True)
class AutoscalingOptions:
    """Replica autoscaling of the model server on a serving metric read from Prometheus (the
    model server may grow and observability is on)."""

    metric: ServingMetric
    target: float


@dataclass(frozen=True)
class InferenceOptions:
    """What an inference workload serves and how it is reached."""

    #: Nodes of the main pool at its largest (the autoscaling headroom included).
    max_node_count: int
    model_server: ModelServerOptions | None
    autoscaling: AutoscalingOptions | None
    load_balancer: LoadBalancer
    load_balancer_source_ranges: tuple[str, ...]
    #: ACM certificate of the endpoint's TLS listener (None: plain HTTP on 80).
    tls_certificate_arn: str | None


@dataclass(frozen=True)
class HyperPodOptions:
    """A workload's SageMaker HyperPod cluster (Slurm or EKS)."""

    orchestrator: Orchestrator
    kubernetes_version: str
    admin_role_arns: tuple[str, ...]
    public_access_cidrs: tuple[str, ...]
    #: Training nodes (Slurm accounting and users) rather than inference nodes.
    training: bool
    users: tuple[ClusterUser, ...]


@dataclass(frozen=True, kw_only=True)
class WorkloadOptions:
    """Everything a workload's patterns build: its nodes and their capacity, its file system,
    its Kubernetes names on EKS, or its HyperPod or AWS PCS cluster."""

    name: str
    orchestrator: Orchestrator
    cluster: str | None
    namespace: str
    #: The namespace of its diagnostics jobs (NCCL tests and the like).
    diagnostics_namespace: str
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
    #: IAM roles that submit jobs in its namespaces (on EKS).
    submitter_role_arns: tuple[str, ...] = ()
    #: kubelet maxPods of the accelerated nodes (None: the VPC CNI's own figure).
    max_pods_per_node: int | None = None
    instance_type: str = ""
    instance_count: int = 1
    availability_zone: str = ""
    capacity: CapacityOptions | None = None
    #: The profile's EFA layout (what HyperPod and AWS PCS nodes request).
    efa_layout: EfaLayout = EfaLayout.EFA_ONLY
    #: The EFA layout of the EKS nodes: None for a type without EFA.
    node_efa_layout: EfaLayout | None = EfaLayout.EFA_ONLY
    root_volume_size_gib: int = ROOT_VOLUME_SIZE_GIB
    session_manager: bool = False
    launch_template_version: int | None = None
    rollout: RolloutGroupOptions | None = None
    #: The workload's own file system (None: none, or it mounts ``file_system_of``'s).
    file_system: FileSystemOptions | None = None
    #: The workload whose file system this one mounts (itself, ``pretraining``, or None).
    file_system_of: str | None = None
    #: HyperPod Slurm and AWS PCS nodes that mount the file system over EFA (None: no EFA).
    file_system_efa_clients: int | None = None
    #: Pool name -> the subnet of each of its managed node groups (0: the private subnet, i:
    #: node subnet i - 1), for the pools the IP budget moved into node subnets of their own.
    node_group_subnets: tuple[tuple[str, tuple[int, ...]], ...] = ()
    hyperpod: HyperPodOptions | None = None
    #: The pinned AMI of its AWS PCS nodes (``[<workload>.pcs_ami]`` id; None off 'pcs').
    pcs_ami_id: str | None = None
    inference: InferenceOptions | None = None
    #: The stack of its file system or HyperPod/AWS PCS cluster (None: it has neither).
    stack: StackOptions | None = None
    #: The stack of its EKS node groups and Kubernetes objects (None: not on EKS).
    compute_stack: StackOptions | None = None

    @property
    def on_eks(self) -> bool:
        return self.cluster is not None

    @property
    def owns_file_system(self) -> bool:
        return self.file_system is not None

    @property
    def eks_nodes(self) -> bool:
        """Whether the workload's nodes are EKS managed node groups (its own node pools)."""
        return self.orchestrator is Orchestrator.EKS

    @property
    def has_storage_stack(self) -> bool:
        """Whether the workload has a stack beside its EKS nodes: its own file system, or its
        HyperPod or AWS PCS cluster."""
        return self.stack is not None


@dataclass(frozen=True)
class ClusterOptions:
    """One EKS cluster: the shared one, or a workload's dedicated one."""

    key: str
    workloads: tuple[str, ...]
    operators: frozenset[str]
    dedicated: bool
    #: The stack of its control plane, and of what runs on it (system nodes, add-ons...).
    stack: StackOptions
    addons_stack: StackOptions
    #: The stack of its AMP managed scraper (None: observability off).
    monitoring_stack: StackOptions | None = None
    region: str = ""
    availability_zone: str = ""
    kubernetes_version: str = DEFAULT_KUBERNETES_VERSION
    admin_role_arns: tuple[str, ...] = ()
    public_access_cidrs: tuple[str, ...] = ()
    #: IAM role ARN -> the workload namespaces it submits jobs in.
    submitter_namespaces: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: IAM role ARN -> the diagnostics namespaces it may read (the jobs and their logs), of
    #: the same workloads: privileged pods there are the cluster admins' to start.
    submitter_read_namespaces: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: EKS AMI families of the members' accelerators (their device plugins), sorted.
    device_plugin_families: tuple[EksAmiFamily, ...] = ()
    custom_networking: bool = False
    prefix_delegation: bool = False
    #: Whether the AMP managed scraper reads the cluster (observability on).
    scraped: bool = False

    @property
    def stack_suffix(self) -> str:
        """``cluster`` for the shared cluster, ``<workload>-cluster`` for a dedicated one."""
        return _cluster_stack_suffix(self.key)


def _cluster_stack_suffix(key: str) -> str:
    return "cluster" if key == SHARED_CLUSTER else f"{key.replace('_', '-')}-cluster"


@dataclass(frozen=True)
class PlatformOptions:
    """The shared platform: VPC, data bucket, observability, and the deployment's name."""

    name: str
    region: str
    account: str | None
    availability_zone: str
    availability_zones: tuple[str, ...]
    vpc_cidr: str
    nat_gateways_per_az: bool
    interface_endpoints: bool
    #: The pods' secondary block (custom networking only).
    pod_cidr: str | None
    node_subnet_cidrs: tuple[str, ...]
    termination_protection: bool
    observability: bool
    #: A Grafana workspace, in a stack of its own (observability on).
    grafana: bool
    #: The construct warnings (``fm:...``) the profile accepts.
    accepted_warnings: tuple[str, ...]
    source: str
    #: The data perimeter on the data bucket and its key (on unless the profile opts out),
    #: the break-glass role and the other roles it lets in.
    data_perimeter: bool
    break_glass_role_arn: str | None
    data_perimeter_principals: tuple[str, ...]
    #: The platform's stack, and the Grafana workspace's (None: no Grafana).
    stack: StackOptions
    grafana_stack: StackOptions | None


@dataclass(frozen=True)
class DeploymentOptions:
    """Every cluster and workload of a profile."""

    platform: PlatformOptions
    clusters: dict[str, ClusterOptions]
    #: The enabled workloads, in the profile's order (pre-training first).
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


def _pool(
    workload: str, pool: str, instance_type: str, nodes: int, maximum: int, **extra: Any
) -> NodePoolOptions:
    """Node pool ``pool`` of ``workload``: ``nodes`` nodes at the least, ``maximum`` at most."""
    flavor = names.resource_flavor_name(workload, pool)
    return NodePoolOptions(pool, flavor, instance_type, nodes, nodes, maximum, **extra)


def node_pools(w: WorkloadConfig) -> tuple[NodePoolOptions, ...]:
    """The accelerated node groups of ``w`` (EKS): the main group and, for RL post-training,
    the rollout group labelled and tainted ``workload-role=rollout``."""
    count = w.instance_count
    pools = [_pool(w.name, MAIN_POOL, w.instance_type, count, w.largest_size, capacity=w.capacity)]
    rollout = w.rollout_group
    if rollout is not None:
        role = ((ROLE_LABEL, ROLLOUT_POOL),)
        count = rollout.instance_count
        pools.append(
            _pool(
                w.name, ROLLOUT_POOL, rollout.instance_type, count, count, labels=role, taints=role
            )
        )
    return tuple(pools)


def efa_layout_of(workload: WorkloadConfig, instance_type: str | None = None) -> EfaLayout | None:
    """The EFA layout nodes of ``workload`` get (of ``instance_type`` when given, such as the
    rollout group's): the profile's ``efa_layout``, or None for a type without EFA, which the
    rules allow only for inference whose replicas fit one node. Stacks, the IP budget and
    ``fmc plan`` all read it here."""
    spec = get_instance_type(instance_type or workload.instance_type)
    return workload.efa_layout if spec.efa_supported else None


def _plan_efa_nodes(w: WorkloadConfig, node_groups: Sequence[NodeGroupRequest]) -> int:
    """EFA-capable nodes of ``w`` (its rollout group included) on ``node_groups``, the plan's
    node groups at their largest (a group has an EFA layout when its type has EFA), leaving out
    the families FSx takes no EFA client of (trn2), whose nodes mount over TCP."""
    return sum(
        g.nodes
        for g in node_groups
        if g.workload == w.name
        and g.layout is not None
        and lustre_efa_client_family(g.instance_type)
    )


def _connection_nodes(w: WorkloadConfig, node_groups: Sequence[NodeGroupRequest]) -> int:
    """EFA-capable nodes of ``w`` that configure LNet over EFA, as FM316 counts them
    (HyperPod Slurm, AWS PCS, EKS, HyperPod EKS), on the plan's ``node_groups``."""
    if not w.enabled or w.orchestrator not in EFA_CLIENT_ORCHESTRATORS:
        return 0
    return _plan_efa_nodes(w, node_groups)


def fsx_efa_clients(
    profile: Profile, w: WorkloadConfig, node_groups: Sequence[NodeGroupRequest]
) -> int | None:
    """The nodes that share ``w``'s EFA-enabled file system's EFA connections: every node
    FM316 counts (HyperPod Slurm, AWS PCS, EKS, HyperPod EKS) of the workload that owns it and
    of a post-training workload reusing it, counted on the plan's ``node_groups``; each node
    sizes its LNet interfaces on it. None when ``w``'s file system has no EFA (or, on EKS and
    HyperPod EKS, no EFA node mounts it)."""
    owner: WorkloadConfig = profile.pretraining if w.reuses_pretraining_storage else w
    if not owner.storage.enabled or not owner.storage.efa_enabled:
        return None
    if w.orchestrator not in EFA_CLIENT_ORCHESTRATORS:
        return None
    post = profile.post_training
    sharing = owner is profile.pretraining and post.reuses_pretraining_storage
    members = (owner, post) if sharing else (owner,)
    total = sum(_connection_nodes(m, node_groups) for m in members)
    return total if w.orchestrator.is_slurm else total or None


def _pcs_ami_id(w: WorkloadConfig) -> str | None:
    """The AMI id of ``w``'s PCS nodes, on 'pcs' (the profile rules require it there)."""
    if w.orchestrator is not Orchestrator.PCS or not isinstance(w, TrainingWorkloadConfig):
        return None
    return w.pcs_ami.id


def _copied(cls: type[_T], table: object, /, **values: Any) -> _T:
    """A ``cls`` options object: ``values``, and every other field of ``cls`` taken from the
    attribute of ``table`` (a profile table) of the same name, the profile's key as it is."""
    names = [f.name for f in fields(cls) if f.name not in values]  # type: ignore[arg-type]
    return cls(**values, **{n: getattr(table, n) for n in names if hasattr(table, n)})


def _file_system(w: WorkloadConfig) -> FileSystemOptions | None:
    storage = w.storage
    if not storage.enabled or w.reuses_pretraining_storage:
        return None
    return _copied(
        FileSystemOptions,
        storage,
        sizing=workload_fsx_sizing_request(w),
        automatic_backup_retention_days=storage.backup_retention_days,
        directories=FSX_DIRECTORIES[w.name],
        exported_prefixes=DATA_OUTPUTS[w.name],
    )


def _file_system_of(w: WorkloadConfig) -> str | None:
    if w.reuses_pretraining_storage:
        return "pretraining"
    return w.name if w.storage.enabled else None


def _rollout(w: WorkloadConfig) -> RolloutGroupOptions | None:
    rollout = w.rollout_group
    if rollout is None:
        return None
    slurm = w.orchestrator is Orchestrator.HYPERPOD_SLURM
    return _copied(RolloutGroupOptions, rollout, partition_name=ROLLOUT_POOL if slurm else None)


def _hyperpod(platform: PlatformConfig, w: WorkloadConfig) -> HyperPodOptions | None:
    if w.orchestrator not in (Orchestrator.HYPERPOD_SLURM, Orchestrator.HYPERPOD_EKS):
        return None
    users = w.users if isinstance(w, TrainingWorkloadConfig) else ()
    training = w.name != "inference"
    return _copied(
        HyperPodOptions, platform, orchestrator=w.orchestrator, training=training, users=users
    )


def _model_server(w: InferenceConfig) -> ModelServerOptions | None:
    model = w.model
    if not model.enabled:
        return None
    return _copied(
        ModelServerOptions,
        model,
        model_s3_prefix=model.model_s3_prefix or "",
        served_model_name=model.served_model_name or "",
        max_replicas=model.max_replicas or model.replicas,
    )


def _autoscaling(w: InferenceConfig, observability: bool) -> AutoscalingOptions | None:
    """Replica autoscaling when the server may grow and Prometheus holds its metric."""
    model, scaling = w.model, w.autoscaling
    if not model.enabled or not scaling.enabled or not observability:
        return None
    if (model.max_replicas or model.replicas) <= model.replicas:
        return None
    return AutoscalingOptions(metric=scaling.metric, target=scaling.target)


def _inference(w: WorkloadConfig, observability: bool) -> InferenceOptions | None:
    if not isinstance(w, InferenceConfig) or w.orchestrator is not Orchestrator.EKS:
        return None
    return _copied(
        InferenceOptions,
        w,
        max_node_count=w.largest_size,
        model_server=_model_server(w),
        autoscaling=_autoscaling(w, observability),
    )


def _node_group_subnets(
    w: WorkloadConfig, subnets: dict[str, tuple[int, ...]]
) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """Pool name -> the subnets of its node groups, for the pools the IP budget moved."""
    demands = ((MAIN_POOL, w.name), (ROLLOUT_POOL, f"{w.name}.rollout"))
    return tuple((pool, subnets[demand]) for pool, demand in demands if subnets.get(demand))


def _workload_stacks(
    platform: PlatformConfig,
    w: WorkloadConfig,
    pools: tuple[NodePoolOptions, ...],
    file_system: FileSystemOptions | None,
) -> dict[str, StackOptions | None]:
    """The stacks of ``w``: ``<name>-<workload>`` for its own file system or its HyperPod or
    AWS PCS cluster, and ``<name>-<workload>-compute`` for its EKS nodes (``pools``)."""
    title = _WORKLOAD_TITLES.get(w.name, w.name)
    on_eks = w.orchestrator is Orchestrator.EKS
    stack = compute = None
    if not on_eks or file_system is not None:
        nodes = f"{w.instance_count} x {w.instance_type} in {platform.availability_zone}"
        stack = _stack(platform, w.name, description=f"fm-constructs {title}: {nodes}", part=w.name)
    if on_eks:
        sizes = " + ".join(f"{p.max_size} x {p.instance_type}" for p in pools)
        description = f"fm-constructs {title} nodes and Kubernetes objects: {sizes}"
        compute = _stack(platform, w.name, "compute", description=description, part=w.name)
    return {"stack": stack, "compute_stack": compute}


def workload_options(
    profile: Profile,
    w: WorkloadConfig,
    plan: DeploymentPlan,
) -> WorkloadOptions:
    """Options of one enabled workload of ``profile`` planned as ``plan`` (the pod networking
    it chose, the node groups at their largest, the node subnets it moved them to): its own
    keys (instance type and count, EFA layout, root volume, launch template version...) as
    they are, and what the deployment derives from them."""
    platform = profile.platform
    networking = plan.subnets.networking
    on_eks = w.orchestrator is Orchestrator.EKS
    vpc_cni = networking in (PodNetworking.CUSTOM_NETWORKING, PodNetworking.PREFIX_DELEGATION)
    pools = node_pools(w) if on_eks else ()
    file_system = _file_system(w)
    return _copied(
        WorkloadOptions,
        w,
        cluster=w.eks_cluster,
        namespace=names.workload_namespace(w.name),
        diagnostics_namespace=names.diagnostics_namespace(w.name),
        service_account=names.service_account_name(w.name),
        cluster_queue=names.cluster_queue_name(w.name),
        local_queue=names.local_queue_name(w.name),
        fsx_claim=names.fsx_claim_name(w.name),
        node_pools=pools,
        operators=OPERATORS[w.name],
        data_prefixes=DATA_OUTPUTS[w.name],
        read_prefixes=DATA_INPUTS[w.name],
        max_pods_per_node=accelerated_max_pods(w) if vpc_cni else w.max_pods_per_node,
        availability_zone=platform.availability_zone,
        capacity=CapacityOptions(w.capacity, platform.availability_zone, w.instance_type),
        node_efa_layout=efa_layout_of(w),
        rollout=_rollout(w),
        file_system=file_system,
        file_system_of=_file_system_of(w),
        file_system_efa_clients=fsx_efa_clients(profile, w, plan.subnets.node_groups),
        node_group_subnets=_node_group_subnets(w, plan.node_group_subnets) if on_eks else (),
        hyperpod=_hyperpod(platform, w),
        pcs_ami_id=_pcs_ami_id(w),
        inference=_inference(w, platform.observability),
        **_workload_stacks(platform, w, pools, file_system),
    )


def _submitter_namespaces(
    members: list[WorkloadOptions], *, diagnostics: bool = False
) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Role ARN -> the workload namespaces it submits jobs in (``diagnostics``: the
    diagnostics namespaces of the same workloads instead), over the cluster's ``members``."""
    found: dict[str, list[str]] = {}
    for w in members:
        for arn in w.submitter_role_arns:
            namespace = w.diagnostics_namespace if diagnostics else w.namespace
            found.setdefault(arn, []).append(namespace)
    return tuple((arn, tuple(namespaces)) for arn, namespaces in found.items())


def _device_plugin_families(members: list[WorkloadOptions]) -> tuple[EksAmiFamily, ...]:
    """EKS AMI families of the members' accelerators (main and rollout nodes)."""
    rollouts = [w.rollout.instance_type for w in members if w.rollout is not None]
    types = {w.instance_type for w in members}.union(rollouts)
    return tuple(sorted({get_instance_type(t).eks_ami_family for t in types}))


def _cluster(
    profile: Profile,
    key: str,
    members: list[str],
    workloads: dict[str, WorkloadOptions],
    networking: PodNetworking,
) -> ClusterOptions:
    """EKS cluster ``key`` of ``members``: the platform's control-plane keys as they are, and
    its stacks ``<name>-cluster`` (``<name>-<workload>-cluster`` for a dedicated one),
    ``...-addons`` and, scraped, ``...-monitoring``."""
    platform = profile.platform
    member_options = [workloads[n] for n in members]
    dedicated = key != SHARED_CLUSTER
    stem = _cluster_stack_suffix(key)
    titles = ", ".join(_CLUSTER_TITLES[w] for w in members)
    kind = "dedicated" if dedicated else "shared"
    stack = _stack(
        platform, stem, description=f"fm-constructs {kind} GPU EKS cluster ({titles})", part=key
    )
    addons = "fm-constructs GPU EKS cluster: system nodes, add-ons, device plugins and operators"
    scraper = "fm-constructs managed Prometheus scraper of the GPU EKS cluster"
    monitoring = _stack(platform, stem, "monitoring", description=scraper, part=key)
    return _copied(
        ClusterOptions,
        platform,
        key=key,
        workloads=tuple(members),
        operators=frozenset().union(*(w.operators for w in member_options)),
        dedicated=dedicated,
        stack=stack,
        addons_stack=_stack(platform, stem, "addons", description=addons, part=key),
        monitoring_stack=monitoring if platform.observability else None,
        submitter_namespaces=_submitter_namespaces(member_options),
        submitter_read_namespaces=_submitter_namespaces(member_options, diagnostics=True),
        device_plugin_families=_device_plugin_families(member_options),
        custom_networking=networking is PodNetworking.CUSTOM_NETWORKING,
        prefix_delegation=networking is PodNetworking.PREFIX_DELEGATION,
        scraped=platform.observability,
    )


def _platform(
    profile: Profile, networking: PodNetworking, node_cidrs: tuple[str, ...]
) -> PlatformOptions:
    """The platform: its keys as they are, pod and node subnets from the IP budget, and its
    stacks ``<name>-platform`` and, with Grafana, ``<name>-grafana``."""
    p = profile.platform
    grafana = "fm-constructs Amazon Managed Grafana workspace and dashboards"
    return _copied(
        PlatformOptions,
        p,
        nat_gateways_per_az=p.nat_gateways is NatGateways.PER_AZ,
        pod_cidr=p.pod_cidr if networking is PodNetworking.CUSTOM_NETWORKING else None,
        node_subnet_cidrs=node_cidrs,
        grafana=p.observability and p.grafana,
        accepted_warnings=tuple(w for w in p.accepted_warnings if w.startswith("fm:")),
        source=profile.source,
        stack=_stack(
            p,
            "platform",
            description="fm-constructs shared platform: GPU VPC, data bucket, observability",
            termination_protection=p.termination_protection,
        ),
        grafana_stack=(
            _stack(p, "grafana", description=grafana) if p.observability and p.grafana else None
        ),
    )


def deployment_options(profile: Profile) -> DeploymentOptions:
    """Options of the platform, of every enabled workload and of the clusters they run on:
    one shared cluster for every EKS-orchestrated workload unless it asks for
    ``dedicated_cluster`` (:func:`planned_options` on the plan of ``profile``)."""
    return planned_options(profile, deployment_plan(profile))


def planned_options(profile: Profile, plan: DeploymentPlan) -> DeploymentOptions:
    """:func:`deployment_options` of ``profile`` planned as ``plan``: the pod networking the
    plan chose, the node subnets it moved node groups to and the EFA nodes of its node
    groups."""
    networking = plan.subnets.networking
    workloads = {w.name: workload_options(profile, w, plan) for w in profile.enabled_workloads}
    members: dict[str, list[str]] = {}
    for options in workloads.values():
        if options.cluster is not None:
            members.setdefault(options.cluster, []).append(options.name)
    node_cidrs = tuple(subnet.cidr for subnet in plan.subnets.node_subnets)
    return DeploymentOptions(
        platform=_platform(profile, networking, node_cidrs),
        clusters={
            key: _cluster(profile, key, m, workloads, networking) for key, m in members.items()
        },
        workloads=workloads,
        pod_networking=networking,
        node_subnet_cidrs=node_cidrs,
        node_group_subnets=plan.node_group_subnets,
    )
