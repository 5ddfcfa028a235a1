"""The shared observability layer of a deployment: one Prometheus workspace with alert rules
routed to an encrypted SNS topic, and a Grafana workspace with its dashboards provisioned."""

from __future__ import annotations

from constructs import Construct

from fm_constructs.observability import (
    AlertRules,
    AlertTopic,
    GrafanaDashboards,
    GrafanaWorkspace,
    PrometheusWorkspace,
    PrometheusWorkspaceAlarms,
)


class ObservabilityPlatform(Construct):
    """Prometheus (AMP) + alert rules + SNS alerts + CloudWatch alarms on the workspace itself,
    and optionally Grafana (AMG) with the shipped dashboards, provisioned on deploy."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        grafana: bool = True,
        grafana_scope: Construct | None = None,
    ) -> None:
        """``grafana_scope``: the construct the Grafana workspace and its dashboards are created
        under (default: this one). One in a stack of its own keeps the workspace (about five
        minutes to create) off the path of everything that waits for the Prometheus
        workspace."""
        super().__init__(scope, construct_id)
        self.prometheus = PrometheusWorkspace(self, "Prometheus")
        self.alert_topic = AlertTopic(self, "Alerts")
        self.rules = AlertRules(
            self, "Rules", workspace=self.prometheus, alert_topic=self.alert_topic
        )
        self.workspace_alarms = PrometheusWorkspaceAlarms(
            self,
            "WorkspaceAlarms",
            workspace_id=self.prometheus.workspace_id,
            alert_topic=self.alert_topic,
        )
        self.grafana: GrafanaWorkspace | None = None
        self.dashboards: GrafanaDashboards | None = None
        if grafana:
            home = grafana_scope or self
            self.grafana = GrafanaWorkspace(
                home, "Grafana", prometheus_workspaces=[self.prometheus]
            )
            self.dashboards = GrafanaDashboards(
                home, "Dashboards", grafana=self.grafana, prometheus=self.prometheus
            )
