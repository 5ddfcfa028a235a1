"""What a HyperPod workload owns on the EKS cluster that orchestrates its nodes.

The HyperPod counterpart of :class:`~fm_constructs.patterns.cluster_workload.EksWorkload`,
without node groups (HyperPod creates the nodes): the workload namespace and its service
account (one manifest, so the namespace has exactly one owner), the FSx for Lustre claim in
it, the Kueue ResourceFlavor, ClusterQueue and LocalQueue of the HyperPod nodes (selected by
their ``ml.`` instance-type label) and the EFA-aware Kubeflow Trainer runtimes. Everything
lives in the workload's scope and refers to the cluster, never the other way round.
"""

from __future__ import annotations

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from fm_constructs import kubernetes as k8s
from fm_constructs.config.options import capacity_quota
from fm_constructs.domain import names
from fm_constructs.domain.topology import flavor_topology
from fm_constructs.kubernetes.node_shape import INSTANCE_TYPE_LABEL, WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import training_pod_budget, training_runtimes
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.patterns.kueue_queues import KueueFlavors
from fm_constructs.patterns.network_isolation import network_policies_manifest
from fm_constructs.storage.lustre_interface import ILustreFileSystem

#: Short name of the HyperPod node pool (its ResourceFlavor is ``<namespace>-hyperpod``).
HYPERPOD_POOL = "hyperpod"


class HyperPodEksShare(Construct):
    """Workload ``name``'s share of ``cluster`` for ``node_count`` HyperPod nodes of
    ``instance_type`` (the EC2 name; nodes carry the ``ml.`` name as their instance-type label).

    ``training``: install the Trainer runtimes (NVIDIA nodes with the Trainer chart only; Neuron
    jobs use the AWS Neuron images instead). The Kueue objects are created when the cluster runs
    Kueue; the namespace is then labelled for Kueue so that jobs go through the LocalQueue.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IGpuCluster,
        name: str,
        instance_type: str,
        node_count: int,
        file_system: ILustreFileSystem | None = None,
        training: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.target = WorkloadTarget(name, instance_type, hyperpod=True)
        self.namespace = self.target.namespace
        kueue = cluster.charts.get(charts.KUEUE.release)
        self.namespace_manifest = eks.KubernetesManifest(
            self,
            "Namespace",
            cluster=cluster.icluster,
            manifest=k8s.namespace_objects(name, kueue_managed=kueue is not None),
        )
        self.network_policies = network_policies_manifest(
            self, cluster, name, self.namespace_manifest
        )
        self.volume: eks.KubernetesManifest | None = None
        if file_system is not None:
            self.volume = cluster.add_lustre_volume(
                file_system,
                name=self.target.fsx_claim,
                namespace=self.namespace,
                scope=self,
                volume_name=f"{self.namespace}-{self.target.fsx_claim}",
                create_namespace=False,
            )
            self.volume.node.add_dependency(self.namespace_manifest)
        self.queues: eks.KubernetesManifest | None = None
        if kueue is not None:
            self.queues = self._queues(cluster, name, instance_type, node_count)
            self.queues.node.add_dependency(kueue)
        self.training_runtimes: eks.KubernetesManifest | None = None
        trainer = cluster.charts.get(charts.KUBEFLOW_TRAINER.release)
        if training and trainer is not None and self.target.spec.eks_ami_family == "NVIDIA":
            self.training_runtimes = eks.KubernetesManifest(
                self,
                "TrainingRuntimes",
                cluster=cluster.icluster,
                manifest=[*training_runtimes(self.target), training_pod_budget(self.target)],
                overwrite=True,
            )
            self.training_runtimes.node.add_dependency(self.namespace_manifest)
            self.training_runtimes.node.add_dependency(trainer)

    @property
    def queue_names(self) -> tuple[str, ...]:
        return (names.local_queue_name(self.target.workload),) if self.queues is not None else ()

    def _queues(
        self, cluster: IGpuCluster, name: str, instance_type: str, node_count: int
    ) -> eks.KubernetesManifest:
        flavors = KueueFlavors.of(cluster)
        flavor = names.resource_flavor_name(name, HYPERPOD_POOL)
        flavors.add(
            k8s.Flavor(
                name=flavor,
                node_labels=((INSTANCE_TYPE_LABEL, self.target.node_type_label),),
                taints=(),
                # The host alone: every flavor of the cohort names a topology (see
                # domain.topology.HOST_TOPOLOGY).
                topology_name=flavor_topology(self.target.spec, network_layers=False),
            ),
            owner=name,
            quota=capacity_quota(instance_type, node_count),
        )
        queue = names.cluster_queue_name(name)
        manifest = eks.KubernetesManifest(
            self,
            "Queues",
            cluster=cluster.icluster,
            manifest=[
                flavors.cluster_queue(queue, owner=name, namespace=self.namespace),
                k8s.local_queue(
                    names.local_queue_name(name), namespace=self.namespace, cluster_queue_name=queue
                ),
            ],
        )
        manifest.node.add_dependency(self.namespace_manifest)
        return manifest
