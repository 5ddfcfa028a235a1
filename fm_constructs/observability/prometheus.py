"""Amazon Managed Service for Prometheus workspace: encrypted, logged, retained.

The workspace is the stateful heart of the observability layer: months of GPU and job history
live in it. It is encrypted with a customer-managed KMS key (created here unless given),
sends its alert-manager and rule-evaluation logs to a CloudWatch log group, keeps metrics for
``retention_period_days`` and is retained when its stack is deleted.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from aws_cdk import Fn, RemovalPolicy, Stack
from aws_cdk import aws_aps as aps
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.policy import encrypted_log_group
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules

#: Actions a Prometheus-compatible query client (Grafana, scripts) needs on a workspace.
QUERY_ACTIONS = ("aps:QueryMetrics", "aps:GetSeries", "aps:GetLabels", "aps:GetMetricMetadata")
#: Action an agent (ADOT collector, Prometheus remote_write) needs to ingest samples.
REMOTE_WRITE_ACTIONS = ("aps:RemoteWrite",)

#: AMP keeps 150 days unless told otherwise; we keep that default explicitly.
DEFAULT_RETENTION_DAYS = 150


def _workspace_url(scope: Construct, workspace_id: str) -> str:
    """Base URL of a workspace's Prometheus-compatible API (ends with '/')."""
    stack = Stack.of(scope)
    return Fn.join(
        "",
        [
            "https://aps-workspaces.",
            stack.region,
            ".",
            stack.url_suffix,
            "/workspaces/",
            workspace_id,
            "/",
        ],
    )


@runtime_checkable
class IPrometheusWorkspace(Protocol):
    """What consumers (scraper, Grafana, collectors) need from a workspace."""

    @property
    def workspace_id(self) -> str: ...

    @property
    def workspace_arn(self) -> str: ...

    @property
    def prometheus_endpoint(self) -> str:
        """Base URL of the Prometheus-compatible API, ending with '/'."""
        ...

    @property
    def remote_write_url(self) -> str: ...

    def grant_remote_write(self, grantee: iam.IGrantable) -> iam.Grant: ...

    def grant_query(self, grantee: iam.IGrantable) -> iam.Grant: ...


class _WorkspaceBase(Construct):
    """What a created and an imported workspace share: ids, URLs and grants."""

    workspace_id: str
    workspace_arn: str
    #: Base URL of the Prometheus-compatible API, ending with '/'.
    prometheus_endpoint: str
    remote_write_url: str

    def _identify(self, workspace_id: str, workspace_arn: str) -> None:
        self.workspace_id = workspace_id
        self.workspace_arn = workspace_arn
        self.prometheus_endpoint = _workspace_url(self, workspace_id)
        self.remote_write_url = Fn.join("", [self.prometheus_endpoint, "api/v1/remote_write"])

    def grant_remote_write(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` ingest samples (``aps:RemoteWrite``) into this workspace only."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(REMOTE_WRITE_ACTIONS), resource_arns=[self.workspace_arn]
        )

    def grant_query(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` run PromQL queries and read series, labels and metadata."""
        return iam.Grant.add_to_principal(
            grantee=grantee, actions=list(QUERY_ACTIONS), resource_arns=[self.workspace_arn]
        )


class PrometheusWorkspace(_WorkspaceBase):
    """An AMP workspace (``AWS::APS::Workspace``).

    Children (ids are a contract): ``Resource`` (the workspace, Retain), ``Key`` (KMS key when
    none is given), ``Logs`` (log group when none is given).

    The KMS key is create-only on the workspace: changing it replaces the workspace and loses
    its data, so pass ``encryption_key`` from the start if you manage keys centrally.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.PROMETHEUS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alias: str | None = None,
        encryption_key: kms.IKey | None = None,
        log_group: logs.ILogGroup | None = None,
        log_retention: logs.RetentionDays = logs.RetentionDays.THREE_MONTHS,
        retention_period_days: int = DEFAULT_RETENTION_DAYS,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        problems.adopt(observability_rules.prometheus_workspace(alias, retention_period_days))
        problems.raise_if_any()

        self.key: kms.IKey = encryption_key or kms.Key(
            self,
            "Key",
            description=f"Managed Prometheus workspace {self.node.path}",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        self.log_group: logs.ILogGroup = log_group or encrypted_log_group(
            self, "Logs", retention=log_retention, removal_policy=removal_policy
        )
        self.resource = aps.CfnWorkspace(
            self,
            "Resource",
            alias=alias,
            kms_key_arn=self.key.key_arn,
            logging_configuration=aps.CfnWorkspace.LoggingConfigurationProperty(
                log_group_arn=self.log_group.log_group_arn
            ),
            workspace_configuration=aps.CfnWorkspace.WorkspaceConfigurationProperty(
                retention_period_in_days=retention_period_days
            ),
        )
        self.resource.apply_removal_policy(removal_policy)
        self._identify(self.resource.attr_workspace_id, self.resource.attr_arn)

    @staticmethod
    def from_workspace_id(
        scope: Construct, construct_id: str, workspace_id: str
    ) -> IPrometheusWorkspace:
        """Reference an existing workspace in this stack's account and region."""
        return _ImportedWorkspace(scope, construct_id, workspace_id)

    @staticmethod
    def from_prometheus_workspace_attributes(
        scope: Construct, construct_id: str, *, workspace_id: str
    ) -> IPrometheusWorkspace:
        """Reference an existing workspace (``ws-...``) in this stack's account and region."""
        return _ImportedWorkspace(scope, construct_id, workspace_id)


class _ImportedWorkspace(_WorkspaceBase):
    def __init__(self, scope: Construct, construct_id: str, workspace_id: str) -> None:
        super().__init__(scope, construct_id)
        self._identify(
            workspace_id,
            Stack.of(self).format_arn(
                service="aps", resource="workspace", resource_name=workspace_id
            ),
        )
