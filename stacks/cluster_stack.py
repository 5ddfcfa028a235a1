"""The GPU EKS cluster the EKS workloads share (or one workload's dedicated cluster), in three
stacks that deploy as soon as what they need exists:

- :class:`ClusterStack` (``<name>-cluster``): the control plane, its secrets key, the admin
  access entries, the kubectl provider and the scraper's security group;
- :class:`ClusterAddonsStack` (``<name>-cluster-addons``): the system nodes, the managed
  add-ons, the device plugins, exporters, operators and Kueue ResourceFlavors (everything
  :class:`~fm_constructs.orchestration.GpuEksCluster` creates under its ``addons_scope``);
- :class:`ClusterMonitoringStack` (``<name>-cluster-monitoring``): the AMP managed scraper.

The scraper takes up to a quarter of an hour to create and needs only the control plane, so it
starts while the add-ons install, and nothing waits for it. Workloads add their node groups
and Kubernetes objects in their own stacks, after the add-ons.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.catalog import get_instance_type
from fm_constructs.config import PlatformConfig, Profile
from fm_constructs.config.options import ClusterOptions
from fm_constructs.domain import names
from fm_constructs.observability import IPrometheusWorkspace
from fm_constructs.orchestration import GpuEksCluster, WorkloadOperators
from fm_constructs.patterns import MonitoringFacade
from fm_constructs.patterns.eks_monitoring import scraper_security_group

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training",
    "inference": "inference",
}


class ClusterStack(Stack):
    """One GPU EKS cluster and what is cluster-wide on it."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: ClusterOptions,
        profile: Profile,
        vpc: ec2.IVpc,
        scraped: bool,
        addons: Stack,
        eni_config_subnets: dict[str, str] | None = None,
        prefix_delegation: bool = False,
        **kwargs: Any,
    ) -> None:
        """``addons``: the stack that holds what runs on the control plane
        (:class:`ClusterAddonsStack`)."""
        platform = profile.platform
        members = ", ".join(_TITLES[w] for w in cluster.workloads)
        kind = "dedicated" if cluster.dedicated else "shared"
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {kind} GPU EKS cluster ({members})",
            **kwargs,
        )
        self.options = cluster
        self.cluster = GpuEksCluster(
            self,
            "Cluster",
            vpc=vpc,
            gpu_availability_zone=platform.availability_zone,
            kubernetes_version=platform.kubernetes_version,
            admin_role_arns=platform.admin_role_arns,
            submitter_namespaces=submitter_namespaces(profile, cluster.workloads),
            public_access_cidrs=platform.public_access_cidrs,
            operators=WorkloadOperators.named(cluster.operators),
            eni_config_subnets=eni_config_subnets,
            prefix_delegation=prefix_delegation,
            addons_scope=Construct(addons, "Cluster"),
        )
        self.addons = addons
        # Device plugins of every member's accelerators, installed with the cluster.
        families = set()
        for name in cluster.workloads:
            workload = profile.workloads_by_name[name]
            families.add(get_instance_type(workload.instance_type).eks_ami_family)
            if workload.rollout_group is not None:
                families.add(get_instance_type(workload.rollout_group.instance_type).eks_ami_family)
        for family in sorted(families):
            self.cluster.enable_device_plugins(family)
        self.cluster.enable_efa_device_plugin()
        self.scraper_security_group: ec2.SecurityGroup | None = None
        self.scraper_role_scope: Construct | None = None
        if scraped:
            self.scraper_security_group = scraper_security_group(
                self, "ScraperSecurityGroup", vpc=vpc
            )
            # The scraper's role configuration, created with the control plane so that the
            # monitoring stack creates only the scraper (same construct path as there).
            self.scraper_role_scope = Construct(Construct(self, "Scraping"), "Scraper")
        self._outputs(platform)

    def _outputs(self, platform: PlatformConfig) -> None:
        CfnOutput(self, "EksClusterName", value=self.cluster.cluster_name)
        CfnOutput(
            self,
            "KubeconfigCommand",
            value=f"aws eks update-kubeconfig --region {platform.region} "
            f"--name {self.cluster.cluster_name}",
            description="Then: kubectl get nodes -L fm-constructs/node-pool",
        )


class ClusterAddonsStack(Stack):
    """What runs on one cluster's control plane: system nodes, add-ons, charts, operators
    (filled in by the :class:`ClusterStack` of the same cluster)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(
            scope,
            construct_id,
            description="fm-constructs GPU EKS cluster: system nodes, add-ons, device plugins "
            "and operators",
            **kwargs,
        )


class ClusterMonitoringStack(Stack):
    """The AMP managed scraper of one cluster (nothing else waits for it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: ClusterStack,
        workspace: IPrometheusWorkspace,
        subnets: list[ec2.ISubnet],
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description="fm-constructs managed Prometheus scraper of the GPU EKS cluster",
            **kwargs,
        )
        assert cluster.scraper_security_group is not None
        self.scraping = MonitoringFacade(workspace=workspace).monitor_eks_cluster(
            self,
            "Scraping",
            cluster=cluster.cluster,
            subnets=subnets,
            security_group=cluster.scraper_security_group,
            scraper_role_scope=cluster.scraper_role_scope,
        )


def submitter_namespaces(profile: Profile, workloads: Sequence[str]) -> dict[str, list[str]]:
    """Role ARN -> the namespaces (workload and diagnostics) it submits jobs in, over the
    cluster's ``workloads``."""
    found: dict[str, list[str]] = {}
    for workload in profile.enabled_workloads:
        if workload.name not in workloads:
            continue
        for arn in workload.submitter_role_arns:
            found.setdefault(arn, []).extend(
                [
                    names.workload_namespace(workload.name),
                    names.diagnostics_namespace(workload.name),
                ]
            )
    return found
