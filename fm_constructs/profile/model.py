# ruff: noqa: E501
"""The validated profile: frozen dataclasses that stacks and the CLI are built from.

A profile file (TOML) is parsed by :mod:`fm_constructs.config.loader` into these types; nothing
downstream ever reads raw TOML, so every key is checked exactly once, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from fm_constructs.domain.capacity import CapacityConfig as CapacityConfig
from fm_constructs.domain.capacity import ReservationConfig as ReservationConfig
from fm_constructs.domain.defaults import (
    ROOT_VOLUME_MAX_GIB,
    ROOT_VOLUME_MIN_GIB,
    ROOT_VOLUME_SIZE_GIB,
    TARGET_MFU,
)
from fm_constructs.domain.findings import Finding
from fm_constructs.domain.kinds import CapacityKind as CapacityKind
from fm_constructs.domain.kinds import LoadBalancer as LoadBalancer
from fm_constructs.domain.kinds import Orchestrator as Orchestrator
from fm_constructs.domain.kinds import ServingMetric as ServingMetric
from fm_constructs.domain.users import ClusterUser
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.fsx_sizing import DEFAULT_READ_MB_S_PER_NODE, LustreDeploymentType
from fm_constructs.planning.kubernetes_versions import (
    DEFAULT_KUBERNETES_VERSION,
    supported_versions_text,
)
from fm_constructs.planning.pod_networking import DEFAULT_POD_CIDR, PodNetworking
from fm_constructs.planning.serving_layout import (
    AUTOSCALING_TARGET,
    GPU_MEMORY_UTILIZATION,
    GPU_MEMORY_UTILIZATION_RANGE,
)
from fm_constructs.planning.vpc_layout import MAX_ZONES, VPC_PREFIX_RANGE

#: The FSx for Lustre deployment type of every file system a profile creates (the stacks,
#: the profile rules and ``fmc plan`` read it here).
PROFILE_DEPLOYMENT_TYPE = LustreDeploymentType.PERSISTENT_2


class NatGateways(StrEnum):
    """One NAT gateway per availability zone (resilient) or a single one (cheaper)."""

    PER_AZ = "per-az"
    SINGLE = "single"


@dataclass(frozen=True, kw_only=True)
class StorageConfig:
    """``[<workload>.storage]``: the FSx for Lustre file system linked to the data bucket.

    Either explicit ``storage_capacity_gib`` + ``throughput_mb_s_per_tib`` or a sizing
    request (``checkpoint_size_gib`` or ``model_parameters_billion``, with
    ``checkpoint_write_seconds``, ``dataset_size_gib`` and ``checkpoints_to_keep``).
    """

    enabled: bool = field(
        default=True,
        metadata={
            "doc": "Create an FSx for Lustre file system linked to the data bucket (default: on for training, off for inference)."
        },
    )
    storage_capacity_gib: int | None = field(
        default=None,
        metadata={"doc": "Explicit capacity (PERSISTENT_2: 1200, 2400, then multiples of 2400)."},
    )
    throughput_mb_s_per_tib: int | None = field(
        default=None,
        metadata={"doc": "Explicit per-unit throughput (PERSISTENT_2: 125, 250, 500 or 1000)."},
    )
    checkpoint_size_gib: float | None = field(
        default=None, metadata={"doc": "Sizing request: size of one checkpoint."}
    )
    model_parameters_billion: float | None = field(
        default=None,
        metadata={
            "doc": "Sizing request: model size, turned into a checkpoint size with bytes_per_parameter."
        },
    )
    bytes_per_parameter: float | None = field(
        default=None,
        metadata={
            "doc": "Sizing request: checkpoint bytes per parameter (weights and optimizer state)."
        },
    )
    checkpoint_write_seconds: int | None = field(
        default=None, metadata={"doc": "Sizing request: target time to write one checkpoint."}
    )
    dataset_size_gib: float | None = field(
        default=None, metadata={"doc": "Sizing request: dataset bytes kept on the file system."}
    )
    checkpoints_to_keep: int | None = field(
        default=None,
        metadata={"doc": "Sizing request: checkpoints kept on the file system at once."},
    )
    read_mb_s_per_node: float = field(
        default=DEFAULT_READ_MB_S_PER_NODE,
        metadata={
            "doc": f"Sizing request: data-loading read throughput each node needs, MB/s (default {DEFAULT_READ_MB_S_PER_NODE:g}); the file system serves every node of the workload at once, or a checkpoint write, whichever needs more."
        },
    )
    efa_enabled: bool = field(
        default=False,
        metadata={
            "doc": "EFA-enabled file system (EFA and GPUDirect Storage clients); PERSISTENT_2 only."
        },
    )
    metadata_iops: int | None = field(
        default=None,
        metadata={
            "doc": "User-provisioned metadata IOPS (1500, 3000, 6000, 12000, then multiples of 12000 up to 192000); automatic when absent."
        },
    )
    backup_retention_days: int = field(
        default=0,
        metadata={
            "doc": "Must stay 0: FSx does not back up file systems linked to S3 by data repository associations; the data bucket is the durable copy."
        },
    )

    @property
    def is_sized(self) -> bool:
        """True when the profile asks for a sizing calculation instead of explicit numbers."""
        return self.checkpoint_size_gib is not None or self.model_parameters_billion is not None


@dataclass(frozen=True, kw_only=True)
class PostTrainingStorageConfig(StorageConfig):
    """``[post_training.storage]``: the storage keys of every workload, and the reuse of the
    pre-training file system."""

    reuse_pretraining: bool = field(
        default=False,
        metadata={
            "doc": "Mount the pre-training file system instead of creating one (same zone, same data; the post-training stack then deploys after the pre-training stack)."
        },
    )


@dataclass(frozen=True, kw_only=True)
class TrainingGoalConfig:
    """``[<workload>.training_goal]``: what the run should train, for ``fmc plan``'s compute
    estimate (about 6 x parameters x tokens FLOPs at the target MFU)."""

    model_parameters_billion: float | None = field(
        default=None, metadata={"doc": "Model parameters, in billions."}
    )
    training_tokens_billion: float | None = field(
        default=None, metadata={"doc": "Training tokens, in billions."}
    )
    target_mfu: float = field(
        default=TARGET_MFU,
        metadata={"doc": "Expected model FLOPs utilization, above 0 and at most 1."},
    )

    @property
    def is_set(self) -> bool:
        return (
            self.model_parameters_billion is not None and self.training_tokens_billion is not None
        )


@dataclass(frozen=True, kw_only=True)
class PcsAmiConfig:
    """``[<workload>.pcs_ami]``: the pinned AMI of the workload's AWS PCS nodes, written by
    ``fmc pcs-ami --config <profile> --write`` (read-only EC2 DescribeImages)."""

    id: str | None = field(
        default=None,
        metadata={
            "doc": "'pcs': AMI id of every node (Ubuntu with the PCS agent, the PCS Slurm installer of the pinned version, NVIDIA and EFA drivers). Required on 'pcs'; kept, unused, on the other orchestrators, so switching back is one key."
        },
    )
    region: str | None = field(
        default=None,
        metadata={
            "doc": "The region the AMI is in; must be platform.region (an AMI id names an image in one region only)."
        },
    )
    name: str | None = field(
        default=None,
        metadata={"doc": "The image's name, as fmc pcs-ami found it (a record; not checked)."},
    )


@dataclass(frozen=True, kw_only=True)
class ModelConfig:
    """``[inference.model]``: the model server (vLLM) deployed on the inference cluster. Without
    ``model_s3_prefix`` no server is deployed (the GPU cluster is still built)."""

    model_s3_prefix: str | None = field(
        default=None,
        metadata={
            "doc": "Key prefix of the weights in the data bucket, ending in '/' (e.g. 'models/llama-3-70b/')."
        },
    )
    served_model_name: str | None = field(
        default=None, metadata={"doc": "Model name clients send and metrics carry."}
    )
    tensor_parallel_size: int = field(
        default=1,
        metadata={"doc": "GPUs one replica shards each layer over (at most the GPUs of a node)."},
    )
    pipeline_parallel_size: int = field(
        default=1,
        metadata={"doc": "Pipeline stages; above 1 a replica spans nodes (LeaderWorkerSet)."},
    )
    replicas: int = field(default=1, metadata={"doc": "Replicas at the least."})
    max_replicas: int | None = field(
        default=None, metadata={"doc": "Replicas at the most (autoscaling); default replicas."}
    )
    max_model_len: int | None = field(
        default=None, metadata={"doc": "Context length cap; the model's own when absent."}
    )
    gpu_memory_utilization: float = field(
        default=GPU_MEMORY_UTILIZATION,
        metadata={
            "doc": f"Share of GPU memory vLLM may use ({GPU_MEMORY_UTILIZATION_RANGE[0]} to {GPU_MEMORY_UTILIZATION_RANGE[1]})."
        },
    )
    image: str | None = field(
        default=None,
        metadata={"doc": "vLLM OpenAI server image pinned by tag; the library's pin when absent."},
    )
    model_parameters_billion: float | None = field(
        default=None,
        metadata={
            "doc": "Parameters of the served model, in billions: its weights must fit the GPU memory of one replica (an error at load otherwise). When absent, a size in served_model_name or model_s3_prefix ('llama-3.1-70b-instruct': 70) is used."
        },
    )
    weight_bytes_per_parameter: float = field(
        default=2.0,
        metadata={
            "doc": "Bytes per weight as served: 2 for BF16/FP16, 1 for FP8/INT8, 0.5 for 4-bit."
        },
    )

    @property
    def enabled(self) -> bool:
        return self.model_s3_prefix is not None


@dataclass(frozen=True, kw_only=True)
class AutoscalingConfig:
    """``[inference.autoscaling]``: KEDA scales replicas between ``replicas`` and
    ``max_replicas`` on a serving metric read from Managed Prometheus."""

    enabled: bool = field(default=True, metadata={"doc": "Scale replicas on the serving metric."})
    metric: ServingMetric = field(
        default=ServingMetric.QUEUE_DEPTH,
        metadata={"doc": "'queue-depth' (waiting requests per replica) or 'ttft-p90' (seconds)."},
    )
    target: float = field(
        default=AUTOSCALING_TARGET, metadata={"doc": "Target value of the metric per replica."}
    )


@dataclass(frozen=True, kw_only=True)
class RolloutConfig:
    """``[post_training.rollout]``: a second group of nodes that generates samples from the
    current policy for RL (vLLM/Ray workers), beside the trainer group."""

    enabled: bool = field(default=False, metadata={"doc": "Add the rollout (generation) group."})
    instance_type: str = field(
        default="",
        metadata={"doc": "EC2 instance type of the rollout nodes (EFA-capable, from the catalog)."},
    )
    instance_count: int = field(default=1, metadata={"doc": "Rollout nodes (on demand)."})
    launch_template_version: int | None = field(
        default=None,
        metadata={
            "doc": "The version of the rollout group's launch template its nodes run (as [post_training] launch_template_version; unset: the newest)."
        },
    )


#: Key of the platform's shared EKS cluster (every EKS-orchestrated workload without
#: ``dedicated_cluster`` runs on it).
SHARED_CLUSTER = "shared"


@dataclass(frozen=True, kw_only=True)
class WorkloadConfig:
    """The keys every workload takes (``[pretraining]``, ``[post_training]``, ``[inference]``);
    each kind adds its own in :class:`PretrainingConfig`, :class:`PostTrainingConfig` and
    :class:`InferenceConfig`, so a key of one kind on another is an error at load."""

    name: str = field(metadata={"doc": ""})
    enabled: bool = field(default=False, metadata={"doc": "Build this workload's stack."})
    orchestrator: Orchestrator = field(
        default=Orchestrator.EKS,
        metadata={
            "doc": "'eks', 'hyperpod-eks', 'hyperpod-slurm' or 'pcs' (AWS Parallel Computing Service, managed Slurm; training only) (inference: 'eks')."
        },
    )
    instance_type: str = field(
        default="",
        metadata={
            "doc": "EC2 instance type of the accelerated nodes, such as 'p5.48xlarge' (HyperPod's 'ml.' name is derived)."
        },
    )
    instance_count: int = field(default=1, metadata={"doc": "Accelerated nodes."})
    dedicated_cluster: bool = field(
        default=False,
        metadata={
            "doc": "'eks' and 'hyperpod-eks': run on an EKS cluster of its own instead of the platform's shared cluster (isolation, e.g. production inference, at the price of a control plane and its system nodes)."
        },
    )
    capacity: CapacityConfig = field(
        default_factory=CapacityConfig, metadata={"doc": "The [<workload>.capacity] table."}
    )
    efa_layout: EfaLayout = field(
        default=EfaLayout.EFA_ONLY,
        metadata={
            "doc": "'efa-only' (current AWS guidance: one IP per node) or 'legacy' (an IP on every EFA interface)."
        },
    )
    root_volume_size_gib: int = field(
        default=ROOT_VOLUME_SIZE_GIB,
        metadata={
            "doc": f"'eks': encrypted gp3 root volume of each node ({ROOT_VOLUME_MIN_GIB} to {ROOT_VOLUME_MAX_GIB} GiB). HyperPod sizes its nodes' root volumes itself (the API takes no size for them); its nodes keep containers and data on the NVMe and a 500 GiB volume at /opt/sagemaker."
        },
    )
    submitter_role_arns: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "'eks', 'hyperpod-eks': IAM roles that submit the workload's jobs: an EKS access entry with AmazonEKSEditPolicy on its namespace only and AmazonEKSViewPolicy on its privileged diagnostics namespace (not cluster-admin). A role may submit to several workloads; it must not also be in platform.admin_role_arns."
        },
    )
    session_manager: bool = field(
        default=False,
        metadata={
            "doc": "'eks', 'pcs': Session Manager shells on the workload's GPU nodes (the node role gets the Session Manager actions only, no parameter reads). Off: no Systems Manager access to those nodes; on EKS use kubectl debug node/<name> through the cluster's access entries, on PCS srun from the login node (which always takes Session Manager shells)."
        },
    )
    storage: StorageConfig = field(
        default_factory=StorageConfig, metadata={"doc": "The [<workload>.storage] table."}
    )
    launch_template_version: int | None = field(
        default=None,
        metadata={
            "doc": "'eks': the version of the accelerated node groups' launch template their nodes run. Unset: the newest, so any change to the launch template (user data, interfaces, root volume) replaces the nodes on the next deploy. A number pins it: a change then only adds a version, and no node is replaced until you set the new number (pool by pool, when no job needs the nodes; the version numbers are in the EC2 console or 'aws ec2 describe-launch-template-versions')."
        },
    )
    max_pods_per_node: int | None = field(
        default=None,
        metadata={
            "doc": "EKS: kubelet maxPods of the accelerated nodes (1 to 250), set in their launch template; the IP budget counts this many pods per node. Default: the VPC CNI's own figure in the node subnet, 32 with custom networking."
        },
    )

    @property
    def eks_cluster(self) -> str | None:
        """The EKS cluster the workload runs on: :data:`SHARED_CLUSTER`, its own name with
        ``dedicated_cluster``, or None (HyperPod Slurm runs no EKS cluster)."""
        if self.orchestrator not in (Orchestrator.EKS, Orchestrator.HYPERPOD_EKS):
            return None
        return self.name if self.dedicated_cluster else SHARED_CLUSTER

    @property
    def largest_size(self) -> int:
        """Nodes of the main node group at its largest (inference adds autoscaling headroom)."""
        return self.instance_count

    @property
    def rollout_group(self) -> RolloutConfig | None:
        """The enabled RL rollout group beside the main nodes (post-training only)."""
        return None

    @property
    def reuses_pretraining_storage(self) -> bool:
        """Whether the workload mounts the pre-training file system (post-training only)."""
        return False


@dataclass(frozen=True, kw_only=True)
class TrainingWorkloadConfig(WorkloadConfig):
    """The keys of both training workloads."""

    training_goal: TrainingGoalConfig = field(
        default_factory=TrainingGoalConfig,
        metadata={"doc": "The [pretraining.training_goal] or [post_training.training_goal] table."},
    )
    pcs_ami: PcsAmiConfig = field(
        default_factory=PcsAmiConfig,
        metadata={"doc": "The [<workload>.pcs_ami] table."},
    )
    users: tuple[ClusterUser, ...] = field(
        default=(),
        metadata={
            "doc": "'hyperpod-slurm': the [[<workload>.users]] of the cluster, created on every node with a home on the file system (<mount>/home/<name>) and an SSH key pair; the image's ubuntu user gets the same."
        },
    )


@dataclass(frozen=True, kw_only=True)
class PretrainingConfig(TrainingWorkloadConfig):
    """``[pretraining]``: the keys of every workload and the training goal."""

    name: str = field(default="pretraining", metadata={"doc": ""})


@dataclass(frozen=True, kw_only=True)
class PostTrainingConfig(TrainingWorkloadConfig):
    """``[post_training]``: SFT or RL; an RL rollout group and the pre-training file system's
    reuse are its own."""

    name: str = field(default="post_training", metadata={"doc": ""})
    storage: PostTrainingStorageConfig = field(
        default_factory=PostTrainingStorageConfig,
        metadata={"doc": "The [post_training.storage] table."},
    )
    rollout: RolloutConfig = field(
        default_factory=RolloutConfig,
        metadata={"doc": "The [post_training.rollout] table."},
    )

    @property
    def rollout_group(self) -> RolloutConfig | None:
        return self.rollout if self.rollout.enabled else None

    @property
    def reuses_pretraining_storage(self) -> bool:
        return self.storage.reuse_pretraining


@dataclass(frozen=True, kw_only=True)
class InferenceConfig(WorkloadConfig):
    """``[inference]``: model serving on EKS; the model server, its autoscaling, the node
    group's headroom and the endpoint are its own keys."""

    name: str = field(default="inference", metadata={"doc": ""})
    max_instance_count: int | None = field(
        default=None,
        metadata={"doc": "Largest node group size (autoscaling headroom); default instance_count."},
    )
    load_balancer: LoadBalancer = field(
        default=LoadBalancer.INTERNAL,
        metadata={"doc": "'internal' NLB, 'internet-facing' NLB, or 'none'."},
    )
    load_balancer_source_ranges: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "Client CIDRs the load balancer admits. Required for 'internet-facing' (at most a /8 of addresses together); empty for 'internal' admits the VPC's CIDR."
        },
    )
    tls_certificate_arn: str | None = field(
        default=None,
        metadata={
            "doc": "ACM certificate (ARN, the platform's Region) of the endpoint: the load balancer listens with TLS 1.2/1.3 on 443 instead of plain HTTP on 80. Required for 'internet-facing'."
        },
    )
    model: ModelConfig = field(
        default_factory=ModelConfig,
        metadata={"doc": "The [inference.model] table."},
    )
    autoscaling: AutoscalingConfig = field(
        default_factory=AutoscalingConfig,
        metadata={"doc": "The [inference.autoscaling] table."},
    )

    @property
    def largest_size(self) -> int:
        return max(self.max_instance_count or self.instance_count, self.instance_count)


@dataclass(frozen=True, kw_only=True)
class PlatformConfig:
    """``[platform]``: what every workload shares (account, region, network)."""

    name: str = field(
        default="fm",
        metadata={"doc": "Prefix of every stack name: <name>-platform, <name>-pretraining, ..."},
    )
    region: str = field(metadata={"doc": "AWS region of every stack."})
    availability_zone: str = field(
        metadata={"doc": "Zone of the GPU nodes, FSx file systems and placement groups."}
    )
    availability_zones: tuple[str, ...] = field(
        metadata={"doc": f"Zones of the VPC (two to {MAX_ZONES}, including availability_zone)."}
    )
    account: str | None = field(
        default=None,
        metadata={
            "doc": "AWS account id of the stacks' environment; synthesis works with or without it and never calls AWS (the zones are `availability_zones`, no lookup)."
        },
    )
    vpc_cidr: str = field(
        default="10.0.0.0/16",
        metadata={
            "doc": f"VPC CIDR (/{VPC_PREFIX_RANGE[0]} to /{VPC_PREFIX_RANGE[1]}); private "
            "subnets get a quarter of it each."
        },
    )
    nat_gateways: NatGateways = field(
        default=NatGateways.PER_AZ,
        metadata={"doc": "'per-az' (one NAT gateway per zone) or 'single'."},
    )
    termination_protection: bool = field(
        default=True, metadata={"doc": "Termination protection on the platform stack."}
    )
    kubernetes_version: str = field(
        default=DEFAULT_KUBERNETES_VERSION,
        metadata={
            "doc": f"Kubernetes version of the EKS clusters: {supported_versions_text()}, in EKS standard support."
        },
    )
    admin_role_arns: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "IAM role ARNs given cluster-admin on every EKS cluster (access entries)."
        },
    )
    accepted_warnings: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "Warnings accepted for this deployment, not shown again: profile warnings by code ('FM203'; fmc plan, preflight), construct warnings of cdk synth by id ('fm:no-cluster-admins'). An error cannot be accepted."
        },
    )
    public_access_cidrs: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "CIDRs allowed to reach the EKS API publicly; empty keeps the endpoint private."
        },
    )
    pod_networking: PodNetworking = field(
        default=PodNetworking.AUTO,
        metadata={
            "doc": "Where EKS pods get addresses: 'node-subnet' (VPC CNI default), 'prefix-delegation' (/28 prefixes in the node subnet), 'custom-networking' (pod subnets in the secondary CIDR pod_cidr, one ENIConfig per zone, prefix delegation) or 'auto' (the first of these the largest deployment fits, else prefix delegation with the largest node groups in node subnets of secondary /16 blocks). 'node-subnet' and 'prefix-delegation' also move node groups that do not fit the private subnet into such node subnets."
        },
    )
    pod_cidr: str = field(
        default=DEFAULT_POD_CIDR,
        metadata={
            "doc": "Secondary VPC CIDR block (/16 to /28) of the GPU zone's pod subnet under custom networking; the other zones' pods keep their private subnets."
        },
    )
    interface_endpoints: bool = field(
        default=True,
        metadata={
            "doc": "VPC interface endpoints for a private cluster (ECR, STS, EKS, EC2, logs, Prometheus, SageMaker, Session Manager)."
        },
    )
    observability: bool = field(
        default=True,
        metadata={"doc": "Managed Prometheus workspace, alert rules, scrapers and alarms."},
    )
    grafana: bool = field(
        default=True,
        metadata={
            "doc": "Managed Grafana workspace (IAM Identity Center sign-in) with the dashboards."
        },
    )
    data_perimeter: bool = field(
        default=True,
        metadata={
            "doc": "Data perimeter on the data bucket and its key: object reads, writes and listings and the key's encrypt and decrypt are denied to every principal of the account but the deployment's data roles (IAM path /fm-constructs/<name>/data/), FSx's S3 access roles, break_glass_role_arn and data_perimeter_principals. false leaves access to IAM alone (warning FM210). See docs/operations/workload-isolation.md."
        },
    )
    break_glass_role_arn: str | None = field(
        default=None,
        metadata={
            "doc": "IAM role ARN let through the data perimeter for emergencies (an operator role whose use is audited)."
        },
    )
    data_perimeter_principals: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "Other IAM role ARNs let through the data perimeter (a notebook or CI role that reads the data bucket directly)."
        },
    )


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A whole deployment: the shared platform and the three workloads."""

    platform: PlatformConfig
    pretraining: PretrainingConfig
    post_training: PostTrainingConfig
    inference: InferenceConfig
    source: str = "<memory>"
    #: Warnings found when the profile was loaded (shown by ``fmc plan``; they do not stop it).
    warnings: tuple[Finding, ...] = ()

    @property
    def workloads(self) -> tuple[WorkloadConfig, ...]:
        """All three workloads, enabled or not, in a stable order."""
        return (self.pretraining, self.post_training, self.inference)

    @property
    def workloads_by_name(self) -> dict[str, WorkloadConfig]:
        return {w.name: w for w in self.workloads}

    @property
    def enabled_workloads(self) -> tuple[WorkloadConfig, ...]:
        return tuple(w for w in self.workloads if w.enabled)
