"""Agentless Prometheus collection for a GPU EKS cluster: the AMP managed scraper plus the
in-cluster identity and RBAC it needs."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from fm_constructs.domain import job_metrics
from fm_constructs.observability import IPrometheusWorkspace, ManagedScraper
from fm_constructs.orchestration import GpuEksCluster

#: Ports the scraper reaches on the nodes: node exporter, DCGM exporter, EFA exporter,
#: kube-state-metrics and the model server (8080), and the job-metrics contract's port.
EXPORTER_PORTS = (9100, 9400, 9109, 8080, job_metrics.METRICS_PORT)


class EksClusterScraping(Construct):
    """Scrape ``cluster`` into ``workspace`` with an AMP managed scraper.

    The scraper runs in ``subnets`` (two zones or more) behind its own security group, which the
    cluster's nodes accept on the exporter ports; its role is mapped into the cluster through an
    access entry with the username the scraper's ClusterRole binding names.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: GpuEksCluster,
        workspace: IPrometheusWorkspace,
        subnets: Sequence[ec2.ISubnet],
        node_peers: Sequence[ec2.IConnectable] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=cluster.cluster.vpc,
            description="AMP managed scraper of the GPU cluster",
            allow_all_outbound=True,
        )
        self.scraper = ManagedScraper(
            self,
            "Scraper",
            cluster_arn=cluster.cluster_arn,
            subnets=subnets,
            security_group=self.security_group,
            workspace=workspace,
        )
        # The scraper calls the private API endpoint and the exporters on every node.
        cluster.connections.allow_from(self.security_group, ec2.Port.tcp(443), "AMP scraper")
        for peer in (cluster, *node_peers):
            for port in EXPORTER_PORTS:
                peer.connections.allow_from(
                    self.security_group, ec2.Port.tcp(port), "AMP scraper to exporters"
                )
        self.access_entry = eks.CfnAccessEntry(
            self,
            "AccessEntry",
            cluster_name=cluster.cluster_name,
            principal_arn=self.scraper.access_entry_principal_arn,
            username=self.scraper.kubernetes_username,
            type="STANDARD",
        )
        self.rbac = cluster.cluster.add_manifest("ScraperRbac", *self.scraper.rbac_manifests())
