"""Orchestration building blocks: an EKS cluster for accelerated workloads and EFA node groups."""

from fm_constructs.orchestration.cluster_features import DevicePlugins, WorkloadOperators
from fm_constructs.orchestration.efa_node_group import EfaNodeGroup, node_labels
from fm_constructs.orchestration.eks_addons import ClusterAddons
from fm_constructs.orchestration.eks_charts import ALL_CHARTS, HelmChartSpec
from fm_constructs.orchestration.eks_cluster import GpuEksCluster
from fm_constructs.planning.kubernetes_versions import (
    DEFAULT_KUBERNETES_VERSION,
    SUPPORTED_VERSIONS,
)

__all__ = [
    "ALL_CHARTS",
    "DEFAULT_KUBERNETES_VERSION",
    "SUPPORTED_VERSIONS",
    "ClusterAddons",
    "DevicePlugins",
    "EfaNodeGroup",
    "GpuEksCluster",
    "HelmChartSpec",
    "WorkloadOperators",
    "node_labels",
]
