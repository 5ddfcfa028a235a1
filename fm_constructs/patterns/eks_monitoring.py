"""Agentless Prometheus collection for a GPU EKS cluster: the metrics sources on the cluster and
the AMP managed scraper that collects them."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.domain import job_metrics
from fm_constructs.observability import IPrometheusWorkspace, ManagedScraper
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.eks_metrics_sources import EksMetricsSources

#: Ports the scraper reaches on the nodes: node exporter, DCGM exporter, EFA exporter,
#: kube-state-metrics and the model server (8080), and the job-metrics contract's port.
EXPORTER_PORTS = (9100, 9400, 9109, 8080, job_metrics.METRICS_PORT)


class EksClusterScraping(Construct):
    """Scrape ``cluster`` into ``workspace`` with an AMP managed scraper.

    Installs the cluster's metrics sources (:class:`EksMetricsSources`, once per cluster). The
    scraper runs in ``subnets`` (two zones or more) behind its own security group, which the
    cluster's nodes accept on the exporter ports. No access entry is declared: the service
    creates the scraper's own entry on clusters in ``API`` authentication mode (all clusters of
    this library), and a second entry for the same principal would fail the deployment.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IGpuCluster,
        workspace: IPrometheusWorkspace,
        subnets: Sequence[ec2.ISubnet],
        node_peers: Sequence[ec2.IConnectable] = (),
        security_group: ec2.ISecurityGroup | None = None,
        scraper_role_scope: Construct | None = None,
    ) -> None:
        """``scraper_role_scope``: where the scraper's role configuration is created (see
        :class:`~fm_constructs.observability.ManagedScraper`'s ``role_scope``)."""
        super().__init__(scope, construct_id)
        self.metrics_sources = EksMetricsSources.of(cluster)
        # A shared cluster creates the scraper's group with itself (``security_group``), so
        # workloads can open their nodes to it without waiting for the scraper.
        self.security_group = security_group or ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=cluster.vpc,
            description="AMP managed scraper of the GPU cluster",
            allow_all_outbound=True,
        )
        self.scraper = ManagedScraper(
            self,
            "Scraper",
            cluster_arn=cluster.cluster_arn,
            subnets=subnets,
            security_group=self.security_group,
            role_scope=scraper_role_scope,
            workspace=workspace,
        )
        # The scraper calls the private API endpoint and the exporters on every node.
        cluster.connections.allow_from(self.security_group, ec2.Port.tcp(443), "AMP scraper")
        for peer in (cluster, *node_peers):
            for port in EXPORTER_PORTS:
                peer.connections.allow_from(
                    self.security_group, ec2.Port.tcp(port), "AMP scraper to exporters"
                )
