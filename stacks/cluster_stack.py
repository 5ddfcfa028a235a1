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

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fm_constructs.patterns.deployment import Deployment

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
        deployment: Deployment,
        key: str,
        addons: Stack,
        **kwargs: Any,
    ) -> None:
        """Cluster ``key`` of the deployment; ``addons``: the stack that holds what runs on
        the control plane (:class:`ClusterAddonsStack`)."""
        options = deployment.options.clusters[key]
        members = ", ".join(_TITLES[w] for w in options.workloads)
        kind = "dedicated" if options.dedicated else "shared"
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {kind} GPU EKS cluster ({members})",
            **kwargs,
        )
        built = deployment.build_cluster(self, key, addons_scope=addons)
        self.options, self.cluster, self.addons = options, built.cluster, addons
        self.scraper_security_group = built.scraper_security_group
        self.scraper_role_scope = built.scraper_role_scope
        CfnOutput(self, "EksClusterName", value=self.cluster.cluster_name)
        CfnOutput(
            self,
            "KubeconfigCommand",
            value=f"aws eks update-kubeconfig --region {options.region} "
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
        deployment: Deployment,
        key: str,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description="fm-constructs managed Prometheus scraper of the GPU EKS cluster",
            **kwargs,
        )
        self.scraping = deployment.build_cluster_monitoring(self, key)
