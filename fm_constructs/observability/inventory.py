"""Which installed exporter produces each metric the rules and dashboards read.

One entry per metrics source: the names it produces, the scrape job that collects it, the
orchestrators where the library installs it and at which pinned version, and where the names
were checked. A test (tests/unit/test_metric_inventory.py) fails when a rule, recording rule or
dashboard panel reads a name no entry produces, and the docs table of which source feeds which
dashboard and alert is generated from here (``make docs-figures``).

Pure data and lookups: no aws_cdk import.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from fm_constructs import pins
from fm_constructs.domain import job_metrics
from fm_constructs.observability import data, promql
from fm_constructs.orchestration.hyperpod.lifecycle_scripts import dcgm_counters

EKS = "EKS"
SLURM = "HyperPod Slurm"


@dataclass(frozen=True)
class MetricSource:
    """A metrics source: ``names`` it produces, scrape ``job``, and per orchestrator the
    installed version (``versions``: orchestrator -> "what, pinned version")."""

    name: str
    job: str
    names: frozenset[str]
    versions: Mapping[str, str]
    source: str

    def produces(self, metric: str) -> bool:
        return metric in self.names or _family(metric) in self.names


def _family(metric: str) -> str:
    for suffix in ("_bucket", "_sum", "_count"):
        if metric.endswith(suffix):
            return metric[: -len(suffix)]
    return metric


#: The amazonefa collector's names (hw_counters files of the EFA driver) that the library reads.
EFA_NAMES = frozenset(
    f"node_amazonefa_{n}"
    for n in (
        "tx_bytes",
        "rx_bytes",
        "tx_pkts",
        "rx_pkts",
        "rx_drops",
        "rdma_read_bytes",
        "rdma_write_bytes",
        "rdma_read_wr_err",
        "rdma_write_wr_err",
    )
)

#: SRD counters of Nitro v4 and later EFA devices (hw_counters files of the EFA driver's port
#: statistics): the EKS counters script publishes every hw_counters file, the HyperPod EFA
#: exporter's amazonefa collector does not read these.
EFA_SRD_NAMES = frozenset(
    f"node_amazonefa_{n}"
    for n in (
        "retrans_bytes",
        "retrans_pkts",
        "retrans_timeout_events",
        "unresponsive_remote_events",
        "impaired_remote_conn_events",
    )
)

VLLM_NAMES = frozenset(
    f"vllm:{n}"
    for n in (
        "time_to_first_token_seconds",
        "inter_token_latency_seconds",
        "time_per_output_token_seconds",
        "e2e_request_latency_seconds",
        "num_requests_waiting",
        "num_requests_running",
        "generation_tokens_total",
        "kv_cache_usage_perc",
        "gpu_cache_usage_perc",
    )
)


#: SckyzO/slurm_exporter names the library reads (docs/metrics.md at the pinned tag: nodes,
#: node, queue, gpus, partitions, scheduler collectors and the per-collector status gauge).
SLURM_NAMES = frozenset(
    {
        *(
            f"slurm_nodes_{state}"
            for state in ("alloc", "comp", "down", "drain", "fail", "idle", "mix", "planned")
        ),
        "slurm_nodes_total",
        "slurm_node_status",
        *(
            f"slurm_jobs_{state}"
            for state in ("pending", "running", "failed", "node_fail", "timeout", "cancelled")
        ),
        "slurm_jobs_completed",
        *(f"slurm_gpus_{state}" for state in ("alloc", "idle", "other", "total")),
        "slurm_partition_jobs_pending",
        "slurm_partition_jobs_running",
        "slurm_scheduler_queue_size",
        "slurm_scheduler_dbd_queue_size",
        "slurm_scheduler_last_cycle",
        "slurm_exporter_collector_success",
        "slurm_exporter_command_errors_total",
    }
)


@cache
def sources() -> tuple[MetricSource, ...]:
    """Every metrics source the library installs or whose names it defines."""
    dcgm_chart = pins.chart("dcgm-exporter")
    node_chart = pins.chart("prometheus-node-exporter")
    ksm_chart = pins.chart("kube-state-metrics")
    return (
        MetricSource(
            "DCGM exporter",
            "dcgm-exporter",
            frozenset(field for field, _, _ in dcgm_counters.COUNTERS),
            {
                EKS: f"chart {dcgm_chart.version}",
                SLURM: f"image {pins.image('dcgm-exporter').tag}",
            },
            "the library's counters list (orchestration/slurm/node_scripts/"
            "dcgm_counters.py), checked against NVIDIA/dcgm-exporter etc/*.csv",
        ),
        MetricSource(
            "node exporter",
            "node-exporter",
            frozenset(
                {
                    "node_cpu_seconds_total",
                    "node_memory_MemAvailable_bytes",
                    "node_memory_MemTotal_bytes",
                    "node_filesystem_avail_bytes",
                    "node_filesystem_size_bytes",
                    "node_network_receive_bytes_total",
                    "node_network_transmit_bytes_total",
                    "node_load1",
                }
            ),
            {
                EKS: f"chart {node_chart.version}",
                SLURM: f"binary {pins.binary('node_exporter').version}",
            },
            "prometheus/node_exporter default collectors (cpu, meminfo, filesystem, netdev, "
            "loadavg)",
        ),
        MetricSource(
            "EFA exporter",
            "efa-exporter",
            EFA_NAMES,
            {
                EKS: f"node-exporter image {pins.image('node-exporter').tag} + node_counters.sh",
                SLURM: f"HyperPod efa_exporter {pins.image('hyperpod-efa-exporter').tag}",
            },
            "EFA driver hw_counters, as the amazonefa collector names them",
        ),
        MetricSource(
            "EFA SRD counters",
            "efa-exporter",
            EFA_SRD_NAMES,
            {EKS: f"node-exporter image {pins.image('node-exporter').tag} + node_counters.sh"},
            "EFA driver hw_counters (port statistics of Nitro v4 and later devices)",
        ),
        MetricSource(
            "Lustre client counters",
            "efa-exporter",
            frozenset(
                {
                    "fm_lustre_client_read_bytes_total",
                    "fm_lustre_client_write_bytes_total",
                    "fm_lustre_client_operations_total",
                    "fm_lustre_client_operation_seconds_total",
                }
            ),
            {EKS: "node_counters.sh (llite stats in debugfs, Lustre 2.15 client)"},
            "orchestration/metrics_scripts/node_counters.sh",
        ),
        MetricSource(
            "kube-state-metrics",
            "kube-state-metrics",
            frozenset(
                {
                    "kube_node_labels",
                    "kube_node_status_condition",
                    "kube_node_status_capacity",
                    "kube_node_status_allocatable",
                    "kube_node_spec_unschedulable",
                    "kube_pod_status_phase",
                    "kube_pod_container_status_restarts_total",
                    "kube_deployment_status_replicas_available",
                    "kube_deployment_spec_replicas",
                }
            ),
            {EKS: f"chart {ksm_chart.version}"},
            "kubernetes/kube-state-metrics docs/metrics (node, pod and deployment metrics)",
        ),
        MetricSource(
            "Slurm exporter",
            "slurm-exporter",
            SLURM_NAMES,
            {SLURM: f"binary {pins.binary('slurm_exporter').version} (controller)"},
            "SckyzO/slurm_exporter docs/metrics.md and internal/collector/*.go at the pinned tag",
        ),
        MetricSource(
            "training jobs",
            "workload-pods",
            frozenset(job_metrics.metric_names()),
            {
                EKS: f"job-metrics contract, port {job_metrics.METRICS_PORT}",
                SLURM: f"job-metrics contract, port {job_metrics.METRICS_PORT}",
            },
            "fm_constructs/domain/job_metrics.py",
        ),
        MetricSource(
            "vLLM",
            "workload-pods",
            VLLM_NAMES,
            {EKS: f"image {pins.image('vllm-openai').tag}"},
            "vllm/engine/metrics.py and vllm/v1/metrics/loggers.py (v0 and v1 names)",
        ),
        MetricSource(
            "Prometheus scrape",
            "every job",
            frozenset({"up"}),
            {
                EKS: "managed scraper",
                SLURM: f"Prometheus agent {pins.binary('prometheus').version}",
            },
            "the health series every scrape records",
        ),
    )


def source_of(metric: str) -> MetricSource | None:
    """The source producing ``metric`` (None when no installed source does)."""
    for source in sources():
        if source.produces(metric):
            return source
    return None


def _recorded(documents: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    return {
        str(rule["record"]): str(rule["expr"])
        for document in documents
        for group in document.get("groups", [])
        for rule in group.get("rules", [])
        if "record" in rule
    }


def recorded_expressions() -> dict[str, str]:
    """Recording rule name -> expression over the shipped rule files (read and rendered once
    per process: the failure table asks this for each of its alerts)."""
    return dict(_shipped_recorded())


@cache
def _shipped_recorded() -> tuple[tuple[str, str], ...]:
    return tuple(_recorded(shipped_rule_documents()).items())


def raw_metrics(
    expr: str, recorded: Mapping[str, str], seen: frozenset[str] = frozenset()
) -> set[str]:
    """Exporter metric names an expression reads, through recording rules."""
    names: set[str] = set()
    for name in promql.metric_names(expr):
        if name in recorded and name not in seen:
            names |= raw_metrics(recorded[name], recorded, seen | {name})
        else:
            names.add(name)
    return names


def shipped_rule_documents() -> list[dict[str, Any]]:
    values = data.rule_thresholds(None)
    return [data.load_rule_file(p, values)[1] for p in data.shipped_rule_files()]


def prometheus_queries(dashboard: Mapping[str, Any]) -> list[str]:
    """PromQL of every Prometheus panel target and query variable of a dashboard."""
    queries = [
        str(t["expr"])
        for p in dashboard.get("panels", [])
        for t in p.get("targets", [])
        if p.get("datasource", {}).get("type") == "prometheus"
    ]
    queries += [
        str(v["definition"])
        for v in dashboard.get("templating", {}).get("list", [])
        if v.get("type") == "query" and v.get("datasource", {}).get("type") == "prometheus"
    ]
    return queries


def usage() -> dict[str, dict[str, set[str]]]:
    """``{source name: {"alerts": {...}, "dashboards": {...}}}`` over the shipped files."""
    documents = shipped_rule_documents()
    recorded = _recorded(documents)
    used: dict[str, dict[str, set[str]]] = {
        s.name: {"alerts": set(), "dashboards": set()} for s in sources()
    }
    for document in documents:
        for group in document["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                for name in raw_metrics(str(rule["expr"]), recorded):
                    source = source_of(name)
                    if source is not None:
                        used[source.name]["alerts"].add(str(rule["alert"]))
    for path in data.shipped_dashboard_files():
        dashboard = json.loads(path.read_text(encoding="utf-8"))
        for expr in prometheus_queries(dashboard):
            for name in raw_metrics(expr, recorded):
                source = source_of(name)
                if source is not None and name != "up":
                    used[source.name]["dashboards"].add(str(dashboard["title"]))
    return used


def markdown_table() -> str:
    """Per source: scrape job, version per orchestrator, dashboards and alerts it feeds."""
    used = usage()
    rows = [
        f"| source | scrape job | {EKS} | {SLURM} | feeds dashboards | feeds alerts |",
        "|---|---|---|---|---|---|",
    ]
    for source in sources():
        feeds = used[source.name]
        rows.append(
            f"| {source.name} | `{source.job}` | {source.versions.get(EKS, 'not installed')} | "
            f"{source.versions.get(SLURM, 'not installed')} | "
            f"{', '.join(sorted(feeds['dashboards'])) or '-'} | "
            f"{', '.join(f'`{a}`' for a in sorted(feeds['alerts'])) or '-'} |"
        )
    return "\n".join(rows)
