"""Grafana data sources and dashboards, provisioned on ``cdk deploy`` by a custom resource.

The dashboards are JSON files (the shipped ones by default). At synth they are copied next to
the provisioner's handler into one Lambda asset, so dashboards of any size deploy (custom
resource properties only carry their file names, uids and a content hash, and the hash makes
CloudFormation send an Update whenever a dashboard changes). See
``grafana_provisioner/handler.py`` for the flow: short-lived service-account token, Grafana
HTTP API, token deleted in a ``finally``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from enum import Enum
from pathlib import Path

from aws_cdk import CustomResource, Duration, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.observability.data import as_paths, dashboard_uids, shipped_dashboard_files
from fm_constructs.observability.grafana import GrafanaWorkspace
from fm_constructs.observability.prometheus import IPrometheusWorkspace
from fm_constructs.policy.handler_asset import stage_handler_asset
from fm_constructs.policy.handler_function import handler_function
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules

HANDLER_DIR = Path(__file__).parent / "grafana_provisioner"
PROVISIONER_RUNTIME = lambda_.Runtime.PYTHON_3_14
#: Lambda timeout of the provisioner; its Grafana calls share a deadline inside it.
PROVISIONER_TIMEOUT = Duration.minutes(5)
PROMETHEUS_DATA_SOURCE_UID = "fm-amp"
CLOUDWATCH_DATA_SOURCE_UID = "fm-cloudwatch"
#: Grafana caps token lifetimes at whatever we ask; 5 minutes covers a deploy with retries.
TOKEN_SECONDS_TO_LIVE = 300


class DashboardRemoval(Enum):
    """What happens to the provisioned objects when the custom resource is deleted."""

    DELETE = "DELETE"
    RETAIN = "RETAIN"


def stage_provisioner_asset(dashboard_files: Sequence[Path]) -> Path:
    """A directory holding ``handler.py``, ``cfn_response.py`` and ``dashboards/<files>`` for
    the asset (see :func:`~fm_constructs.policy.handler_asset.stage_handler_asset`)."""
    return stage_handler_asset(
        "grafana-provisioner",
        HANDLER_DIR / "handler.py",
        [(Path("dashboards") / path.name, path) for path in dashboard_files],
    )


class GrafanaDashboards(Construct):
    """Prometheus + CloudWatch data sources, a folder and dashboards in a Grafana workspace.

    Children: ``Function`` (provisioner), ``FunctionRole``, ``FunctionLogs``, ``Resource``
    (the custom resource).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.DASHBOARDS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        grafana: GrafanaWorkspace,
        prometheus: IPrometheusWorkspace,
        dashboard_files: Sequence[str | Path] | None = None,
        folder_uid: str = "fm-constructs",
        folder_title: str = "Foundation-model clusters",
        service_account_name: str = "fm-constructs-provisioner",
        on_delete: DashboardRemoval = DashboardRemoval.DELETE,
        log_retention: logs.RetentionDays = logs.RetentionDays.THREE_MONTHS,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        files = shipped_dashboard_files() if dashboard_files is None else as_paths(dashboard_files)
        names = [p.name for p in files]
        problems.adopt(
            observability_rules.grafana_dashboards(
                files_given_empty=dashboard_files is not None and not dashboard_files,
                file_names=names,
                folder_uid=folder_uid,
            )
        )
        problems.raise_if_any()
        uids = dashboard_uids(files)
        digest = hashlib.sha256()
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes())

        handler = handler_function(
            self,
            role_description="Provisions Grafana data sources and dashboards (custom resource)",
            description="fm-constructs Grafana provisioner",
            runtime=PROVISIONER_RUNTIME,
            code=lambda_.Code.from_asset(str(stage_provisioner_asset(files))),
            timeout=PROVISIONER_TIMEOUT,
            memory_size=256,
            log_retention=log_retention,
        )
        self.log_group, self.role, self.function = handler.log_group, handler.role, handler.function
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="ServiceAccountTokens",
                actions=[
                    "grafana:ListWorkspaceServiceAccounts",
                    "grafana:CreateWorkspaceServiceAccount",
                    "grafana:DeleteWorkspaceServiceAccount",
                    "grafana:CreateWorkspaceServiceAccountToken",
                    "grafana:DeleteWorkspaceServiceAccountToken",
                ],
                resources=[grafana.workspace_arn],
            )
        )
        self.resource = CustomResource(
            self,
            "Resource",
            service_token=self.function.function_arn,
            resource_type="Custom::GrafanaDashboards",
            # The handler answers within the Lambda timeout (its retries share a deadline);
            # if an answer is still lost, CloudFormation gives up after this, not after 1 h.
            service_timeout=PROVISIONER_TIMEOUT.plus(Duration.minutes(1)),
            properties={
                "WorkspaceId": grafana.workspace_id,
                "GrafanaEndpoint": grafana.endpoint,
                "ServiceAccountName": service_account_name,
                "TokenSecondsToLive": TOKEN_SECONDS_TO_LIVE,
                "PrometheusUrl": prometheus.prometheus_endpoint,
                "PrometheusRegion": Stack.of(self).region,
                "PrometheusDataSourceUid": PROMETHEUS_DATA_SOURCE_UID,
                "CloudWatchDataSourceUid": CLOUDWATCH_DATA_SOURCE_UID,
                "FolderUid": folder_uid,
                "FolderTitle": folder_title,
                "DashboardFiles": names,
                "DashboardUids": uids,
                "DashboardsSha256": digest.hexdigest(),
                "OnDelete": on_delete.value,
            },
        )
        # The role policy must exist before CloudFormation invokes the function: the custom
        # resource depends on it.
        self.resource.node.add_dependency(self.role)
        self.dashboard_uids = tuple(uids)
