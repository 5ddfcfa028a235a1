"""Amazon Managed Grafana workspace with a customer-managed, least-privilege role.

CloudFormation can only create workspaces whose permission type is ``CUSTOMER_MANAGED``
with a role it is given, so this construct owns that role: read-only queries on the listed
Prometheus workspaces and CloudWatch metric reads, nothing else. Users sign in through IAM
Identity Center by default or SAML.

Precondition of the default: IAM Identity Center must be enabled (an organization or account
instance, in the workspace's region's partition) before the deploy; without it CloudFormation
fails to create the workspace and rolls the stack back. Check with
``aws sso-admin list-instances`` (an empty list means not enabled); choose SAML, or turn Grafana
off (profile ``platform.grafana = false``), where Identity Center is not an option. The construct
adds this as an info annotation wherever it is chosen, so ``cdk synth`` output says so too.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum

from aws_cdk import Annotations, ArnFormat, RemovalPolicy, Stack
from aws_cdk import aws_grafana as grafana
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs import pins
from fm_constructs.errors import Problems
from fm_constructs.observability.prometheus import QUERY_ACTIONS, IPrometheusWorkspace
from fm_constructs.policy import acknowledge
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules

#: Grafana major.minor version of the workspace (one Amazon Managed Grafana offers that supports
#: service accounts), pinned in pins.toml.
DEFAULT_GRAFANA_VERSION = pins.service("managed-grafana").version

#: CloudWatch and tag reads the Grafana CloudWatch data source makes (none supports
#: resource-level permissions, hence Resource "*").
CLOUDWATCH_READ_ACTIONS = (
    "cloudwatch:DescribeAlarmsForMetric",
    "cloudwatch:DescribeAlarmHistory",
    "cloudwatch:DescribeAlarms",
    "cloudwatch:ListMetrics",
    "cloudwatch:GetMetricData",
    "cloudwatch:GetInsightRuleReport",
    "ec2:DescribeRegions",
    "tag:GetResources",
)


class GrafanaAuthentication(Enum):
    """How users sign in to the workspace."""

    IAM_IDENTITY_CENTER = "AWS_SSO"
    SAML = "SAML"


class GrafanaWorkspace(Construct):
    """``AWS::Grafana::Workspace`` (child ``Resource``, Retain) and its role (``Role``).

    Data sources PROMETHEUS and CLOUDWATCH are declared on the workspace; the data source
    *objects* inside Grafana (URL, SigV4) are provisioned by :class:`GrafanaDashboards`.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.GRAFANA

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        prometheus_workspaces: Sequence[IPrometheusWorkspace],
        name: str | None = None,
        description: str = "Foundation-model cluster observability",
        authentication: Sequence[GrafanaAuthentication] = (
            GrafanaAuthentication.IAM_IDENTITY_CENTER,
        ),
        saml_configuration: grafana.CfnWorkspace.SamlConfigurationProperty | None = None,
        grafana_version: str = DEFAULT_GRAFANA_VERSION,
        cloudwatch_read: bool = True,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        problems.adopt(
            observability_rules.grafana_workspace(
                authentication_count=len(authentication),
                uses_saml=GrafanaAuthentication.SAML in authentication,
                saml_configured=saml_configuration is not None,
                prometheus_workspace_count=len(prometheus_workspaces),
                name=name,
            )
        )
        problems.raise_if_any()

        stack = Stack.of(self)
        self.role = iam.Role(
            self,
            "Role",
            description=f"Managed Grafana workspace {self.node.path}: query AMP, read CloudWatch",
            assumed_by=iam.ServicePrincipal(
                "grafana.amazonaws.com",
                conditions={
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "StringLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="grafana",
                            resource="/workspaces",
                            resource_name="*",
                            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
                        )
                    },
                },
            ),
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="QueryPrometheus",
                actions=[*QUERY_ACTIONS, "aps:DescribeWorkspace"],
                resources=[w.workspace_arn for w in prometheus_workspaces],
            )
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ListPrometheus", actions=["aps:ListWorkspaces"], resources=["*"]
            )
        )
        data_sources = ["PROMETHEUS"]
        if cloudwatch_read:
            data_sources.append("CLOUDWATCH")
            self.role.add_to_policy(
                iam.PolicyStatement(
                    sid="ReadCloudWatch", actions=list(CLOUDWATCH_READ_ACTIONS), resources=["*"]
                )
            )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "aps:ListWorkspaces and the CloudWatch/tag read actions of the Grafana data sources "
            "support no resource-level permissions; every write or query action is scoped to "
            "the listed workspaces.",
        )

        self.resource = grafana.CfnWorkspace(
            self,
            "Resource",
            name=name,
            description=description,
            account_access_type="CURRENT_ACCOUNT",
            authentication_providers=[a.value for a in authentication],
            saml_configuration=saml_configuration,
            permission_type="CUSTOMER_MANAGED",
            role_arn=self.role.role_arn,
            data_sources=data_sources,
            grafana_version=grafana_version,
            plugin_admin_enabled=False,
        )
        self.resource.apply_removal_policy(removal_policy)
        self.workspace_id: str = self.resource.attr_id
        #: Host name of the workspace (``g-xxxx.grafana-workspace.<region>.amazonaws.com``).
        self.endpoint: str = self.resource.attr_endpoint
        self.workspace_arn: str = Stack.of(self).format_arn(
            service="grafana",
            resource="/workspaces",
            resource_name=self.workspace_id,
            arn_format=ArnFormat.SLASH_RESOURCE_NAME,
        )
        self.prometheus_workspaces = tuple(prometheus_workspaces)
        if GrafanaAuthentication.IAM_IDENTITY_CENTER in authentication:
            Annotations.of(self).add_info(
                "Grafana sign-in through IAM Identity Center: it must be enabled before the "
                "deploy (aws sso-admin list-instances shows an instance), else the workspace "
                "fails to create. Use SAML or platform.grafana = false otherwise."
            )
