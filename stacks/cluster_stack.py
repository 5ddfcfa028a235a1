"""The GPU EKS cluster the EKS workloads share (or a workload's dedicated one), in three stacks
that deploy as soon as what they need exists: control plane (:class:`ClusterStack`), what runs
on it (:class:`ClusterAddonsStack`: system nodes, add-ons, device plugins, operators) and the
AMP managed scraper (:class:`ClusterMonitoringStack`: up to 15 minutes; nothing waits for it)."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from constructs import Construct

from fm_constructs.patterns.deployment import Deployment
from stacks.outputs import output

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training",
    "inference": "inference",
}


class ClusterStack(Stack):
    """Cluster ``key`` of the deployment and what is cluster-wide on it; what runs on its
    control plane goes to ``addons`` (a :class:`ClusterAddonsStack`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        deployment: Deployment,
        key: str,
        addons: Stack,
        **kwargs: Any,
    ) -> None:
        options = deployment.options.clusters[key]
        members = ", ".join(_TITLES[w] for w in options.workloads)
        kind = "dedicated" if options.dedicated else "shared"
        description = f"fm-constructs {kind} GPU EKS cluster ({members})"
        super().__init__(scope, construct_id, description=description, **kwargs)
        built = deployment.build_cluster(self, key, addons_scope=addons)
        self.options, self.cluster, self.addons = options, built.cluster, addons
        self.scraper_security_group = built.scraper_security_group
        self.scraper_role_scope = built.scraper_role_scope
        name = self.cluster.cluster_name
        output(self, "EksClusterName", name)
        kubeconfig = f"aws eks update-kubeconfig --region {options.region} --name {name}"
        output(
            self,
            "KubeconfigCommand",
            kubeconfig,
            "Then: kubectl get nodes -L fm-constructs/node-pool",
        )


class ClusterAddonsStack(Stack):
    """What runs on one cluster's control plane (filled in by its :class:`ClusterStack`)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        description = (
            "fm-constructs GPU EKS cluster: system nodes, add-ons, device plugins and operators"
        )
        super().__init__(scope, construct_id, description=description, **kwargs)


class ClusterMonitoringStack(Stack):
    """The AMP managed scraper of cluster ``key`` (nothing else waits for it)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        deployment: Deployment,
        key: str,
        **kwargs: Any,
    ) -> None:
        description = "fm-constructs managed Prometheus scraper of the GPU EKS cluster"
        super().__init__(scope, construct_id, description=description, **kwargs)
        self.scraping = deployment.build_cluster_monitoring(self, key)
