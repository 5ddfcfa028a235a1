"""An accelerated workload on EKS: cluster, EFA node group, FSx mount and metrics, wired."""

from __future__ import annotations

import re
from collections.abc import Sequence

from aws_cdk import Annotations, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from fm_constructs.catalog import get_instance_type
from fm_constructs.compute import CapacityKind, CapacitySource
from fm_constructs.domain.defaults import ROOT_VOLUME_SIZE_GIB
from fm_constructs.errors import FmValidationError
from fm_constructs.kubernetes.node_shape import WorkloadTarget
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.observability import IPrometheusWorkspace
from fm_constructs.orchestration import (
    DEFAULT_KUBERNETES_VERSION,
    EfaNodeGroup,
    GpuEksCluster,
    WorkloadOperators,
)
from fm_constructs.orchestration.cluster_autoscaler import ClusterAutoscaler
from fm_constructs.orchestration.eks_charts import KUBEFLOW_TRAINER, ClusterAutoscalerSettings
from fm_constructs.patterns.eks_monitoring import EksClusterScraping
from fm_constructs.patterns.observability import MonitoringFacade
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.storage import LustreFileSystem

#: Node label the Cluster Autoscaler's AWS provider reads to know a node will offer GPUs: until
#: the device plugin advertises them, such a node counts as not ready instead of as a node
#: without GPUs (which would trigger another scale-up for the same Pending pods).
GPU_TYPE_LABEL = "k8s.amazonaws.com/accelerator"


def gpu_type_label(instance_type: str) -> dict[str, str]:
    """``{GPU_TYPE_LABEL: "nvidia-h100"}`` for an NVIDIA type of the catalog, ``{}`` for other
    or unknown types (the node group reports unknown types itself)."""
    try:
        spec = get_instance_type(instance_type)
    except FmValidationError:
        return {}
    if spec.eks_ami_family != "NVIDIA":
        return {}
    name = re.sub(r"[^a-z0-9]+", "-", spec.accelerator_name.lower()).strip("-")
    return {GPU_TYPE_LABEL: f"nvidia-{name}"[:63].rstrip("-")}


class EksAcceleratedWorkload(Construct):
    """A GPU/Trainium EKS cluster for one workload, in one statement.

    * a private EKS cluster (device plugins, EFA device plugin, DCGM exporter, the chosen
      operators) and a managed EFA node group in ``gpu_subnet`` with every EFA interface, the
      capacity given, placement group where the capacity allows one, NVMe RAID0, auto-repair;
    * ``min_node_count``/``max_node_count``: the node group's bounds around ``node_count``
      (both default to ``node_count``: a fixed size); an inference service sizes them for its
      ``max_replicas``;
    * node autoscaling: when ``max_node_count`` exceeds ``min_node_count``, the Kubernetes
      Cluster Autoscaler runs on the system nodes (``autoscaler_settings`` tunes it) and adds
      GPU nodes for Pending pods, removing idle ones down to ``min_node_count``. A fixed-size
      node group (the default, and what a training run or a Capacity Block wants) gets no
      autoscaler and is never resized;
    * ``file_system`` (optional) mounted into pods as PersistentVolume/Claim ``fsx-lustre`` and
      reachable from every node;
    * ``workspace`` (optional) fed by an AMP managed scraper running in ``scraper_subnets``;
    * ``training_workload`` (optional, a profile workload name such as ``pretraining``): the
      EFA-aware Kubeflow Trainer runtimes for these nodes in that workload's namespace, and the
      file system's claim there too (see :mod:`fm_constructs.kubernetes`).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        gpu_subnet: ec2.ISubnet,
        instance_type: str,
        node_count: int,
        min_node_count: int | None = None,
        max_node_count: int | None = None,
        capacity: CapacitySource | None = None,
        efa_layout: EfaLayout | None = EfaLayout.EFA_ONLY,
        root_volume_size_gib: int = ROOT_VOLUME_SIZE_GIB,
        kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
        admin_role_arns: Sequence[str] = (),
        public_access_cidrs: Sequence[str] = (),
        operators: WorkloadOperators | None = None,
        file_system: LustreFileSystem | None = None,
        workspace: IPrometheusWorkspace | None = None,
        scraper_subnets: Sequence[ec2.ISubnet] | None = None,
        autoscaler_settings: ClusterAutoscalerSettings | None = None,
        training_workload: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        min_nodes = node_count if min_node_count is None else min_node_count
        max_nodes = node_count if max_node_count is None else max_node_count
        autoscale = not Token.is_unresolved(min_nodes) and not Token.is_unresolved(max_nodes)
        autoscale = autoscale and max_nodes > min_nodes
        self.efa_security_group = EfaSecurityGroup(
            self, "EfaSecurityGroup", vpc=vpc, description="EFA traffic between GPU nodes"
        )
        self.cluster = GpuEksCluster(
            self,
            "Cluster",
            vpc=vpc,
            gpu_availability_zone=gpu_subnet.availability_zone,
            kubernetes_version=kubernetes_version,
            admin_role_arns=admin_role_arns,
            public_access_cidrs=public_access_cidrs,
            operators=operators,
        )
        self.gpu_nodes = EfaNodeGroup(
            self,
            "GpuNodes",
            cluster=self.cluster,
            instance_type=instance_type,
            subnet=gpu_subnet,
            node_count=node_count,
            min_node_count=min_node_count,
            max_node_count=max_node_count,
            capacity=capacity,
            efa_security_group=self.efa_security_group,
            efa_layout=efa_layout,
            root_volume_size_gib=root_volume_size_gib,
            labels=gpu_type_label(instance_type) if autoscale else None,
            # A group that grows later must not be pinned to a cluster placement group (adding
            # instances to one is where insufficient-capacity errors come from).
            create_placement_group=False if autoscale else None,
        )
        self.autoscaler: ClusterAutoscaler | None = None
        if autoscale:
            self.autoscaler = ClusterAutoscaler.enable(self.cluster, autoscaler_settings)
            if self.gpu_nodes.capacity.kind in (CapacityKind.CAPACITY_BLOCK, CapacityKind.ODCR):
                Annotations.of(self).add_warning_v2(
                    "fm:autoscaler-reserved-capacity",
                    f"The GPU node group runs on a {self.gpu_nodes.capacity.kind.value} "
                    f"reservation, billed whether nodes run or not, yet scales between "
                    f"{min_nodes} and {max_nodes} nodes: the Cluster Autoscaler removes idle "
                    "nodes down to min_node_count without saving anything. Set "
                    "min_node_count = max_node_count to keep the reservation filled.",
                )
        self.file_system = file_system
        self.training_target: WorkloadTarget | None = None
        runtimes: eks.KubernetesManifest | None = None
        if training_workload is not None and self.cluster.charts.get(KUBEFLOW_TRAINER.release):
            self.training_target = WorkloadTarget(training_workload, instance_type)
            # This manifest creates the workload namespace; the claim joins it (one owner).
            runtimes = self.cluster.add_training_runtimes(self.training_target)
        if file_system is not None:
            namespace = self.training_target.namespace if self.training_target else "default"
            volume = self.cluster.add_lustre_volume(
                file_system,
                name="fsx-lustre",
                namespace=namespace,
                create_namespace=runtimes is None,
            )
            if runtimes is not None:
                volume.node.add_dependency(runtimes)
        self.scraping: EksClusterScraping | None = MonitoringFacade(
            workspace=workspace
        ).monitor_eks_cluster(
            self,
            "Scraping",
            cluster=self.cluster,
            subnets=scraper_subnets or vpc.private_subnets,
            node_peers=[self.gpu_nodes],
        )
