"""L3 patterns: compositions of the building blocks that a user imports into their own app."""

from fm_constructs.orchestration.keda import KedaAutoscaler
from fm_constructs.orchestration.kueue_flavors import KueueFlavors
from fm_constructs.patterns.cluster_workload import EksWorkload, HyperPodNodes, NodePool
from fm_constructs.patterns.eks_monitoring import EksClusterScraping
from fm_constructs.patterns.hyperpod_workload import HyperPodAcceleratedWorkload
from fm_constructs.patterns.inference import InferenceService
from fm_constructs.patterns.observability import (
    HyperPodMonitoring,
    MonitoringFacade,
    ObservabilityPlatform,
)
from fm_constructs.patterns.pcs_workload import PcsAcceleratedWorkload
from fm_constructs.patterns.workloads import (
    IAcceleratedWorkload,
    InferenceWorkload,
    PostTrainingWorkload,
    PretrainingWorkload,
)
from fm_constructs.planning.autoscaling import AutoscalingPolicy
from fm_constructs.planning.serving_layout import ModelServerSpec

__all__ = [
    "AutoscalingPolicy",
    "EksClusterScraping",
    "EksWorkload",
    "HyperPodAcceleratedWorkload",
    "HyperPodMonitoring",
    "HyperPodNodes",
    "IAcceleratedWorkload",
    "InferenceService",
    "InferenceWorkload",
    "KedaAutoscaler",
    "KueueFlavors",
    "ModelServerSpec",
    "MonitoringFacade",
    "NodePool",
    "ObservabilityPlatform",
    "PcsAcceleratedWorkload",
    "PostTrainingWorkload",
    "PretrainingWorkload",
]
