"""The GPU EKS cluster the EKS workloads share (or a workload's dedicated one), in three stacks
that deploy as soon as what they need exists: control plane (:class:`ClusterStack`), what runs
on it (:class:`ClusterAddonsStack`: system nodes, add-ons, device plugins, operators) and the
AMP managed scraper (:class:`ClusterMonitoringStack`: up to 15 minutes; nothing waits for it)."""

from __future__ import annotations

from typing import Any

from constructs import Construct

from fm_constructs.config.options import ClusterOptions
from fm_constructs.patterns.deployment import Deployment
from stacks.outputs import PartStack, output

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training",
    "inference": "inference",
}


class ClusterStack(PartStack):
    """One EKS cluster and what is cluster-wide on it; what runs on its control plane goes to
    ``addons`` (a :class:`ClusterAddonsStack`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        options: ClusterOptions,
        addons: ClusterAddonsStack,
        **kwargs: Any,
    ) -> None:
        members = ", ".join(_TITLES[w] for w in options.workloads)
        kind = "dedicated" if options.dedicated else "shared"
        description = f"fm-constructs {kind} GPU EKS cluster ({members})"
        super().__init__(scope, construct_id, description=description, **kwargs)
        self.options, self.addons = options, addons

    def record(self, deployment: Deployment) -> None:
        built = deployment.clusters[self.options.key]
        self.cluster = built.cluster
        self.scraper_security_group = built.scraper_security_group
        self.scraper_role_scope = built.scraper_role_scope
        name = self.cluster.cluster_name
        output(self, "EksClusterName", name)
        kubeconfig = f"aws eks update-kubeconfig --region {self.options.region} --name {name}"
        output(
            self,
            "KubeconfigCommand",
            kubeconfig,
            "Then: kubectl get nodes -L fm-constructs/node-pool",
        )


class ClusterAddonsStack(PartStack):
    """What runs on one cluster's control plane (filled in with its :class:`ClusterStack`)."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        description = (
            "fm-constructs GPU EKS cluster: system nodes, add-ons, device plugins and operators"
        )
        super().__init__(scope, construct_id, description=description, **kwargs)


class ClusterMonitoringStack(PartStack):
    """The AMP managed scraper of cluster ``key`` (nothing else waits for it)."""

    def __init__(self, scope: Construct, construct_id: str, key: str, **kwargs: Any) -> None:
        description = "fm-constructs managed Prometheus scraper of the GPU EKS cluster"
        super().__init__(scope, construct_id, description=description, **kwargs)
        self.key = key

    def record(self, deployment: Deployment) -> None:
        self.scraping = deployment.scrapers[self.key]
