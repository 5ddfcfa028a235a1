"""What the workload namespaces' network policies need to know about the cluster."""

from __future__ import annotations

import jsii
from aws_cdk import Annotations
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from fm_constructs import kubernetes as k8s
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster

#: The warning of :func:`vpc_cidrs` when the VPC's CIDR is unknown.
NO_VPC_CIDR_WARNING = (
    "fm:network-policy-vpc-cidr",
    "The cluster's VPC was imported without vpc_cidr_block: the workload namespaces' "
    "network policies admit nothing from the VPC (no scraping, no load balancer).",
)


def vpc_cidrs(cluster: IGpuCluster, warning: tuple[str, str] = NO_VPC_CIDR_WARNING) -> list[str]:
    """The primary CIDR of the cluster's VPC, the source of the load balancer's and the
    managed collector's connections; an imported VPC may not know it, then none, and the
    cluster carries ``warning`` (id, message; by default: the workload namespaces then admit
    nothing from outside themselves)."""
    try:
        return [cluster.vpc.vpc_cidr_block]
    except jsii.errors.JSIIError:
        Annotations.of(cluster).add_warning_v2(*warning)
        return []


def kuberay_namespace(cluster: IGpuCluster) -> str | None:
    """The KubeRay operator's namespace when the cluster runs it."""
    release = charts.KUBERAY_OPERATOR.release
    return charts.KUBERAY_OPERATOR.namespace if release in cluster.charts else None


def network_policies_manifest(
    scope: Construct, cluster: IGpuCluster, workload: str, namespaces: eks.KubernetesManifest
) -> eks.KubernetesManifest:
    """The workload namespaces' network policies (``NetworkPolicies`` under ``scope``), applied
    after ``namespaces``. Apart from the namespaces: the VPC's CIDR is a deploy-time value."""
    manifest = eks.KubernetesManifest(
        scope,
        "NetworkPolicies",
        cluster=cluster.icluster,
        manifest=k8s.namespace_network_policies(
            workload,
            vpc_cidrs=vpc_cidrs(cluster),
            kuberay_namespace=kuberay_namespace(cluster),
        ),
    )
    manifest.node.add_dependency(namespaces)
    return manifest
