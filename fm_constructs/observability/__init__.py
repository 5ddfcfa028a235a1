"""Observability: managed Prometheus (workspace, managed scraper, rules and alert routing),
managed Grafana (workspace, data sources and dashboards as data files), CloudWatch alarms for
FSx and EventBridge rules for HyperPod health, all alerting through one encrypted SNS topic."""

from fm_constructs.observability.alarms import (
    FsxLustreAlarms,
    HyperPodHealthEvents,
    PrometheusWorkspaceAlarms,
)
from fm_constructs.observability.dashboards import DashboardRemoval, GrafanaDashboards
from fm_constructs.observability.data import DEFAULT_RULE_THRESHOLDS
from fm_constructs.observability.grafana import GrafanaAuthentication, GrafanaWorkspace
from fm_constructs.observability.notifications import AlertTopic
from fm_constructs.observability.prometheus import IPrometheusWorkspace, PrometheusWorkspace
from fm_constructs.observability.rules import AlertRules
from fm_constructs.observability.scraper import (
    SCRAPER_KUBERNETES_USERNAME,
    ManagedScraper,
    scraper_rbac_manifests,
)

__all__ = [
    "DEFAULT_RULE_THRESHOLDS",
    "SCRAPER_KUBERNETES_USERNAME",
    "AlertRules",
    "AlertTopic",
    "DashboardRemoval",
    "FsxLustreAlarms",
    "GrafanaAuthentication",
    "GrafanaDashboards",
    "GrafanaWorkspace",
    "HyperPodHealthEvents",
    "IPrometheusWorkspace",
    "ManagedScraper",
    "PrometheusWorkspace",
    "PrometheusWorkspaceAlarms",
    "scraper_rbac_manifests",
]
