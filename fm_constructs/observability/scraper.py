"""Agentless metric collection for an EKS cluster: the AMP managed scraper.

:class:`ManagedScraper` creates an ``AWS::APS::Scraper`` that discovers pods in the cluster and
remote-writes to a workspace, with the scrape configuration rendered from the shipped template
(DCGM exporter, node exporter, EFA exporter, kube-state-metrics, model servers and training
jobs). The scraper reaches the cluster through ENIs in the given subnets, with the given
security group, and reads the Kubernetes API as the user ``aps-collector-user``.

What the cluster side must do (kept out of this construct so that it does not depend on the
EKS construct and the scraper, up to 15 minutes to create, runs in parallel with the cluster):

* map :attr:`ManagedScraper.access_entry_principal_arn` (the scraper's role ARN *without* its
  ``aws-service-role/...`` path, as EKS requires) to the Kubernetes username
  :data:`SCRAPER_KUBERNETES_USERNAME` with an access entry (type STANDARD, no access policy);
* apply :meth:`ManagedScraper.rbac_manifests` (ClusterRole + ClusterRoleBinding);
* keep private endpoint access on, and allow the security group to reach the exporter ports.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import Duration, Fn, Stack, Token
from aws_cdk import aws_aps as aps
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.observability.data import EKS_SCRAPE_TEMPLATE, render_scrape_configuration
from fm_constructs.observability.prometheus import IPrometheusWorkspace

#: Kubernetes user name the scraper's role is mapped to (the AMP user guide's name).
SCRAPER_KUBERNETES_USERNAME = "aps-collector-user"
SCRAPER_CLUSTER_ROLE = "aps-collector-role"
SCRAPER_ROLE_NAME_PREFIX = "AWSServiceRoleForAmazonPrometheusScraper"
SCRAPER_CLUSTER_ROLE_BINDING = "aps-collector-user-role-binding"
#: The managed collector refuses scrape intervals below 30 seconds.
MIN_SCRAPE_INTERVAL_SECONDS = 30
DEFAULT_SCRAPE_INTERVAL = Duration.seconds(MIN_SCRAPE_INTERVAL_SECONDS)

#: Ports the shipped scrape configuration reads on the nodes and pods.
EXPORTER_PORTS = {
    "dcgm-exporter": 9400,
    "node-exporter": 9100,
    "efa-exporter": 9109,
    "kube-state-metrics": 8080,
}


def cluster_name_from_arn(cluster_arn: str) -> str:
    """``arn:aws:eks:region:account:cluster/NAME`` -> NAME (a token expression for tokens)."""
    if Token.is_unresolved(cluster_arn):
        return Fn.select(1, Fn.split("/", cluster_arn))
    return cluster_arn.split("/", 1)[1]


def scraper_rbac_manifests() -> list[dict[str, Any]]:
    """ClusterRole and ClusterRoleBinding for the scraper user, least privilege for the
    shipped configuration: discovery of pods, nodes, services, endpoints and endpoint slices,
    and GET of ``/metrics`` (API server metrics) — no secrets, no write verbs."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": SCRAPER_CLUSTER_ROLE},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["nodes", "nodes/metrics", "services", "endpoints", "pods"],
                    "verbs": ["get", "list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["get", "list", "watch"],
                },
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": SCRAPER_CLUSTER_ROLE_BINDING},
            "subjects": [
                {
                    "kind": "User",
                    "name": SCRAPER_KUBERNETES_USERNAME,
                    "apiGroup": "rbac.authorization.k8s.io",
                }
            ],
            "roleRef": {
                "kind": "ClusterRole",
                "name": SCRAPER_CLUSTER_ROLE,
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    ]


@jsii.implements(ec2.IConnectable)
class ManagedScraper(Construct):
    """``AWS::APS::Scraper`` from an EKS cluster to a managed Prometheus workspace.

    Child: ``Resource`` (the scraper). ``connections`` wraps the security group the scraper's
    ENIs use, so the cluster side can write ``nodes.connections.allow_from(scraper, port)``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_arn: str,
        subnets: Sequence[ec2.ISubnet],
        security_group: ec2.ISecurityGroup,
        workspace: IPrometheusWorkspace,
        scrape_interval: Duration = DEFAULT_SCRAPE_INTERVAL,
        scrape_configuration: str | None = None,
        alias: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems(context="ManagedScraper")
        if not Token.is_unresolved(cluster_arn) and (
            not cluster_arn.startswith("arn:")
            or ":eks:" not in cluster_arn
            or ":cluster/" not in cluster_arn
        ):
            problems.add(
                "cluster_arn",
                cluster_arn,
                "must be an EKS cluster ARN (arn:aws:eks:<region>:<account>:cluster/<name>)",
            )
        if len(subnets) < 2:
            problems.add(
                "subnets",
                [s.node.id for s in subnets],
                "must hold at least two subnets in two Availability Zones (the managed "
                "collector puts an ENI in each)",
            )
        else:
            zones = [s.availability_zone for s in subnets]
            if not any(Token.is_unresolved(z) for z in zones) and len(set(zones)) < 2:
                problems.add("subnets", zones, "must span at least two Availability Zones")
        interval_s = scrape_interval.to_seconds()
        if interval_s < MIN_SCRAPE_INTERVAL_SECONDS or interval_s != int(interval_s):
            problems.add(
                "scrape_interval",
                f"{interval_s}s",
                f"must be a whole number of seconds >= {MIN_SCRAPE_INTERVAL_SECONDS} (managed "
                "collector limit)",
            )
        problems.raise_if_any()

        self.cluster_arn = cluster_arn
        self.cluster_name = cluster_name_from_arn(cluster_arn)
        self.scrape_configuration = scrape_configuration or render_scrape_configuration(
            EKS_SCRAPE_TEMPLATE.read_text(encoding="utf-8"),
            cluster_name=self.cluster_name,
            scrape_interval_seconds=int(interval_s),
        )
        self.security_group = security_group
        self.connections = ec2.Connections(security_groups=[security_group])
        self.resource = aps.CfnScraper(
            self,
            "Resource",
            alias=alias,
            source=aps.CfnScraper.SourceProperty(
                eks_configuration=aps.CfnScraper.EksConfigurationProperty(
                    cluster_arn=cluster_arn,
                    subnet_ids=[s.subnet_id for s in subnets],
                    security_group_ids=[security_group.security_group_id],
                )
            ),
            destination=aps.CfnScraper.DestinationProperty(
                amp_configuration=aps.CfnScraper.AmpConfigurationProperty(
                    workspace_arn=workspace.workspace_arn
                )
            ),
            # CloudFormation takes the YAML itself here; the service API's base64 encoding is
            # done by the resource handler.
            scrape_configuration=aps.CfnScraper.ScrapeConfigurationProperty(
                configuration_blob=self.scrape_configuration
            ),
        )

    @property
    def scraper_arn(self) -> str:
        return self.resource.attr_arn

    @property
    def scraper_id(self) -> str:
        return self.resource.attr_scraper_id

    @property
    def scraper_role_arn(self) -> str:
        """The scraper's service-linked role ARN as AMP returns it (with its path)."""
        return self.resource.attr_role_arn

    @property
    def access_entry_principal_arn(self) -> str:
        """The role ARN EKS access entries accept: ``arn:...:role/<name>`` without the
        ``aws-service-role/scraper.aps.amazonaws.com/`` path."""
        # The role name is AWSServiceRoleForAmazonPrometheusScraper_<unique id>; the path in
        # front of it has appeared in more than one form, so rebuild the ARN from the id.
        stack = Stack.of(self)
        unique_id = Fn.select(1, Fn.split("_", self.scraper_role_arn))
        return Fn.join(
            "",
            [
                f"arn:{stack.partition}:iam::{stack.account}:role/",
                f"{SCRAPER_ROLE_NAME_PREFIX}_",
                unique_id,
            ],
        )

    @property
    def kubernetes_username(self) -> str:
        return SCRAPER_KUBERNETES_USERNAME

    def rbac_manifests(self) -> list[dict[str, Any]]:
        """Kubernetes manifests to apply in the cluster (see :func:`scraper_rbac_manifests`)."""
        return scraper_rbac_manifests()
