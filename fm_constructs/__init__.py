"""fm-constructs: AWS CDK constructs for foundation-model pre-training, post-training and
inference infrastructure (accelerated compute on EFA, FSx for Lustre linked to S3, EKS and
SageMaker HyperPod orchestration, managed Prometheus and Grafana).

Everything a consumer app uses is importable from here::

    from fm_constructs import DataBucket, GpuClusterVpc, GpuEksCluster, PretrainingWorkload

The names resolve on first use (PEP 562), so ``import fm_constructs.config`` or ``fmc`` never
pay for loading aws_cdk; the submodule paths (``fm_constructs.storage`` ...) keep working.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> module that defines it.
_EXPORTS: dict[str, str] = {
    # patterns (floor 3)
    "PretrainingWorkload": "fm_constructs.patterns",
    "PostTrainingWorkload": "fm_constructs.patterns",
    "InferenceWorkload": "fm_constructs.patterns",
    "IAcceleratedWorkload": "fm_constructs.patterns",
    "EksWorkload": "fm_constructs.patterns",
    "NodePool": "fm_constructs.patterns",
    "KueueFlavors": "fm_constructs.patterns",
    "HyperPodAcceleratedWorkload": "fm_constructs.patterns",
    "HyperPodNodes": "fm_constructs.patterns",
    "PcsAcceleratedWorkload": "fm_constructs.patterns",
    "InferenceService": "fm_constructs.patterns",
    "ObservabilityPlatform": "fm_constructs.patterns",
    "EksClusterScraping": "fm_constructs.patterns",
    "KedaAutoscaler": "fm_constructs.patterns",
    "ModelServerSpec": "fm_constructs.patterns",
    "AutoscalingPolicy": "fm_constructs.patterns",
    # network
    "GpuClusterVpc": "fm_constructs.network.gpu_vpc",
    "EfaSecurityGroup": "fm_constructs.network",
    # compute
    "CapacityKind": "fm_constructs.compute",
    "CapacitySource": "fm_constructs.compute",
    "ClusterPlacementGroup": "fm_constructs.compute",
    "GpuLaunchTemplate": "fm_constructs.compute",
    "NodeadmCluster": "fm_constructs.compute",
    "OnDemandCapacityReservation": "fm_constructs.compute",
    "UserDataMode": "fm_constructs.compute",
    # storage
    "DataBucket": "fm_constructs.storage",
    "IDataBucket": "fm_constructs.storage",
    "DataRepositoryAssociation": "fm_constructs.storage",
    "S3Event": "fm_constructs.storage",
    "LustreFileSystem": "fm_constructs.storage",
    "ILustreFileSystem": "fm_constructs.storage.lustre_interface",
    "LustreConnections": "fm_constructs.storage",
    "LustreDeploymentType": "fm_constructs.storage",
    "LustreLogLevel": "fm_constructs.storage",
    "FsxSizingRequest": "fm_constructs.storage",
    "FsxSizingResult": "fm_constructs.storage",
    # orchestration
    "GpuEksCluster": "fm_constructs.orchestration",
    "EfaNodeGroup": "fm_constructs.orchestration",
    "ClusterAddons": "fm_constructs.orchestration",
    "DevicePlugins": "fm_constructs.orchestration",
    "WorkloadOperators": "fm_constructs.orchestration",
    "HelmChartSpec": "fm_constructs.orchestration",
    "ClusterAutoscalerSettings": "fm_constructs.orchestration.eks_charts",
    "IGpuCluster": "fm_constructs.orchestration.cluster_interface",
    "HyperPodCluster": "fm_constructs.orchestration.hyperpod",
    "IHyperPodCluster": "fm_constructs.orchestration.hyperpod.imported",
    "PcsCluster": "fm_constructs.orchestration.pcs",
    "PcsComputeNodeGroup": "fm_constructs.orchestration.pcs",
    "PcsInstanceRole": "fm_constructs.orchestration.pcs",
    "PcsQueue": "fm_constructs.orchestration.pcs",
    "HyperPodExecutionRole": "fm_constructs.orchestration.hyperpod",
    "HyperPodEksDependencies": "fm_constructs.orchestration.hyperpod",
    "LifecycleScripts": "fm_constructs.orchestration.hyperpod",
    "InstanceGroup": "fm_constructs.orchestration.hyperpod",
    "SlurmNodeType": "fm_constructs.orchestration.hyperpod",
    # HyperPodCluster(orchestrator=...); the profile's own enum is fm_constructs.config's.
    "Orchestrator": "fm_constructs.orchestration.hyperpod",
    "DeepHealthCheck": "fm_constructs.orchestration.hyperpod",
    "NodeRecovery": "fm_constructs.orchestration.hyperpod",
    "KubernetesTaint": "fm_constructs.orchestration.hyperpod",
    "slurm_instance_groups": "fm_constructs.orchestration.hyperpod",
    # observability
    "PrometheusWorkspace": "fm_constructs.observability",
    "IPrometheusWorkspace": "fm_constructs.observability",
    "ManagedScraper": "fm_constructs.observability",
    "AlertRules": "fm_constructs.observability",
    "AlertTopic": "fm_constructs.observability",
    "GrafanaWorkspace": "fm_constructs.observability",
    "GrafanaDashboards": "fm_constructs.observability",
    "GrafanaAuthentication": "fm_constructs.observability",
    "FsxLustreAlarms": "fm_constructs.observability",
    "HyperPodHealthEvents": "fm_constructs.observability",
    # policy
    "enable_nag": "fm_constructs.policy",
    "acknowledge": "fm_constructs.policy",
    # floor 1: value types, profiles, planning, catalog, errors
    "EfaLayout": "fm_constructs.planning.efa_layout",
    "ServingLayout": "fm_constructs.planning.serving_layout",
    "InstanceSpec": "fm_constructs.catalog",
    "get_instance_type": "fm_constructs.catalog",
    "Profile": "fm_constructs.config",
    "load_profile": "fm_constructs.config",
    "parse_profile": "fm_constructs.config",
    "LoadBalancer": "fm_constructs.config",
    "ServingMetric": "fm_constructs.config",
    "FmValidationError": "fm_constructs.errors",
    "Finding": "fm_constructs.rules",
    "Severity": "fm_constructs.rules",
}

#: Kept equal to the keys of _EXPORTS by tests/unit/test_public_api.py.
__all__ = [
    "AlertRules",
    "AlertTopic",
    "AutoscalingPolicy",
    "CapacityKind",
    "CapacitySource",
    "ClusterAddons",
    "ClusterAutoscalerSettings",
    "ClusterPlacementGroup",
    "DataBucket",
    "DataRepositoryAssociation",
    "DeepHealthCheck",
    "DevicePlugins",
    "EfaLayout",
    "EfaNodeGroup",
    "EfaSecurityGroup",
    "EksClusterScraping",
    "EksWorkload",
    "Finding",
    "FmValidationError",
    "FsxLustreAlarms",
    "FsxSizingRequest",
    "FsxSizingResult",
    "GpuClusterVpc",
    "GpuEksCluster",
    "GpuLaunchTemplate",
    "GrafanaAuthentication",
    "GrafanaDashboards",
    "GrafanaWorkspace",
    "HelmChartSpec",
    "HyperPodAcceleratedWorkload",
    "HyperPodCluster",
    "HyperPodEksDependencies",
    "HyperPodExecutionRole",
    "HyperPodHealthEvents",
    "HyperPodNodes",
    "IAcceleratedWorkload",
    "IDataBucket",
    "IGpuCluster",
    "IHyperPodCluster",
    "ILustreFileSystem",
    "IPrometheusWorkspace",
    "InferenceService",
    "InferenceWorkload",
    "InstanceGroup",
    "InstanceSpec",
    "KedaAutoscaler",
    "KubernetesTaint",
    "KueueFlavors",
    "LifecycleScripts",
    "LoadBalancer",
    "LustreConnections",
    "LustreDeploymentType",
    "LustreFileSystem",
    "LustreLogLevel",
    "ManagedScraper",
    "ModelServerSpec",
    "NodePool",
    "NodeRecovery",
    "NodeadmCluster",
    "ObservabilityPlatform",
    "OnDemandCapacityReservation",
    "Orchestrator",
    "PcsAcceleratedWorkload",
    "PcsCluster",
    "PcsComputeNodeGroup",
    "PcsInstanceRole",
    "PcsQueue",
    "PostTrainingWorkload",
    "PretrainingWorkload",
    "Profile",
    "PrometheusWorkspace",
    "S3Event",
    "ServingLayout",
    "ServingMetric",
    "Severity",
    "SlurmNodeType",
    "UserDataMode",
    "WorkloadOperators",
    "__version__",
    "acknowledge",
    "enable_nag",
    "get_instance_type",
    "load_profile",
    "parse_profile",
    "slurm_instance_groups",
]


#: Former public names -> the name that replaced them (still importable, not listed).
_RENAMED: dict[str, str] = {
    "HyperPodEksShare": "EksWorkload",
    "EksAcceleratedWorkload": "EksWorkload",
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module the first time it is used."""
    name = _RENAMED.get(name, name)
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fm_constructs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # what type checkers and editors see
    from fm_constructs.catalog import InstanceSpec, get_instance_type
    from fm_constructs.compute import (
        CapacityKind,
        CapacitySource,
        ClusterPlacementGroup,
        GpuLaunchTemplate,
        NodeadmCluster,
        OnDemandCapacityReservation,
        UserDataMode,
    )
    from fm_constructs.config import (
        LoadBalancer,
        Profile,
        ServingMetric,
        load_profile,
        parse_profile,
    )
    from fm_constructs.errors import FmValidationError
    from fm_constructs.network import EfaSecurityGroup
    from fm_constructs.network.gpu_vpc import GpuClusterVpc
    from fm_constructs.observability import (
        AlertRules,
        AlertTopic,
        FsxLustreAlarms,
        GrafanaAuthentication,
        GrafanaDashboards,
        GrafanaWorkspace,
        HyperPodHealthEvents,
        IPrometheusWorkspace,
        ManagedScraper,
        PrometheusWorkspace,
    )
    from fm_constructs.orchestration import (
        ClusterAddons,
        DevicePlugins,
        EfaNodeGroup,
        GpuEksCluster,
        HelmChartSpec,
        WorkloadOperators,
    )
    from fm_constructs.orchestration.cluster_interface import IGpuCluster
    from fm_constructs.orchestration.eks_charts import ClusterAutoscalerSettings
    from fm_constructs.orchestration.hyperpod import (
        DeepHealthCheck,
        HyperPodCluster,
        HyperPodEksDependencies,
        HyperPodExecutionRole,
        InstanceGroup,
        KubernetesTaint,
        LifecycleScripts,
        NodeRecovery,
        Orchestrator,
        SlurmNodeType,
        slurm_instance_groups,
    )
    from fm_constructs.orchestration.hyperpod.imported import IHyperPodCluster
    from fm_constructs.orchestration.pcs import (
        PcsCluster,
        PcsComputeNodeGroup,
        PcsInstanceRole,
        PcsQueue,
    )
    from fm_constructs.patterns import (
        AutoscalingPolicy,
        EksClusterScraping,
        EksWorkload,
        HyperPodAcceleratedWorkload,
        HyperPodNodes,
        IAcceleratedWorkload,
        InferenceService,
        InferenceWorkload,
        KedaAutoscaler,
        KueueFlavors,
        ModelServerSpec,
        NodePool,
        ObservabilityPlatform,
        PcsAcceleratedWorkload,
        PostTrainingWorkload,
        PretrainingWorkload,
    )
    from fm_constructs.planning.efa_layout import EfaLayout
    from fm_constructs.planning.serving_layout import ServingLayout
    from fm_constructs.policy import acknowledge, enable_nag
    from fm_constructs.rules import Finding, Severity
    from fm_constructs.storage import (
        DataBucket,
        DataRepositoryAssociation,
        FsxSizingRequest,
        FsxSizingResult,
        IDataBucket,
        LustreConnections,
        LustreDeploymentType,
        LustreFileSystem,
        LustreLogLevel,
        S3Event,
    )
    from fm_constructs.storage.lustre_interface import ILustreFileSystem
