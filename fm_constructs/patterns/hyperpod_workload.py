"""An accelerated workload on SageMaker HyperPod, orchestrated by Slurm or by EKS, wired to FSx,
Prometheus and the alert topic."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.catalog import catalogued_spec
from fm_constructs.compute import CapacitySource
from fm_constructs.domain.defaults import HYPERPOD_EBS_VOLUME_GIB
from fm_constructs.domain.kinds import Orchestrator
from fm_constructs.domain.users import ClusterUser
from fm_constructs.errors import Problems
from fm_constructs.observability import AlertTopic, IPrometheusWorkspace
from fm_constructs.orchestration import (
    DEFAULT_KUBERNETES_VERSION,
    DevicePlugins,
    GpuEksCluster,
    WorkloadOperators,
)
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.hyperpod import (
    HyperPodCluster,
    InstanceGroup,
    SlurmNodeType,
    slurm_instance_groups,
)
from fm_constructs.patterns.cluster_workload import EksWorkload, HyperPodNodes
from fm_constructs.patterns.eks_monitoring import EksClusterScraping
from fm_constructs.patterns.observability import MonitoringFacade
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.rules import constructs as codes
from fm_constructs.storage.lustre_interface import ILustreFileSystem

#: Name of the accelerated instance group (Slurm: the worker partition's group).
WORKER_GROUP = "accelerated-workers"


class HyperPodAcceleratedWorkload(Construct):
    """A resilient HyperPod cluster for one workload, in one statement.

    Deep health checks before nodes join, automatic node recovery, the training plan of
    ``capacity`` (if any) on the accelerated group, FSx for Lustre mounted on every node.
    Slurm: controller, login and worker groups; nodes remote-write metrics to ``workspace``.
    EKS: a private EKS cluster with the HyperPod dependencies, scraped into ``workspace``.
    HyperPod node health events go to ``alert_topic``. ``efa_layout`` picks the network
    interfaces of the accelerated group (efa-only by default, as the IP budget counts them).
    ``extra_instance_groups`` (e.g. an RL rollout group) join the same cluster. ``users``
    (Slurm, with ``file_system``): accounts on every node with homes and SSH keys on FSx.
    ``file_system_efa_clients``: the EFA nodes of every cluster mounting ``file_system`` when
    another cluster shares it (:class:`HyperPodCluster` ``lustre_efa_clients``).

    ``eks_cluster`` (EKS only): an existing cluster to orchestrate the HyperPod nodes, such as
    the platform's shared cluster, whose own scraper then collects the metrics. Without it a
    private cluster is created for the workload. On either, the workload ``name`` gets its
    namespace with the file system's claim, Kueue queues for the HyperPod nodes and, when
    ``training``, the EFA-aware Kubeflow Trainer runtimes
    (:class:`~fm_constructs.patterns.cluster_workload.EksWorkload` on ``hyperpod_nodes``).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.HYPERPOD_WORKLOAD

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        gpu_subnet: ec2.ISubnet,
        orchestrator: Orchestrator,
        instance_type: str,
        node_count: int,
        capacity: CapacitySource | None = None,
        file_system: ILustreFileSystem | None = None,
        workspace: IPrometheusWorkspace | None = None,
        alert_topic: AlertTopic | None = None,
        kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
        admin_role_arns: Sequence[str] = (),
        public_access_cidrs: Sequence[str] = (),
        operators: WorkloadOperators | None = None,
        scraper_subnets: Sequence[ec2.ISubnet] | None = None,
        extra_instance_groups: Sequence[InstanceGroup] = (),
        efa_layout: EfaLayout = EfaLayout.EFA_ONLY,
        eks_cluster: IGpuCluster | None = None,
        name: str = "post_training",
        training: bool = True,
        users: Sequence[ClusterUser] = (),
        file_system_efa_clients: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.eks_cluster: IGpuCluster | None = None
        shared = eks_cluster is not None
        if orchestrator is Orchestrator.SLURM:
            groups = slurm_instance_groups(
                worker_instance_type=instance_type,
                worker_count=node_count,
                worker_capacity=capacity,
                worker_group_name=WORKER_GROUP,
                efa_layout=efa_layout,
            )
        else:
            groups = [
                InstanceGroup(
                    name=WORKER_GROUP,
                    instance_type=instance_type,
                    instance_count=node_count,
                    capacity=capacity,
                    ebs_volume_size_gib=HYPERPOD_EBS_VOLUME_GIB,
                    efa_layout=efa_layout,
                )
            ]
            self.eks_cluster = eks_cluster or GpuEksCluster(
                self,
                "EksCluster",
                vpc=vpc,
                gpu_availability_zone=gpu_subnet.availability_zone,
                kubernetes_version=kubernetes_version,
                admin_role_arns=admin_role_arns,
                public_access_cidrs=public_access_cidrs,
                operators=operators,
            )
            if shared and operators is not None:
                operators.enable(self.eks_cluster)
            problems = Problems.of(self)
            spec = catalogued_spec(problems, instance_type)
            problems.raise_if_any()  # an uncatalogued type, under this construct
            assert spec is not None
            DevicePlugins.for_family(spec.eks_ami_family).enable(self.eks_cluster)
        groups = [*groups, *extra_instance_groups]
        self.file_system = file_system
        self.cluster = HyperPodCluster(
            self,
            "Cluster",
            vpc=vpc,
            subnet=gpu_subnet,
            instance_groups=groups,
            orchestrator=orchestrator,
            eks_cluster=self.eks_cluster,
            lustre=file_system,
            prometheus=workspace if orchestrator is Orchestrator.SLURM else None,
            users=users,
            lustre_efa_clients=file_system_efa_clients,
        )
        # EKS orchestration: the workload's namespace, FSx claim, Kueue queues and EFA-aware
        # Trainer runtimes on the cluster (shared or its own).
        self.share: EksWorkload | None = None
        if self.eks_cluster is not None:
            self.share = EksWorkload(
                self,
                "Workload",
                cluster=self.eks_cluster,
                name=name,
                hyperpod_nodes=HyperPodNodes(instance_type, node_count, self.cluster),
                file_system=file_system,
                training=training,
            )
        #: What every workload offers (IAcceleratedWorkload): the nodes' security groups, the
        #: execution role of every instance group, and the queues (Slurm: the worker
        #: partitions; EKS: the workload's Kueue LocalQueue when the cluster runs Kueue).
        self.connections: ec2.Connections = self.cluster.connections
        self.node_roles: list[iam.IRole] = [self.cluster.role]
        self.queue_names: tuple[str, ...] = (
            self.share.queue_names
            if self.share is not None
            else tuple(
                g.resolved_partition_name
                for g in groups
                if g.slurm_node_type is SlurmNodeType.WORKER
            )
        )
        # Node events to the topic; a cluster of its own is scraped (a shared one has its
        # scraper already).
        self.monitoring = MonitoringFacade(
            workspace=workspace, alert_topic=alert_topic
        ).monitor_hyperpod(
            self,
            cluster=self.cluster,
            eks_cluster=None if shared else self.eks_cluster,
            scraper_subnets=scraper_subnets or vpc.private_subnets,
        )
        self.scraping: EksClusterScraping | None = self.monitoring.scraping
