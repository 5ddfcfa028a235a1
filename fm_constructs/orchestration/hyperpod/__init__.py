"""SageMaker HyperPod: clusters orchestrated by Slurm or EKS, their typed instance groups,
execution role, lifecycle scripts and EKS dependencies."""

from fm_constructs.domain.kinds import Orchestrator
from fm_constructs.kubernetes.hyperpod import health_monitoring_agent_manifests
from fm_constructs.orchestration.hyperpod.cluster import HyperPodCluster, NodeRecovery
from fm_constructs.orchestration.hyperpod.eks import HyperPodEksDependencies, hyperpod_node_labels
from fm_constructs.orchestration.hyperpod.instance_groups import (
    HYPERPOD_CPU_INSTANCE_TYPES,
    DeepHealthCheck,
    InstanceGroup,
    KubernetesTaint,
    PatchingStrategy,
    ScheduledUpdate,
    SlurmNodeType,
    check_layout,
    hyperpod_orchestrator,
    lookup_instance_type,
    slurm_instance_groups,
)
from fm_constructs.orchestration.hyperpod.lifecycle import (
    LifecycleScripts,
    provisioning_parameters,
)
from fm_constructs.orchestration.hyperpod.role import HyperPodExecutionRole
from fm_constructs.orchestration.slurm import scripts_directory

__all__ = [
    "HYPERPOD_CPU_INSTANCE_TYPES",
    "DeepHealthCheck",
    "HyperPodCluster",
    "HyperPodEksDependencies",
    "HyperPodExecutionRole",
    "InstanceGroup",
    "KubernetesTaint",
    "LifecycleScripts",
    "NodeRecovery",
    "Orchestrator",
    "PatchingStrategy",
    "ScheduledUpdate",
    "SlurmNodeType",
    "check_layout",
    "health_monitoring_agent_manifests",
    "hyperpod_node_labels",
    "hyperpod_orchestrator",
    "lookup_instance_type",
    "provisioning_parameters",
    "scripts_directory",
    "slurm_instance_groups",
]
