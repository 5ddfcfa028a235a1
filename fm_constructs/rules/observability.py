"""Rules of the observability blocks' arguments: an AMP workspace, a managed scraper, alert
rules, FSx alarms, a Grafana workspace and its dashboards, and the shipped data (rule
thresholds, dashboard models).

Each rule takes the construct's plain arguments and returns findings under the construct's
code, which the construct adopts; CDK tokens are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fm_constructs.domain.numbers import is_whole_number
from fm_constructs.planning.fsx_sizing import is_valid_metadata_iops
from fm_constructs.rules.constructs import (
    ALERT_RULES,
    DASHBOARDS,
    FSX_ALARMS,
    GRAFANA,
    OBSERVABILITY_DATA,
    PROMETHEUS,
    SCRAPER,
)
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.tokens import is_unresolved

#: The managed collector's shortest scrape interval.
MIN_SCRAPE_INTERVAL_SECONDS = 30


def _error(code: str, key: str, value: object, allowed: str) -> Finding:
    return Finding(code, Severity.ERROR, key, value, allowed)


def _message(code: str, text: str) -> Finding:
    return Finding(code, Severity.ERROR, "", None, text)


def prometheus_workspace(alias: str | None, retention_period_days: int) -> list[Finding]:
    """An AMP workspace's alias (1 to 100 characters) and retention (whole days >= 1)."""
    out: list[Finding] = []
    if alias is not None and not is_unresolved(alias) and not 0 < len(alias) <= 100:
        out.append(_error(PROMETHEUS, "alias", alias, "must be 1 to 100 characters"))
    if not is_unresolved(retention_period_days) and not is_whole_number(retention_period_days, 1):
        out.append(
            _error(
                PROMETHEUS,
                "retention_period_days",
                retention_period_days,
                "must be a whole number >= 1",
            )
        )
    return out


def managed_scraper(
    *,
    cluster_arn: str,
    subnet_ids: Sequence[str],
    subnet_zones: Sequence[str],
    scrape_interval_seconds: float,
) -> list[Finding]:
    """A managed scraper's EKS cluster ARN, its subnets (two, in two zones: an ENI in each)
    and its scrape interval (whole seconds, at least the collector's minimum).
    ``subnet_ids`` name the subnets (their construct ids) for the message."""
    out: list[Finding] = []
    if not is_unresolved(cluster_arn) and (
        not cluster_arn.startswith("arn:")
        or ":eks:" not in cluster_arn
        or ":cluster/" not in cluster_arn
    ):
        out.append(
            _error(
                SCRAPER,
                "cluster_arn",
                cluster_arn,
                "must be an EKS cluster ARN (arn:aws:eks:<region>:<account>:cluster/<name>)",
            )
        )
    if len(subnet_ids) < 2:
        out.append(
            _error(
                SCRAPER,
                "subnets",
                list(subnet_ids),
                "must hold at least two subnets in two Availability Zones (the managed "
                "collector puts an ENI in each)",
            )
        )
    else:
        zones = list(subnet_zones)
        if not any(is_unresolved(z) for z in zones) and len(set(zones)) < 2:
            out.append(
                _error(SCRAPER, "subnets", zones, "must span at least two Availability Zones")
            )
    interval_s = scrape_interval_seconds
    if interval_s < MIN_SCRAPE_INTERVAL_SECONDS or interval_s != int(interval_s):
        out.append(
            _error(
                SCRAPER,
                "scrape_interval",
                f"{interval_s}s",
                f"must be a whole number of seconds >= {MIN_SCRAPE_INTERVAL_SECONDS} (managed "
                "collector limit)",
            )
        )
    return out


def _ratio(key: str, value: float) -> list[Finding]:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        return [_error(FSX_ALARMS, key, value, "must be a fraction between 0 and 1 (exclusive)")]
    return []


def fsx_alarms(
    *,
    file_system_id: str,
    storage_capacity_gib: int,
    per_unit_storage_throughput_mb_s_per_tib: int,
    evaluation_periods: int,
    ratios: Mapping[str, float],
    metadata_iops: int | None,
) -> list[Finding]:
    """FSx alarms: an FSx id, the whole numbers the thresholds are computed from at synth,
    ratios (by argument name) strictly between 0 and 1, and a user-provisioned metadata IOPS
    value."""
    out: list[Finding] = []
    if not is_unresolved(file_system_id) and not file_system_id.startswith("fs-"):
        out.append(
            _error(
                FSX_ALARMS,
                "file_system_id",
                file_system_id,
                "must be an FSx file system id (fs-...)",
            )
        )
    for key, number in (
        ("storage_capacity_gib", storage_capacity_gib),
        ("per_unit_storage_throughput_mb_s_per_tib", per_unit_storage_throughput_mb_s_per_tib),
        ("evaluation_periods", evaluation_periods),
    ):
        if not is_whole_number(number, 1):
            out.append(
                _error(
                    FSX_ALARMS,
                    key,
                    number,
                    "must be a positive whole number (not a token: the "
                    "alarm threshold is computed at synth)",
                )
            )
    for key, ratio in ratios.items():
        out.extend(_ratio(key, ratio))
    if metadata_iops is not None and not is_valid_metadata_iops(metadata_iops):
        out.append(
            _error(
                FSX_ALARMS,
                "metadata_iops",
                metadata_iops,
                "must be a valid user-provisioned Metadata IOPS value (1500, 3000, 6000, 12000, "
                "then multiples of 12000 up to 192000), or None for AUTOMATIC mode",
            )
        )
    return out


def alert_rules(
    *,
    workspace_type: str | None,
    workspace_has_alert_manager: bool,
    rule_files: Sequence[object] | None,
) -> list[Finding]:
    """Alert rules go to a workspace created in this app (``workspace_type`` is the type name
    of anything else, None for a created one) that has no alert manager definition yet, from
    at least one rule file when files are given."""
    out: list[Finding] = []
    if workspace_type is not None:
        out.append(
            _error(
                ALERT_RULES,
                "workspace",
                workspace_type,
                "must be a PrometheusWorkspace created in this app (the alert manager "
                "definition is a property of AWS::APS::Workspace)",
            )
        )
    elif workspace_has_alert_manager:
        out.append(
            _message(
                ALERT_RULES,
                "workspace: already has an alert manager definition; use one AlertRules per "
                "workspace",
            )
        )
    if rule_files is not None and not rule_files:
        out.append(
            _error(ALERT_RULES, "rule_files", list(rule_files), "must name at least one file")
        )
    return out


def grafana_workspace(
    *,
    authentication_count: int,
    uses_saml: bool,
    saml_configured: bool,
    prometheus_workspace_count: int,
    name: str | None,
) -> list[Finding]:
    """A Grafana workspace's authentication providers (SAML exactly with its configuration),
    the workspaces it queries and its name."""
    out: list[Finding] = []
    if not authentication_count:
        out.append(_error(GRAFANA, "authentication", [], "must name at least one provider"))
    if uses_saml and not saml_configured:
        out.append(
            _message(
                GRAFANA,
                "saml_configuration: required when authentication includes SAML (IdP metadata "
                "URL or XML, and assertion attributes)",
            )
        )
    if saml_configured and not uses_saml:
        out.append(
            _message(
                GRAFANA,
                "saml_configuration: given but authentication does not include "
                "GrafanaAuthentication.SAML; add it or drop the configuration",
            )
        )
    if not prometheus_workspace_count:
        out.append(
            _error(
                GRAFANA, "prometheus_workspaces", [], "must list at least one workspace to query"
            )
        )
    if (
        name is not None
        and not is_unresolved(name)
        and not (0 < len(name) <= 255 and all(c.isalnum() or c in "-._~" for c in name))
    ):
        out.append(
            _error(GRAFANA, "name", name, "must be 1-255 characters of letters, digits, - . _ ~")
        )
    return out


def grafana_dashboards(
    *, files_given_empty: bool, file_names: Sequence[str], folder_uid: str
) -> list[Finding]:
    """Grafana dashboards: at least one file when files are given, distinct file names, and a
    folder uid Grafana takes."""
    out: list[Finding] = []
    if files_given_empty:
        out.append(_error(DASHBOARDS, "dashboard_files", [], "must name at least one dashboard"))
    names = list(file_names)
    if len(set(names)) != len(names):
        out.append(_error(DASHBOARDS, "dashboard_files", names, "must have distinct file names"))
    if not folder_uid or len(folder_uid) > 40:
        out.append(
            _error(DASHBOARDS, "folder_uid", folder_uid, "must be 1 to 40 characters (Grafana uid)")
        )
    return out


def rule_threshold_overrides(
    overrides: Mapping[str, object], *, known: Sequence[str]
) -> list[Finding]:
    """Overrides of the alert rules' thresholds: ``known`` names only, positive numbers."""
    out: list[Finding] = []
    for name, value in overrides.items():
        if name not in known:
            out.append(
                _error(
                    OBSERVABILITY_DATA,
                    name,
                    value,
                    f"is not a rule threshold; use one of {sorted(known)}",
                )
            )
        elif isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            out.append(_error(OBSERVABILITY_DATA, name, value, "must be a positive number"))
    return out


#: What every alert of a rule file carries: the label the routing reads, the annotations the
#: notification and the runbook link read, and the severities the routing knows.
REQUIRED_ALERT_LABELS = ("severity",)
REQUIRED_ALERT_ANNOTATIONS = ("summary", "description", "runbook")
ALLOWED_SEVERITIES = ("critical", "warning", "info")


def rule_document(document: object) -> list[Finding]:
    """A Prometheus rules document is a mapping with a non-empty ``groups`` list; every group
    has a name and rules; every rule has one of ``record`` and ``alert`` and a non-empty
    ``expr``; every alert has the required labels and annotations and a known severity (each
    finding phrased in full, naming the group and the rule)."""
    if not isinstance(document, dict) or not isinstance(document.get("groups"), list):
        return [_message(OBSERVABILITY_DATA, "must be a mapping with a 'groups' list")]
    out: list[str] = []
    if not document["groups"]:
        out.append("groups: must not be empty")
    for group in document["groups"]:
        name = group.get("name") if isinstance(group, dict) else None
        if not name:
            out.append("every group needs a name")
            continue
        rules = group.get("rules")
        if not isinstance(rules, list) or not rules:
            out.append(f"group {name}: needs a non-empty 'rules' list")
            continue
        for rule in rules:
            out.extend(_rule_problems(name, rule))
    return [_message(OBSERVABILITY_DATA, text) for text in out]


def _rule_problems(group: str, rule: object) -> list[str]:
    if not isinstance(rule, dict):
        return [f"group {group}: every rule must be a mapping"]
    ident = rule.get("alert") or rule.get("record")
    where = f"group {group}, rule {ident}"
    problems: list[str] = []
    if ("alert" in rule) == ("record" in rule):
        problems.append(f"{where}: needs exactly one of 'alert' or 'record'")
    expr = rule.get("expr")
    if not isinstance(expr, str) or not expr.strip():
        problems.append(f"{where}: needs a non-empty 'expr'")
    if "alert" in rule:
        labels = rule.get("labels") or {}
        annotations = rule.get("annotations") or {}
        for label in REQUIRED_ALERT_LABELS:
            if not labels.get(label):
                problems.append(f"{where}: label '{label}' is required")
        severity = labels.get("severity")
        if severity and severity not in ALLOWED_SEVERITIES:
            problems.append(
                f"{where}: severity must be one of {list(ALLOWED_SEVERITIES)}, got {severity!r}"
            )
        for annotation in REQUIRED_ALERT_ANNOTATIONS:
            if not annotations.get(annotation):
                problems.append(f"{where}: annotation '{annotation}' is required")
    return problems


def dashboard_model(source: str, dashboard: object) -> list[Finding]:
    """A dashboard file's document (``source`` names the file) is a JSON object with a
    non-empty uid and title."""
    if not isinstance(dashboard, dict):
        return [
            _message(
                OBSERVABILITY_DATA, f"{source}: must be a JSON object (a Grafana dashboard model)"
            )
        ]
    return [
        _error(OBSERVABILITY_DATA, key, dashboard.get(key), "must be a non-empty string")
        for key in ("uid", "title")
        if not isinstance(dashboard.get(key), str) or not dashboard[key]
    ]


def distinct_dashboard_uids(uids: Sequence[tuple[str, str]]) -> list[Finding]:
    """Each dashboard (``(uid, file name)`` in order) has its own uid: Grafana would
    overwrite one with the other."""
    out: list[Finding] = []
    seen: set[str] = set()
    for uid, file_name in uids:
        if uid in seen:
            out.append(
                _error(
                    OBSERVABILITY_DATA,
                    "uid",
                    uid,
                    f"must be unique across dashboards ({file_name} repeats it)",
                )
            )
        seen.add(uid)
    return out


def stated_lustre_size(
    *, storage_capacity_gib: int | None, throughput_mb_s_per_tib: int | None
) -> list[Finding]:
    """FSx alarms need the file system's size and throughput; an imported file system that
    does not state them must be given them."""
    return [
        _error(
            FSX_ALARMS,
            key,
            value,
            "must be given for a file system that does not state it (an imported "
            "one): aws fsx describe-file-systems shows it",
        )
        for key, value in (
            ("storage_capacity_gib", storage_capacity_gib),
            ("throughput_mb_s_per_tib", throughput_mb_s_per_tib),
        )
        if value is None
    ]
