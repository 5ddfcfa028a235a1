"""fm-constructs: AWS CDK constructs for foundation-model pre-training, post-training and
inference infrastructure (accelerated compute on EFA, FSx for Lustre linked to S3, EKS and
SageMaker HyperPod orchestration, managed Prometheus and Grafana).

Everything a consumer app uses is importable from here::

    from fm_constructs import DataBucket, GpuClusterVpc, GpuEksCluster, PretrainingWorkload

The names resolve on first use (PEP 562), so ``import fm_constructs.config`` or ``fmc`` never
pay for loading aws_cdk; the submodule paths (``fm_constructs.storage`` ...) keep working.
The public names are listed once, as the imports type checkers read at the end of this module;
the lazy table and ``__all__`` are built from that list when the package is imported.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"


def _read_exports() -> dict[str, str]:
    """Public name -> module that defines it, read from the imports under ``TYPE_CHECKING``
    at the end of this module (``from module import Name as Name``)."""
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )
    return {
        alias.name: node.module
        for node in block.body
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


#: Public name -> module that defines it.
_EXPORTS: dict[str, str] = _read_exports()
__all__ = ["__version__", *sorted(_EXPORTS)]


#: Former public names and what replaced them (0.x: removed, with the way forward).
REMOVED: dict[str, str] = {
    "EksAcceleratedWorkload": "a GpuEksCluster (created, or imported with "
    "GpuEksCluster.from_gpu_eks_cluster_attributes) with PretrainingWorkload, "
    "PostTrainingWorkload, InferenceWorkload or EksWorkload on it",
    "HyperPodEksShare": "EksWorkload(hyperpod_nodes=HyperPodNodes(...))",
}


def __getattr__(name: str) -> Any:
    """Load a public name from its module the first time it is used."""
    if name in REMOVED:
        raise AttributeError(f"fm_constructs.{name} was removed: use {REMOVED[name]}")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fm_constructs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


# The public names, once: what type checkers and editors see (each re-exported explicitly), and
# the source of _EXPORTS and __all__ above. One statement per module.
if TYPE_CHECKING:
    # isort: off
    from fm_constructs.catalog import (
        InstanceSpec as InstanceSpec,
        get_instance_type as get_instance_type,
    )
    from fm_constructs.compute import (
        CapacitySource as CapacitySource,
        ClusterPlacementGroup as ClusterPlacementGroup,
        GpuLaunchTemplate as GpuLaunchTemplate,
        NodeadmCluster as NodeadmCluster,
        OnDemandCapacityReservation as OnDemandCapacityReservation,
        UserDataMode as UserDataMode,
    )
    from fm_constructs.config import (
        Profile as Profile,
        load_profile as load_profile,
        parse_profile as parse_profile,
    )
    from fm_constructs.domain.kinds import (
        CapacityKind as CapacityKind,
        LoadBalancer as LoadBalancer,
        Orchestrator as Orchestrator,
        ServingMetric as ServingMetric,
    )
    from fm_constructs.errors import (
        FmValidationError as FmValidationError,
    )
    from fm_constructs.network import (
        EfaSecurityGroup as EfaSecurityGroup,
    )
    from fm_constructs.network.gpu_vpc import (
        GpuClusterVpc as GpuClusterVpc,
    )
    from fm_constructs.observability import (
        AlertRules as AlertRules,
        AlertTopic as AlertTopic,
        FsxLustreAlarms as FsxLustreAlarms,
        GrafanaAuthentication as GrafanaAuthentication,
        GrafanaDashboards as GrafanaDashboards,
        GrafanaWorkspace as GrafanaWorkspace,
        HyperPodHealthEvents as HyperPodHealthEvents,
        IPrometheusWorkspace as IPrometheusWorkspace,
        ManagedScraper as ManagedScraper,
        PrometheusWorkspace as PrometheusWorkspace,
    )
    from fm_constructs.orchestration import (
        ClusterAddons as ClusterAddons,
        DevicePlugins as DevicePlugins,
        EfaNodeGroup as EfaNodeGroup,
        GpuEksCluster as GpuEksCluster,
        HelmChartSpec as HelmChartSpec,
        WorkloadOperators as WorkloadOperators,
    )
    from fm_constructs.orchestration.cluster_autoscaler import (
        ClusterAutoscaler as ClusterAutoscaler,
    )
    from fm_constructs.orchestration.cluster_interface import (
        IGpuCluster as IGpuCluster,
    )
    from fm_constructs.orchestration.eks_charts import (
        ClusterAutoscalerSettings as ClusterAutoscalerSettings,
    )
    from fm_constructs.orchestration.eks_metrics_sources import (
        EksMetricsSources as EksMetricsSources,
    )
    from fm_constructs.orchestration.hyperpod import (
        DeepHealthCheck as DeepHealthCheck,
        HyperPodCluster as HyperPodCluster,
        HyperPodEksDependencies as HyperPodEksDependencies,
        HyperPodExecutionRole as HyperPodExecutionRole,
        InstanceGroup as InstanceGroup,
        KubernetesTaint as KubernetesTaint,
        LifecycleScripts as LifecycleScripts,
        NodeRecovery as NodeRecovery,
        SlurmNodeType as SlurmNodeType,
        slurm_instance_groups as slurm_instance_groups,
    )
    from fm_constructs.orchestration.hyperpod.imported import (
        IHyperPodCluster as IHyperPodCluster,
    )
    from fm_constructs.orchestration.load_balancer_controller import (
        AwsLoadBalancerController as AwsLoadBalancerController,
    )
    from fm_constructs.orchestration.pcs import (
        PcsCluster as PcsCluster,
        PcsComputeNodeGroup as PcsComputeNodeGroup,
        PcsInstanceRole as PcsInstanceRole,
        PcsQueue as PcsQueue,
    )
    from fm_constructs.patterns import (
        AutoscalingPolicy as AutoscalingPolicy,
        EksClusterScraping as EksClusterScraping,
        EksWorkload as EksWorkload,
        HyperPodAcceleratedWorkload as HyperPodAcceleratedWorkload,
        HyperPodMonitoring as HyperPodMonitoring,
        HyperPodNodes as HyperPodNodes,
        IAcceleratedWorkload as IAcceleratedWorkload,
        InferenceService as InferenceService,
        InferenceWorkload as InferenceWorkload,
        KedaAutoscaler as KedaAutoscaler,
        KueueFlavors as KueueFlavors,
        ModelServerSpec as ModelServerSpec,
        MonitoringFacade as MonitoringFacade,
        NodePool as NodePool,
        ObservabilityPlatform as ObservabilityPlatform,
        PcsAcceleratedWorkload as PcsAcceleratedWorkload,
        PostTrainingWorkload as PostTrainingWorkload,
        PretrainingWorkload as PretrainingWorkload,
    )
    from fm_constructs.planning.efa_layout import (
        EfaLayout as EfaLayout,
    )
    from fm_constructs.planning.serving_layout import (
        ServingLayout as ServingLayout,
    )
    from fm_constructs.policy import (
        acknowledge as acknowledge,
        enable_nag as enable_nag,
    )
    from fm_constructs.rules import (
        Finding as Finding,
        Severity as Severity,
    )
    from fm_constructs.storage import (
        DataBucket as DataBucket,
        DataPerimeter as DataPerimeter,
        DataRepositoryAssociation as DataRepositoryAssociation,
        FsxSizingRequest as FsxSizingRequest,
        FsxSizingResult as FsxSizingResult,
        IDataBucket as IDataBucket,
        LustreConnections as LustreConnections,
        LustreDeploymentType as LustreDeploymentType,
        LustreFileSystem as LustreFileSystem,
        LustreLogLevel as LustreLogLevel,
        S3Event as S3Event,
    )
    from fm_constructs.storage.lustre_interface import (
        ILustreFileSystem as ILustreFileSystem,
    )
    # isort: on
