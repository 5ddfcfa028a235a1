"""The workloads a user imports: pre-training, post-training (with its RL rollout group) and
inference, each one statement on a GPU EKS cluster that several workloads may share.

Each pattern switches on the operators it needs on the cluster (once per cluster, through its
add-on registry) and builds its share with
:class:`~fm_constructs.patterns.cluster_workload.EksWorkload`: node pools, namespace, service
account and Pod Identity role on the workload's data prefixes, FSx claim, Kueue queues. Every
pattern offers the same surface (:class:`IAcceleratedWorkload`), as does
:class:`~fm_constructs.patterns.hyperpod_workload.HyperPodAcceleratedWorkload` for HyperPod.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypedDict, Unpack, runtime_checkable

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.compute import CapacitySource
from fm_constructs.domain.kinds import LoadBalancer
from fm_constructs.domain.names import MAIN_POOL, ROLLOUT_POOL
from fm_constructs.domain.names import WORKLOAD_ROLE_LABEL as ROLE_LABEL
from fm_constructs.domain.workload_data import DATA_INPUTS, DATA_OUTPUTS
from fm_constructs.observability import IPrometheusWorkspace
from fm_constructs.orchestration import WorkloadOperators
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.eks_charts import ClusterAutoscalerSettings
from fm_constructs.patterns.cluster_workload import EksWorkload, NodePool
from fm_constructs.patterns.inference import InferenceService
from fm_constructs.planning.autoscaling import AutoscalingPolicy
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.serving_layout import ModelServerSpec
from fm_constructs.storage import IDataBucket
from fm_constructs.storage.lustre_interface import ILustreFileSystem


@runtime_checkable
class IAcceleratedWorkload(Protocol):
    """What every workload offers, whatever orchestrates it (EKS node groups, HyperPod on
    Slurm or EKS, PCS): the nodes' security groups (``connections``), the file system it
    mounts (if any), the IAM roles of its nodes, and the queues jobs are submitted to (the
    Kueue LocalQueue on EKS, the Slurm partitions, the PCS queue)."""

    @property
    def connections(self) -> ec2.Connections: ...

    @property
    def file_system(self) -> ILustreFileSystem | None: ...

    @property
    def node_roles(self) -> Sequence[iam.IRole]: ...

    @property
    def queue_names(self) -> tuple[str, ...]: ...


class _Nodes(TypedDict):
    """Where an EKS workload pattern's main node pool runs: ``node_count`` nodes of
    ``instance_type`` in ``subnet``, on ``cluster`` (created or imported)."""

    cluster: IGpuCluster
    subnet: ec2.ISubnet
    instance_type: str
    node_count: int


class WorkloadKeywords(_Nodes, total=False):
    """The keywords every EKS workload pattern takes: the required ``cluster``, ``subnet``,
    ``instance_type`` and ``node_count`` of its main pool, and, each as
    :class:`~fm_constructs.patterns.cluster_workload.EksWorkload` or
    :class:`~fm_constructs.patterns.cluster_workload.NodePool` takes it, the main pool's
    ``capacity`` and ``launch_template_version``, the ``file_system`` mounted as
    ``fsx-lustre``, the nodes' ``efa_layout``, ``root_volume_size_gib``, ``session_manager``
    and ``max_pods_per_node``, ``node_group_subnets`` for pools that outgrow ``subnet``, and
    ``file_system_efa_clients`` (every EFA node mounting an EFA-enabled ``file_system``)."""

    capacity: CapacitySource | None
    file_system: ILustreFileSystem | None
    efa_layout: EfaLayout | None
    root_volume_size_gib: int
    session_manager: bool
    max_pods_per_node: int | None
    launch_template_version: int | None
    node_group_subnets: Mapping[str, Sequence[ec2.ISubnet]] | None
    file_system_efa_clients: int | None


class TrainingKeywords(WorkloadKeywords, total=False):
    """:class:`WorkloadKeywords` and the training workloads' ``data_bucket`` with the key
    prefixes their role writes (``data_prefixes``) and only reads (``read_prefixes``); each
    defaults to the workload kind's prefixes when there is a data bucket."""

    data_bucket: IDataBucket | None
    data_prefixes: Sequence[str] | None
    read_prefixes: Sequence[str] | None


class _EksPattern(Construct):
    """Shared surface of the EKS workload patterns, and the one place they build their share
    of the cluster."""

    workload: EksWorkload

    def _build(
        self,
        operators: WorkloadOperators,
        keywords: Mapping[str, Any],
        *,
        kind: str,
        max_node_count: int | None = None,
        extra_pools: Sequence[NodePool] = (),
        **workload: Any,
    ) -> EksWorkload:
        """Switch on ``operators`` on the cluster (once per cluster) and build the workload's
        node pools (the main pool, then ``extra_pools``), namespace, identity, claim and queues
        (:class:`EksWorkload`) from the pattern's ``keywords``, with the data prefixes of
        workload ``kind``."""
        settings = dict(keywords)
        cluster: IGpuCluster = settings.pop("cluster")
        pool = NodePool(
            MAIN_POOL,
            settings.pop("instance_type"),
            settings.pop("node_count"),
            max_node_count=max_node_count,
            capacity=settings.pop("capacity", None),
            launch_template_version=settings.pop("launch_template_version", None),
        )
        bucket = settings.get("data_bucket", workload.get("data_bucket"))
        for key, defaults in (("data_prefixes", DATA_OUTPUTS), ("read_prefixes", DATA_INPUTS)):
            settings[key] = _prefixes(settings.get(key), defaults[kind], bucket)
        operators.enable(cluster)
        self.workload = EksWorkload(
            self,
            "Workload",
            cluster=cluster,
            node_pools=[pool, *extra_pools],
            **settings,
            **workload,
        )
        return self.workload

    @property
    def connections(self) -> ec2.Connections:
        return self.workload.connections

    @property
    def file_system(self) -> ILustreFileSystem | None:
        return self.workload.file_system

    @property
    def node_roles(self) -> Sequence[iam.IRole]:
        return self.workload.node_roles

    @property
    def queue_names(self) -> tuple[str, ...]:
        return self.workload.queue_names

    @property
    def namespace(self) -> str:
        return self.workload.namespace

    @property
    def role(self) -> iam.IRole:
        """The Pod Identity role of the workload's service account."""
        assert self.workload.role is not None
        return self.workload.role


class PretrainingWorkload(_EksPattern):
    """Pre-training on ``cluster``: ``node_count`` EFA nodes of ``instance_type`` in
    ``subnet`` (fixed size, in a cluster placement group where the capacity allows one), with
    Kueue and Kubeflow Trainer on the cluster, the file system mounted as ``fsx-lustre``, and a
    role that reads ``datasets/`` and writes ``checkpoints/pretraining/`` of ``data_bucket``
    (``read_prefixes`` and ``data_prefixes`` override them). Keywords: :class:`TrainingKeywords`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        name: str = "pretraining",
        **keywords: Unpack[TrainingKeywords],
    ) -> None:
        super().__init__(scope, construct_id)
        operators = WorkloadOperators(kueue=True, kubeflow_trainer=True)
        self._build(operators, keywords, kind="pretraining", name=name, training=True)


class PostTrainingWorkload(_EksPattern):
    """SFT and RL post-training on ``cluster``: the trainer nodes and, with
    ``rollout_instance_type``, a rollout (generation) group labelled and tainted
    ``workload-role=rollout`` for vLLM/Ray workers, with KubeRay beside Kueue and Kubeflow
    Trainer. Both groups are flavors of the workload's queue. Keywords:
    :class:`TrainingKeywords`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        rollout_instance_type: str | None = None,
        rollout_node_count: int = 1,
        rollout_launch_template_version: int | None = None,
        name: str = "post_training",
        **keywords: Unpack[TrainingKeywords],
    ) -> None:
        super().__init__(scope, construct_id)
        rollout: list[NodePool] = []
        if rollout_instance_type is not None:
            role = {ROLE_LABEL: ROLLOUT_POOL}
            rollout.append(
                NodePool(
                    ROLLOUT_POOL,
                    rollout_instance_type,
                    rollout_node_count,
                    labels=role,
                    taints=role,
                    launch_template_version=rollout_launch_template_version,
                )
            )
        self._build(
            WorkloadOperators(kueue=True, kubeflow_trainer=True, kuberay=True),
            keywords,
            kind="post_training",
            extra_pools=rollout,
            name=name,
            training=True,
        )


class InferenceWorkload(_EksPattern):
    """Serving on ``cluster``: GPU nodes between ``node_count`` and ``max_node_count`` (the
    Cluster Autoscaler follows Pending replicas), LeaderWorkerSet for multi-node replicas and,
    with ``model``, the vLLM server of
    :class:`~fm_constructs.patterns.inference.InferenceService` in the workload namespace.
    Serving capacity is not lent to the training queues (model servers are not queued).
    Keywords: :class:`WorkloadKeywords`."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        max_node_count: int | None = None,
        data_bucket: IDataBucket,
        model: ModelServerSpec | None = None,
        load_balancer: LoadBalancer = LoadBalancer.INTERNAL,
        load_balancer_source_ranges: Sequence[str] | None = None,
        tls_certificate_arn: str | None = None,
        autoscaling: AutoscalingPolicy | None = None,
        workspace: IPrometheusWorkspace | None = None,
        name: str = "inference",
        autoscaler_settings: ClusterAutoscalerSettings | None = None,
        **keywords: Unpack[WorkloadKeywords],
    ) -> None:
        super().__init__(scope, construct_id)
        self._build(
            WorkloadOperators(kueue=True, leader_worker_set=True),
            keywords,
            kind="inference",
            max_node_count=max_node_count,
            name=name,
            data_bucket=data_bucket,
            lend_quota=False,
            autoscaler_settings=autoscaler_settings,
        )
        self.model_server: InferenceService | None = None
        if model is not None:
            self.model_server = InferenceService(
                self,
                "ModelServer",
                cluster=self.workload.cluster,
                gpu_nodes=self.workload.main_nodes,
                model=model,
                data_bucket=data_bucket,
                namespace=self.workload.namespace,
                namespace_manifest=self.workload.namespace_manifest,
                load_balancer=load_balancer,
                load_balancer_source_ranges=load_balancer_source_ranges,
                tls_certificate_arn=tls_certificate_arn,
                autoscaling=autoscaling,
                workspace=workspace,
            )


def _prefixes(
    given: Sequence[str] | None, default: Sequence[str], data_bucket: IDataBucket | None
) -> Sequence[str]:
    """``given``, else the workload kind's ``default`` when there is a data bucket."""
    if given is not None:
        return given
    return default if data_bucket is not None else ()
