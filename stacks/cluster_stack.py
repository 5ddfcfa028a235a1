"""The GPU EKS cluster the EKS workloads share (or one workload's dedicated cluster), and the
managed scraper that collects its metrics, each in its own stack.

The cluster stack holds the control plane, the system nodes, the managed add-ons and the
cluster-wide charts and operators; workloads add their node groups and Kubernetes objects in
their own stacks. The scraper takes up to a quarter of an hour to create, so it has a stack of
its own that nothing waits for; its security group is created with the cluster, so workload
nodes can accept it from the start.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.catalog import get_instance_type
from fm_constructs.config import PlatformConfig, Profile
from fm_constructs.config.options import ClusterOptions
from fm_constructs.observability import IPrometheusWorkspace
from fm_constructs.orchestration import GpuEksCluster, WorkloadOperators
from fm_constructs.patterns import EksClusterScraping

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training",
    "inference": "inference",
}


def _operators(options: ClusterOptions) -> WorkloadOperators:
    chosen = options.operators
    return WorkloadOperators(
        kueue="kueue" in chosen,
        kubeflow_trainer="kubeflow_trainer" in chosen,
        kuberay="kuberay" in chosen,
        leader_worker_set="leader_worker_set" in chosen,
    )


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
        eni_config_subnets: dict[str, str] | None = None,
        prefix_delegation: bool = False,
        **kwargs: Any,
    ) -> None:
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
            public_access_cidrs=platform.public_access_cidrs,
            operators=_operators(cluster),
            eni_config_subnets=eni_config_subnets,
            prefix_delegation=prefix_delegation,
        )
        # Device plugins of every member's accelerators, installed with the cluster.
        families = set()
        for name in cluster.workloads:
            workload = profile.workloads_by_name[name]
            families.add(get_instance_type(workload.instance_type).eks_ami_family)
            if workload.rollout.enabled:
                families.add(get_instance_type(workload.rollout.instance_type).eks_ami_family)
        for family in sorted(families):
            self.cluster.enable_device_plugins(family)
        self.cluster.enable_efa_device_plugin()
        self.scraper_security_group: ec2.SecurityGroup | None = None
        if scraped:
            self.scraper_security_group = ec2.SecurityGroup(
                self,
                "ScraperSecurityGroup",
                vpc=vpc,
                description="AMP managed scraper of the GPU cluster",
                allow_all_outbound=True,
            )
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
        self.scraping = EksClusterScraping(
            self,
            "Scraping",
            cluster=cluster.cluster,
            workspace=workspace,
            subnets=subnets,
            security_group=cluster.scraper_security_group,
        )
