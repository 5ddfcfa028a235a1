"""The GPU EKS cluster the EKS workloads share (or a workload's dedicated one), in three stacks
that deploy as soon as what they need exists: control plane (:class:`ClusterStack`), what runs
on it (:class:`ClusterAddonsStack`: system nodes, add-ons, device plugins, operators) and the
AMP managed scraper (:class:`ClusterMonitoringStack`: up to 15 minutes; nothing waits for it)."""

from __future__ import annotations

from fm_constructs.patterns.deployment import Deployment
from stacks.outputs import PartStack, output


class ClusterStack(PartStack):
    """One EKS cluster and what is cluster-wide on it; what runs on its control plane goes to
    its :class:`ClusterAddonsStack`."""

    def record(self, deployment: Deployment) -> None:
        built = deployment.clusters[self.part]
        self.cluster = built.cluster
        self.scraper_security_group = built.scraper_security_group
        self.scraper_role_scope = built.scraper_role_scope
        name = self.cluster.cluster_name
        output(self, "EksClusterName", name)
        kubeconfig = f"aws eks update-kubeconfig --region {built.options.region} --name {name}"
        output(
            self,
            "KubeconfigCommand",
            kubeconfig,
            "Then: kubectl get nodes -L fm-constructs/node-pool",
        )


class ClusterAddonsStack(PartStack):
    """What runs on one cluster's control plane (filled in with its :class:`ClusterStack`)."""


class ClusterMonitoringStack(PartStack):
    """The AMP managed scraper of one cluster (nothing else waits for it)."""

    def record(self, deployment: Deployment) -> None:
        self.scraping = deployment.scrapers[self.part]
