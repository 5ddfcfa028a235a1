"""Shipped rules, dashboards and scrape configuration: structure, PromQL sanity, and every
metric a rule or panel reads is collected by the scrape configuration or recorded by a rule."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fm_constructs.errors import FmValidationError
from fm_constructs.observability import data, inventory, promql
from fm_constructs.orchestration.hyperpod.lifecycle_scripts import (
    dcgm_counters,
    prometheus_agent_config,
)

RULES = {
    p.name: data.load_rule_file(p, data.rule_thresholds(None)) for p in data.shipped_rule_files()
}
DOCUMENTS = [document for _, document in RULES.values()]
RECORDED = promql.recorded_metrics(DOCUMENTS)
SCRAPE = yaml.safe_load(
    data.render_scrape_configuration(
        data.EKS_SCRAPE_TEMPLATE.read_text(), cluster_name="c", scrape_interval_seconds=30
    )
)
COLLECTED = {
    **promql.collected_metric_patterns(SCRAPE),
    # What the Slurm nodes' Prometheus agents keep (the Slurm exporter has no EKS job).
    **{f"slurm/{job}": re.compile(regex) for job, regex in prometheus_agent_config.KEEP.items()},
}
DASHBOARDS = {p.name: json.loads(p.read_text()) for p in data.shipped_dashboard_files()}


#: Series every scrape produces itself (target health), whatever the exporter.
SCRAPE_SERIES = {"up"}


def _unknown(expr: str) -> set[str]:
    return {
        m
        for m in promql.metric_names(expr)
        if m not in RECORDED and m not in SCRAPE_SERIES and not promql.is_collected(m, COLLECTED)
    }


def test_rule_files_are_shipped_and_cover_the_required_alerts() -> None:
    alerts = {
        r["alert"] for d in DOCUMENTS for g in d["groups"] for r in g["rules"] if "alert" in r
    }
    assert {
        "GpuXidErrorReplaceNode",
        "GpuDoubleBitEccError",
        "GpuThermalThrottling",
        "GpuPowerThrottling",
        "GpuMissingFromNode",
        "EfaWorkRequestErrors",
        "KubernetesNodeNotReady",
        "FsxLustreFreeCapacityLow",
        "TrainingStalled",
        "InferenceTimeToFirstTokenOverObjective",
        "InferenceInterTokenLatencyOverObjective",
    } <= alerts
    assert {
        "cluster:dcgm_gpu_utilization:avg",
        "cluster:dcgm_sm_active:avg",
        "cluster:efa_tx_bytes:rate5m",
    } <= RECORDED


@pytest.mark.parametrize("name", sorted(RULES))
def test_rule_expressions_are_balanced_and_read_collected_metrics(name: str) -> None:
    for rule_name, expr in promql.rule_expressions([RULES[name][1]]).items():
        assert promql.balanced(expr), rule_name
        assert promql.metric_names(expr), f"{rule_name}: reads no metric"
        assert _unknown(expr) == set(), rule_name
        assert not data.placeholders(expr), rule_name


def test_xid_alerts_read_the_per_event_count_and_split_the_replace_node_xids() -> None:
    expressions = promql.rule_expressions(DOCUMENTS)
    replace = 'DCGM_EXP_XID_ERRORS_COUNT{xid=~"48|63|64|74|79|94|95"}'
    assert replace in expressions["GpuXidErrorReplaceNode"]
    assert 'xid!~"48|63|64|74|79|94|95"' in expressions["GpuXidError"]
    # The sticky last-XID gauge never resets: no alert may read it.
    assert not any("DCGM_FI_DEV_XID_ERRORS" in e for e in expressions.values())


def test_rule_validation_reports_missing_labels_and_annotations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up == 0\n"
        "        labels: {severity: loud}\n"
    )
    with pytest.raises(FmValidationError) as raised:
        data.load_rule_file(bad, {})
    text = str(raised.value)
    assert "severity must be one of" in text and "annotation 'runbook' is required" in text


def test_unknown_placeholder_fails(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups: [{name: g, rules: [{record: r, expr: 'x > {{nope}}'}]}]\n")
    with pytest.raises(FmValidationError, match=r"placeholders \['nope'\] have no value"):
        data.load_rule_file(bad, data.rule_thresholds(None))


@pytest.mark.skipif(
    shutil.which("promtool") is None,
    reason="promtool not installed "
    "(Debian package 'prometheus' provides it); the structural and metric checks "
    "above still run",
)
def test_promtool_accepts_rules(tmp_path: Path) -> None:
    for name, (text, _) in RULES.items():
        (tmp_path / name).write_text(text)
    rules = subprocess.run(
        ["promtool", "check", "rules", *sorted(map(str, tmp_path.glob("*.yaml")))],
        capture_output=True,
        text=True,
        check=False,
    )
    assert rules.returncode == 0, rules.stdout + rules.stderr
    # promtool check config is not used for the scrape configuration: Debian's promtool is
    # built without Kubernetes service discovery and rejects kubernetes_sd_configs.


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_accepts_the_scrape_configuration(tmp_path: Path) -> None:
    """Debian's promtool has no Kubernetes discovery: swap it for a static target so that the
    rest (relabel regexes, keep lists, global settings) is still checked."""
    config = yaml.safe_load(yaml.safe_dump(SCRAPE))
    for job in config["scrape_configs"]:
        del job["kubernetes_sd_configs"]
        job["static_configs"] = [{"targets": ["localhost:9"]}]
    path = tmp_path / "scrape.yaml"
    path.write_text(yaml.safe_dump(config))
    result = subprocess.run(
        ["promtool", "check", "config", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _meta(label: str) -> str:
    return "__meta_kubernetes_pod_label_" + "".join(c if c.isalnum() else "_" for c in label)


def test_workload_pods_follow_the_job_metrics_contract() -> None:
    from fm_constructs.domain import job_metrics

    (job,) = [j for j in SCRAPE["scrape_configs"] if j["job_name"] == "workload-pods"]
    relabels = job["relabel_configs"]
    (ports,) = [r for r in relabels if r.get("source_labels") == ["__address__"]]
    assert ports["action"] == "keep" and str(job_metrics.METRICS_PORT) in ports["regex"]
    run_sources = [r["source_labels"][0] for r in relabels if r.get("target_label") == "run"]
    # Applied in order, the last match wins: the contract's first source comes last.
    assert run_sources[1:] == [_meta(label) for label in reversed(job_metrics.RUN_SOURCE_LABELS)]
    workload_sources = [
        r["source_labels"][0] for r in relabels if r.get("target_label") == "workload"
    ]
    assert workload_sources == ["__meta_kubernetes_namespace", _meta(job_metrics.WORKLOAD_LABEL)]
    assert job_metrics.pod_annotations() == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "9464",
        "prometheus.io/path": "/metrics",
    }
    for name in job_metrics.metric_names():
        assert promql.is_collected(name, COLLECTED), name


def test_scrape_configuration_respects_managed_collector_limits() -> None:
    assert SCRAPE["global"]["scrape_interval"] == "30s"
    assert SCRAPE["global"]["external_labels"] == {"cluster": "c", "orchestrator": "eks"}
    for job in SCRAPE["scrape_configs"]:
        assert set(job) <= {
            "job_name",
            "honor_labels",
            "kubernetes_sd_configs",
            "relabel_configs",
            "metric_relabel_configs",
            "static_configs",
            "scheme",
            "metrics_path",
            "authorization",
        }, job["job_name"]
    roles = {
        job["job_name"]: [sd["role"] for sd in job["kubernetes_sd_configs"]]
        for job in SCRAPE["scrape_configs"]
    }
    assert roles == {
        "dcgm-exporter": ["node"],
        "node-exporter": ["node"],
        "efa-exporter": ["node"],
        "kube-state-metrics": ["pod"],
        "workload-pods": ["pod"],
    }
    node_ports = {
        job["job_name"]: r["replacement"]
        for job in SCRAPE["scrape_configs"]
        for r in job["relabel_configs"]
        if r.get("target_label") == "__address__" and "replacement" in r
    }
    assert node_ports == {
        "dcgm-exporter": "$1:9400",
        "node-exporter": "$1:9100",
        "efa-exporter": "$1:9109",
        "workload-pods": "$1:$2",
    }
    assert promql.is_collected("vllm:num_requests_waiting", COLLECTED)
    assert not promql.is_collected("DCGM_FI_DEV_SOMETHING_ELSE", COLLECTED)


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_dashboard_structure(name: str) -> None:
    dashboard = DASHBOARDS[name]
    assert isinstance(dashboard["schemaVersion"], int) and dashboard["schemaVersion"] >= 36
    assert dashboard["uid"].startswith("fm-") and dashboard["title"] and dashboard["description"]
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    for panel in panels:
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"])
        assert panel["gridPos"]["x"] + panel["gridPos"]["w"] <= 24
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        assert len({t["refId"] for t in panel["targets"]}) == len(panel["targets"])
        uid = panel["datasource"]["uid"]
        assert uid in ("${datasource}", "${cloudwatch}"), panel["title"]
        assert uid.strip("${}") in variables
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]


def _prometheus_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    queries = [
        (p["title"], t["expr"])
        for p in dashboard["panels"]
        for t in p.get("targets", [])
        if p["datasource"]["type"] == "prometheus"
    ]
    queries += [
        (v["name"], v["definition"])
        for v in dashboard["templating"]["list"]
        if v["type"] == "query" and v["datasource"]["type"] == "prometheus"
    ]
    return queries


@pytest.mark.parametrize("name", sorted(DASHBOARDS))
def test_every_panel_query_reads_collected_or_recorded_metrics(name: str) -> None:
    for title, expr in _prometheus_queries(DASHBOARDS[name]):
        assert promql.balanced(expr), title
        assert promql.metric_names(expr), f"{title}: reads no metric"
        assert _unknown(expr) == set(), title


def test_cloudwatch_panels_read_fsx_metrics_of_the_selected_file_system() -> None:
    fsx = DASHBOARDS["fsx-storage.json"]
    targets = [
        t
        for p in fsx["panels"]
        for t in p.get("targets", [])
        if p["datasource"]["type"] == "cloudwatch"
    ]
    assert targets
    for target in targets:
        assert target["namespace"] == "AWS/FSx"
        assert target["dimensions"] == {"FileSystemId": "$file_system_id"}
        assert target["metricName"] in {
            "FreeDataStorageCapacity",
            "DataReadBytes",
            "DataWriteBytes",
            "DataReadOperations",
            "DataWriteOperations",
            "MetadataOperations",
            "ClientConnections",
        }


def test_training_dashboard_documents_the_exported_metrics() -> None:
    description = DASHBOARDS["training-throughput.json"]["description"]
    for metric in (
        "fm_training_steps_total",
        "fm_training_tokens_total",
        "fm_training_step_duration_seconds",
        "fm_training_loss",
    ):
        assert metric in description


def test_metric_name_extractor() -> None:
    expr = (
        'histogram_quantile(0.9, sum by (le, pod) (rate(a_bucket{x=~"$v", y="b c"}'
        "[$__rate_interval])))"
        " / on (node) group_left () max without (gpu) (b:rec:avg offset 5m) > bool 1e3"
    )
    assert promql.metric_names(expr) == {"a_bucket", "b:rec:avg"}
    assert promql.balanced("sum(rate(x[5m]))") and not promql.balanced("sum(rate(x[5m])")


def _read_metrics() -> set[str]:
    """Every metric a shipped rule or dashboard panel reads."""
    names: set[str] = set()
    for expr in promql.rule_expressions(DOCUMENTS).values():
        names |= promql.metric_names(expr)
    for dashboard in DASHBOARDS.values():
        for _, expr in _prometheus_queries(dashboard):
            names |= promql.metric_names(expr)
    return names


def test_every_dcgm_metric_read_is_in_the_exported_counters() -> None:
    """dcgm-exporter only emits the fields of its counters list (Slurm nodes and the EKS chart
    both use dcgm_counters), so a rule on any other DCGM field could never fire."""
    exported = {field for field, _, _ in dcgm_counters.COUNTERS}
    read = {name for name in _read_metrics() if name.startswith("DCGM_FI_")}
    assert read, "no rule or panel reads a DCGM metric"
    assert read - exported == set()


def test_efa_metrics_read_are_published_by_the_amazonefa_collector() -> None:
    """The EFA exporter's amazonefa collector publishes these hw_counters only (no SRD
    retransmit statistics); every rule and panel stays within them, except the SRD counters
    that only the EKS counters script publishes (it writes every hw_counters file)."""
    published = {
        f"node_amazonefa_{name}"
        for name in (
            "tx_bytes",
            "rx_bytes",
            "tx_pkts",
            "rx_pkts",
            "rx_drops",
            "rdma_read_bytes",
            "rdma_write_bytes",
            "rdma_read_wr_err",
            "rdma_write_wr_err",
            "rdma_read_wrs",
            "rdma_write_wrs",
            "send_bytes",
            "recv_bytes",
            "send_wrs",
            "recv_wrs",
            "lifespan",
        )
    }
    read = {name for name in _read_metrics() if name.startswith("node_amazonefa_")}
    assert read and read <= published | inventory.EFA_SRD_NAMES
    assert not published & inventory.EFA_SRD_NAMES
    (efa_job,) = [job for job in SCRAPE["scrape_configs"] if job["job_name"] == "efa-exporter"]
    (keep,) = [r["regex"] for r in efa_job["metric_relabel_configs"] if r["action"] == "keep"]
    keep, lustre = keep.split("|fm_lustre_client_")
    assert lustre == ".+"  # the EKS counters script's Lustre client series
    assert keep.startswith("node_amazonefa_(") and keep.endswith(")")
    kept = {f"node_amazonefa_{name}" for name in keep[len("node_amazonefa_(") : -1].split("|")}
    assert kept <= published | inventory.EFA_SRD_NAMES


def test_slurm_agent_keeps_the_same_metrics_under_the_same_job_names_as_eks() -> None:
    """One dashboard and one rule set serve both orchestrators: the Slurm agent's job names
    and keep lists equal the EKS scraper's where the exporter is the same."""
    eks = {
        job["job_name"]: r["regex"]
        for job in SCRAPE["scrape_configs"]
        for r in job.get("metric_relabel_configs", [])
        if r.get("action") == "keep"
    }
    slurm = prometheus_agent_config.KEEP
    for job in ("node-exporter", "dcgm-exporter", "efa-exporter"):
        assert slurm[job] == eks[job], job
    assert promql.is_collected(
        "fm_training_steps_total", {"j": __import__("re").compile(slurm["job-metrics"])}
    )
