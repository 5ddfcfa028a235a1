"""Every metric a rule, recording rule or dashboard reads is produced by a metrics source the
library installs, at a pinned version, and kept by the scrape job that collects that source."""

from __future__ import annotations

import json
import re

import yaml

from fm_constructs.observability import data, inventory, promql
from fm_constructs.orchestration.hyperpod.lifecycle_scripts import prometheus_agent_config

DOCUMENTS = inventory.shipped_rule_documents()
RECORDED = {
    str(r["record"]): str(r["expr"])
    for d in DOCUMENTS
    for g in d["groups"]
    for r in g["rules"]
    if "record" in r
}
SCRAPE = yaml.safe_load(
    data.render_scrape_configuration(
        data.EKS_SCRAPE_TEMPLATE.read_text(), cluster_name="c", scrape_interval_seconds=30
    )
)
EKS_KEEP = promql.collected_metric_patterns(SCRAPE)
#: Slurm agent job per EKS job (training jobs have a static target of their own there).
SLURM_JOBS = {"workload-pods": prometheus_agent_config.JOB_METRICS_JOB}


def _read() -> dict[str, set[str]]:
    """{exporter metric: where it is read}."""
    where: dict[str, set[str]] = {}
    for document in DOCUMENTS:
        for group in document["groups"]:
            for rule in group["rules"]:
                ident = str(rule.get("alert") or rule.get("record"))
                for name in inventory.raw_metrics(str(rule["expr"]), RECORDED):
                    where.setdefault(name, set()).add(f"rule {ident}")
    for path in data.shipped_dashboard_files():
        dashboard = json.loads(path.read_text())
        for expr in inventory.prometheus_queries(dashboard):
            for name in inventory.raw_metrics(expr, RECORDED):
                where.setdefault(name, set()).add(f"dashboard {path.name}")
    return where


READ = _read()


def test_every_metric_read_has_an_installed_source() -> None:
    orphans = {
        name: sorted(places) for name, places in READ.items() if not inventory.source_of(name)
    }
    assert orphans == {}, "metrics no installed exporter produces"
    assert not set(READ) & set(RECORDED), "recorded names were resolved to their sources"


def test_every_source_is_pinned_and_named_with_where_its_names_were_checked() -> None:
    for source in inventory.sources():
        assert source.versions and source.source, source.name
        for orchestrator, version in source.versions.items():
            assert orchestrator in (inventory.EKS, inventory.SLURM)
            assert version.strip(), (source.name, orchestrator)


def test_every_metric_read_is_kept_by_the_job_that_scrapes_its_source() -> None:
    for name in READ:
        source = inventory.source_of(name)
        assert source is not None
        if source.job == "every job":
            continue
        if inventory.EKS in source.versions:
            assert promql.is_collected(name, {source.job: EKS_KEEP[source.job]}), (
                f"{name}: not kept by the EKS job {source.job}"
            )
        if inventory.SLURM in source.versions:
            job = SLURM_JOBS.get(source.job, source.job)
            keep = {job: re.compile(prometheus_agent_config.KEEP[job])}
            assert promql.is_collected(name, keep), f"{name}: not kept by the Slurm job {job}"


def test_every_source_feeds_something_and_the_table_lists_them() -> None:
    used = inventory.usage()
    for source in inventory.sources():
        feeds = used[source.name]
        assert feeds["alerts"] or feeds["dashboards"], f"{source.name} feeds nothing"
    table = inventory.markdown_table()
    assert all(source.name in table for source in inventory.sources())
    assert "`GpuXidErrorReplaceNode`" in table and "GPU health and utilization" in table
