"""L3 patterns: compositions of the building blocks that a user imports into their own app."""

from fm_constructs.patterns.cluster_workload import EksWorkload, HyperPodNodes, NodePool
from fm_constructs.patterns.eks_monitoring import EksClusterScraping
from fm_constructs.patterns.hyperpod_workload import HyperPodAcceleratedWorkload
from fm_constructs.patterns.inference import InferenceService, KedaAutoscaler
from fm_constructs.patterns.inference_manifests import AutoscalingPolicy, ModelServerSpec
from fm_constructs.patterns.kueue_queues import KueueFlavors
from fm_constructs.patterns.observability import ObservabilityPlatform
from fm_constructs.patterns.pcs_workload import PcsAcceleratedWorkload
from fm_constructs.patterns.workloads import (
    IAcceleratedWorkload,
    InferenceWorkload,
    PostTrainingWorkload,
    PretrainingWorkload,
)

#: Former names, still importable: HyperPodEksShare folded into :class:`EksWorkload`
#: (``hyperpod_nodes=``); EksAcceleratedWorkload gave way to :class:`GpuEksCluster` with a
#: workload pattern (:class:`PretrainingWorkload` ...) or :class:`EksWorkload` on it.
HyperPodEksShare = EksWorkload
EksAcceleratedWorkload = EksWorkload

__all__ = [
    "AutoscalingPolicy",
    "EksClusterScraping",
    "EksWorkload",
    "HyperPodAcceleratedWorkload",
    "HyperPodNodes",
    "IAcceleratedWorkload",
    "InferenceService",
    "InferenceWorkload",
    "KedaAutoscaler",
    "KueueFlavors",
    "ModelServerSpec",
    "NodePool",
    "ObservabilityPlatform",
    "PcsAcceleratedWorkload",
    "PostTrainingWorkload",
    "PretrainingWorkload",
]
