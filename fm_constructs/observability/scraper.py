"""Agentless metric collection for an EKS cluster: the AMP managed scraper.

:class:`ManagedScraper` creates an ``AWS::APS::Scraper`` that discovers pods in the cluster and
remote-writes to a workspace, with the scrape configuration rendered from the shipped template
(DCGM exporter, node exporter, EFA exporter, kube-state-metrics, model servers and training
jobs). The scraper reaches the cluster through ENIs in the given subnets, with the given
security group, and reads the Kubernetes API as the user ``aps-collector-user``.

Cluster access: on clusters whose authentication mode is ``API`` or ``API_AND_CONFIG_MAP``
(every cluster this library builds) the service creates the scraper's EKS access entry itself
when the scraper is created, so none is declared here (a second entry for the same principal
would fail the deployment). Only a ``CONFIG_MAP`` cluster needs the scraper role mapped by hand:
map :attr:`ManagedScraper.access_entry_principal_arn` to :data:`SCRAPER_KUBERNETES_USERNAME` and
apply :func:`scraper_rbac_manifests`. Either way keep private endpoint access on and let the
security group reach the exporter ports.

Encrypted workspaces: a workspace encrypted with a customer-managed key only accepts a
scraper created with a role configuration (the AMP user guide's setup for such workspaces,
with the source and target roles in the same account). :class:`ManagedScraper` creates both
roles whenever the workspace's key is customer managed: ``SourceRole``, assumed by the
scraper service, may only assume ``TargetRole``, which may remote-write to this workspace and
use its key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jsii
from aws_cdk import Duration, Fn, Stack, Token
from aws_cdk import aws_aps as aps
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from fm_constructs.domain import ports
from fm_constructs.errors import Problems
from fm_constructs.kubernetes.scraper_access import (
    SCRAPER_KUBERNETES_USERNAME as SCRAPER_KUBERNETES_USERNAME,
)
from fm_constructs.kubernetes.scraper_access import (
    scraper_rbac_manifests as scraper_rbac_manifests,
)
from fm_constructs.observability.data import EKS_SCRAPE_TEMPLATE, render_scrape_configuration
from fm_constructs.observability.prometheus import IPrometheusWorkspace, PrometheusWorkspace
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules

SCRAPER_ROLE_NAME_PREFIX = "AWSServiceRoleForAmazonPrometheusScraper"
#: Service principal of the managed collector (trust of the role configuration's source role).
SCRAPER_SERVICE_PRINCIPAL = "scraper.aps.amazonaws.com"
#: The managed collector refuses scrape intervals below 30 seconds.
MIN_SCRAPE_INTERVAL_SECONDS = observability_rules.MIN_SCRAPE_INTERVAL_SECONDS
DEFAULT_SCRAPE_INTERVAL = Duration.seconds(MIN_SCRAPE_INTERVAL_SECONDS)

#: Ports the shipped scrape configuration reads on the nodes and pods.
EXPORTER_PORTS = {
    "dcgm-exporter": ports.DCGM_EXPORTER_PORT,
    "node-exporter": ports.NODE_EXPORTER_PORT,
    "efa-exporter": ports.EFA_EXPORTER_PORT,
    "kube-state-metrics": ports.KUBE_STATE_METRICS_PORT,
}


def cluster_name_from_arn(cluster_arn: str) -> str:
    """``arn:aws:eks:region:account:cluster/NAME`` -> NAME (a token expression for tokens)."""
    if Token.is_unresolved(cluster_arn):
        return Fn.select(1, Fn.split("/", cluster_arn))
    return cluster_arn.split("/", 1)[1]


@jsii.implements(ec2.IConnectable)
class ManagedScraper(Construct):
    """``AWS::APS::Scraper`` from an EKS cluster to a managed Prometheus workspace.

    Children: ``Resource`` (the scraper); ``SourceRole`` and ``TargetRole`` (its role
    configuration) when the workspace is encrypted with a customer-managed key, that is for a
    :class:`PrometheusWorkspace` of this app, or when ``workspace_key`` names the key of an
    imported workspace. ``connections`` wraps the security group the scraper's ENIs use, so the
    cluster side can write ``nodes.connections.allow_from(scraper, port)``. ``role_scope``:
    the construct the two roles are created under (default: this one); one in a stack that
    deploys earlier (the cluster's) keeps their creation off the scraper's quarter of an hour.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.SCRAPER

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
        workspace_key: kms.IKey | None = None,
        role_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        problems.adopt(
            observability_rules.managed_scraper(
                subnet_ids=[s.node.id for s in subnets],
                cluster_arn=cluster_arn,
                # read only when there are two (an imported subnet may not know its zone)
                subnet_zones=[s.availability_zone for s in subnets] if len(subnets) >= 2 else [],
                scrape_interval_seconds=scrape_interval.to_seconds(),
            )
        )
        interval_s = scrape_interval.to_seconds()
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
        key = workspace_key or (
            workspace.key if isinstance(workspace, PrometheusWorkspace) else None
        )
        self.source_role: iam.Role | None = None
        self.target_role: iam.Role | None = None
        role_configuration = None
        if key is not None:
            self.source_role, self.target_role = self._role_configuration(
                role_scope or self, workspace, key
            )
            role_configuration = aps.CfnScraper.RoleConfigurationProperty(
                source_role_arn=self.source_role.role_arn,
                target_role_arn=self.target_role.role_arn,
            )
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
            role_configuration=role_configuration,
        )
        if self.source_role is not None and self.target_role is not None:
            # The service checks both roles when the scraper is created.
            self.resource.node.add_dependency(self.source_role, self.target_role)
        self.scraper_arn: str = self.resource.attr_arn
        self.scraper_id: str = self.resource.attr_scraper_id
        #: The scraper's service-linked role ARN as AMP returns it (with its path).
        self.scraper_role_arn: str = self.resource.attr_role_arn

    def _role_configuration(
        self, scope: Construct, workspace: IPrometheusWorkspace, key: kms.IKey
    ) -> tuple[iam.Role, iam.Role]:
        """Source role (trusted by the scraper service of this account and region, allowed to
        assume the target role only) and target role (trusted by the source role, allowed to
        remote-write to ``workspace`` with ``key``)."""
        stack = Stack.of(self)
        source = iam.Role(
            scope,
            "SourceRole",
            assumed_by=iam.ServicePrincipal(SCRAPER_SERVICE_PRINCIPAL).with_conditions(
                {
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="aps", resource="scraper", resource_name="*"
                        )
                    },
                }
            ),
            description="Managed Prometheus scraper: source role of its role configuration",
        )
        target = iam.Role(
            scope,
            "TargetRole",
            assumed_by=iam.ArnPrincipal(source.role_arn),
            description="Managed Prometheus scraper: remote write into the encrypted workspace",
        )
        target.grant_assume_role(source)
        workspace.grant_remote_write(target)
        key.grant(target, "kms:Decrypt", "kms:GenerateDataKey")
        return source, target

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
