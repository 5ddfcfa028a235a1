"""What a GPU EKS cluster offers its workloads, whether this app created it
(:class:`~fm_constructs.orchestration.GpuEksCluster`) or imported it
(:meth:`~fm_constructs.orchestration.GpuEksCluster.from_gpu_eks_cluster_attributes`): pinned
charts installed once, device plugins and operators switched on by the workloads that need
them, FSx for Lustre volumes, and the node peers every mounted file system accepts.

One implementation for both (:class:`GpuClusterFeatures`), so an imported cluster works
wherever a created one does (:class:`~fm_constructs.orchestration.cluster_interface.IGpuCluster`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct, IConstruct

from fm_constructs.catalog import EksAmiFamily, InstanceSpec, all_instance_types
from fm_constructs.errors import Problems
from fm_constructs.kubernetes.lustre_volume import rename_volume
from fm_constructs.kubernetes.objects import plain_namespace
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.addon_registry import AddonRegistry
from fm_constructs.policy import acknowledge
from fm_constructs.policy.nag_findings import acknowledge_generated_iam
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import eks as eks_rules

if TYPE_CHECKING:
    from fm_constructs.orchestration.cluster_interface import IGpuCluster
    from fm_constructs.storage.lustre_interface import ILustreFileSystem


@dataclass(frozen=True)
class DevicePlugins:
    """Device plugins and GPU telemetry installed with the cluster.

    ``nvidia``: NVIDIA device plugin (``nvidia.com/gpu``); ``neuron``: Neuron device plugin
    (``aws.amazon.com/neuron``) for Trainium; ``efa``: AWS EFA device plugin
    (``vpc.amazonaws.com/efa``); ``dcgm_exporter``: DCGM exporter (GPU metrics on port 9400,
    needs ``nvidia``). Adding an :class:`EfaNodeGroup` switches on what its family needs.
    """

    nvidia: bool = True
    neuron: bool = False
    efa: bool = True
    dcgm_exporter: bool = True

    @classmethod
    def for_family(
        cls, family: EksAmiFamily, *, efa: bool = True, dcgm_exporter: bool = True
    ) -> DevicePlugins:
        """What accelerated nodes of ``family`` ("NVIDIA" or "NEURON") need: its device plugin
        (with the DCGM exporter for NVIDIA, unless ``dcgm_exporter`` is off) and, with ``efa``,
        the EFA device plugin."""
        return cls(
            nvidia=family == "NVIDIA",
            neuron=family == "NEURON",
            efa=efa,
            dcgm_exporter=dcgm_exporter,
        )

    def enable(self, cluster: IGpuCluster) -> None:
        """Install the switched-on plugins on ``cluster``, each chart once per cluster (those
        switched off are left as they are, so node groups sharing a cluster add up)."""
        if self.nvidia:
            cluster.add_pinned_chart(
                charts.NVIDIA_DEVICE_PLUGIN, charts.nvidia_device_plugin_values()
            )
            if self.dcgm_exporter:
                cluster.add_pinned_chart(charts.DCGM_EXPORTER, charts.dcgm_exporter_values())
        if self.neuron:
            cluster.add_pinned_chart(
                charts.NEURON_DEVICE_PLUGIN,
                charts.neuron_device_plugin_values(_family_types("NEURON")),
            )
        if self.efa:
            cluster.add_pinned_chart(
                charts.EFA_DEVICE_PLUGIN, charts.efa_device_plugin_values(_efa_types())
            )


@dataclass(frozen=True)
class WorkloadOperators:
    """Workload operators a training or serving team expects, each switchable per cluster.

    ``kueue``: quotas, queueing and gang admission for batch jobs (pre-training, SFT);
    ``kubeflow_trainer``: Kubeflow Trainer v2 (TrainJob; successor of the training operator,
    ships JobSet); ``kuberay``: KubeRay operator (RL post-training on Ray);
    ``leader_worker_set``: LeaderWorkerSet (multi-node inference replicas).
    """

    kueue: bool = True
    kubeflow_trainer: bool = True
    kuberay: bool = False
    leader_worker_set: bool = False

    @classmethod
    def named(cls, names: Iterable[str]) -> WorkloadOperators:
        """Exactly the operators in ``names`` (field names, as a profile's workloads list them
        in :data:`~fm_constructs.domain.workload_data.OPERATORS`); an unknown name is an error."""
        chosen = set(names)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(chosen - fields)
        if unknown:
            raise ValueError(f"unknown operators {unknown}; known: {sorted(fields)}")
        return cls(**{name: name in chosen for name in fields})

    def enable(self, cluster: IGpuCluster) -> None:
        """Install the operators switched on here on ``cluster``, each once per cluster (those
        switched off are left as they are, so workloads sharing a cluster add up)."""
        for enabled, spec in (
            (self.kueue, charts.KUEUE),
            (self.kubeflow_trainer, charts.KUBEFLOW_TRAINER),
            (self.kuberay, charts.KUBERAY_OPERATOR),
            (self.leader_worker_set, charts.LEADER_WORKER_SET),
        ):
            if enabled:
                values = charts.kueue_values() if spec is charts.KUEUE else {}
                cluster.add_pinned_chart(spec, values, wait=True)


def _names(spec: InstanceSpec) -> list[str]:
    """Values a node's ``node.kubernetes.io/instance-type`` label can take for ``spec``: the EC2
    name on EKS node groups, the ``ml.`` name on SageMaker HyperPod nodes."""
    return [spec.name, *([spec.hyperpod_name] if spec.hyperpod_name else [])]


def _family_types(family: EksAmiFamily) -> list[str]:
    return [
        n for spec in all_instance_types() if spec.eks_ami_family == family for n in _names(spec)
    ]


def _efa_types() -> list[str]:
    return [n for spec in all_instance_types() if spec.efa_supported for n in _names(spec)]


class GpuClusterFeatures:
    """The features of :class:`~fm_constructs.orchestration.cluster_interface.IGpuCluster`
    over the attributes both cluster classes set: ``icluster`` (kubectl-capable),
    ``addons_scope`` (where charts and cluster-wide manifests go), ``addon_registry``,
    ``system_nodes`` (what charts install after) and ``fsx_csi_driver`` (what volumes wait
    for; None when the cluster already runs the driver). Call :meth:`_init_features` once
    those exist."""

    icluster: eks.ICluster
    addons_scope: Construct
    addon_registry: AddonRegistry
    system_nodes: IConstruct
    fsx_csi_driver: IConstruct | None
    #: The construct whose child ``KubectlProvider`` is (its findings are acknowledged once).
    kubectl_provider_parent: IConstruct
    context_name: str = "GpuEksCluster"

    @property
    def cluster_name(self) -> str:
        return self.icluster.cluster_name

    @property
    def cluster_arn(self) -> str:
        return self.icluster.cluster_arn

    @property
    def vpc(self) -> ec2.IVpc:
        """The VPC of the control plane and the nodes."""
        return self.icluster.vpc

    @property
    def cluster_security_group(self) -> ec2.ISecurityGroup:
        return self.icluster.cluster_security_group

    @property
    def connections(self) -> ec2.Connections:
        """Connections of the cluster security group (control plane and system nodes)."""
        return self.icluster.connections

    def _init_features(self) -> None:
        #: Pinned charts installed on the cluster by this app, by release name.
        self.charts: dict[str, eks.HelmChart] = {}
        self._kubectl_acknowledged = False
        self._node_peers: list[ec2.IConnectable] = [self.icluster]
        self._lustre_file_systems: list[ILustreFileSystem] = []

    def add_node_peer(self, peer: ec2.IConnectable) -> None:
        """Register the security groups of a node group so that every FSx for Lustre file system
        mounted with :meth:`add_lustre_volume` (before or after) accepts its clients."""
        self._node_peers.append(peer)
        for file_system in self._lustre_file_systems:
            file_system.connections.allow_default_port_from(peer)

    def add_lustre_volume(
        self,
        file_system: ILustreFileSystem,
        *,
        name: str = "fsx-lustre",
        namespace: str = "default",
        scope: Construct | None = None,
        volume_name: str | None = None,
        create_namespace: bool = True,
    ) -> eks.KubernetesManifest:
        """Mount ``file_system`` into pods: a static PersistentVolume ``volume_name`` (default
        ``name``; volumes are cluster-wide, so workloads sharing a cluster give theirs distinct
        names) and a claim ``namespace/name`` for the FSx CSI driver add-on. The namespace is
        created when it does not exist and ``create_namespace``.

        Without ``scope`` the manifest belongs to the cluster and the Lustre ports are opened
        from every node security group of this cluster (system nodes and EFA node groups,
        including ones added later). With ``scope`` (a workload on a shared cluster, in its own
        stack) the manifest is created there and the caller opens the ports from its own
        nodes, so the cluster never references a workload's file system.
        """
        problems = Problems(
            context=f"{self.context_name}.add_lustre_volume", code=codes.EKS_CLUSTER
        )
        problems.adopt(eks_rules.lustre_volume_names(name=name, namespace=namespace))
        problems.raise_if_any()
        manifests: list[dict[str, Any]] = []
        if create_namespace and namespace not in ("default", "kube-system"):
            manifests.append(plain_namespace(namespace))
        manifests.extend(
            rename_volume(
                file_system.kubernetes_static_volume(name=name, namespace=namespace),
                volume_name or name,
            )
        )
        manifest = eks.KubernetesManifest(
            scope or self.addons_scope,
            f"LustreVolume-{namespace}-{name}",
            cluster=self.icluster,
            manifest=manifests,
            overwrite=True,
        )
        if self.fsx_csi_driver is not None:
            manifest.node.add_dependency(self.fsx_csi_driver)
        self._acknowledge_kubectl_provider()
        if scope is None:
            self._lustre_file_systems.append(file_system)
            for peer in self._node_peers:
                file_system.connections.allow_default_port_from(peer)
        return manifest

    def add_pinned_chart(
        self, spec: charts.HelmChartSpec, values: Mapping[str, Any], *, wait: bool = False
    ) -> eks.HelmChart:
        """Install the pinned Helm chart ``spec`` once per cluster (a second call returns the
        first release): after the system nodes, listed in :attr:`charts`."""
        existing = self.charts.get(spec.release)
        if existing is not None:
            return existing

        def create(scope: Construct, construct_id: str) -> eks.HelmChart:
            return eks.HelmChart(
                scope,
                construct_id,
                cluster=self.icluster,
                chart=spec.chart,
                repository=spec.repository,
                version=spec.version,
                release=spec.release,
                namespace=spec.namespace,
                create_namespace=True,
                values=dict(values) or None,
                wait=wait,
            )

        chart = self.addon_registry.install(f"Chart{spec.construct_id}", create)
        # Controllers need a node to run on; DaemonSets for accelerated nodes do not wait
        # (the nodes may come later), but installing them after the system nodes keeps the
        # helm releases from racing the add-ons.
        chart.node.add_dependency(self.system_nodes)
        self.charts[spec.release] = chart
        self._acknowledge_kubectl_provider()
        return chart

    def _acknowledge_kubectl_provider(self) -> None:
        """aws-cdk-lib creates the kubectl provider (a child of the cluster) on the first
        chart or manifest; acknowledge its findings once it exists."""
        if self._kubectl_acknowledged:
            return
        provider = self.kubectl_provider_parent.node.try_find_child("KubectlProvider")
        if provider is None:
            return
        self._kubectl_acknowledged = True
        acknowledge_generated_iam(
            provider,
            managed_reason="aws-cdk-lib's kubectl provider Lambda roles use "
            "AWSLambdaBasicExecutionRole, AWSLambdaVPCAccessExecutionRole (the handler runs in "
            "the cluster VPC to reach the private endpoint) and the ECR read-only policies "
            "(to pull OCI Helm charts); the library fixes these roles.",
            wildcard_reason="aws-cdk-lib's provider framework may invoke any version of its "
            "own kubectl handler (function ARN with :*); the scope is fixed by the library.",
        )
        handler = provider.node.try_find_child("Handler")
        if handler is not None:
            acknowledge(
                handler,
                "AwsSolutions-L1",
                "The kubectl handler runtime is pinned by aws-cdk-lib to the Python version its "
                "kubectl/helm layer is built for.",
            )
