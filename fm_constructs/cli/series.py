"""``fmc plan``'s Managed Prometheus figures: the series the accelerated nodes send under the
shipped scrape configuration, against the workspace's active-series and ingestion quotas.

Reads the scrape configuration the managed scraper is created with
(``observability/scrape/eks-gpu-cluster.yaml``) straight from the package, without importing
the constructs, and counts with :mod:`fm_constructs.planning.metric_series`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from fm_constructs.catalog import get_instance_type
from fm_constructs.config.model import Orchestrator, Profile
from fm_constructs.config.subnet_demand import SubnetDemand
from fm_constructs.domain import job_metrics
from fm_constructs.planning import aws_limits as lim
from fm_constructs.planning.metric_series import kept_names, samples_per_second, series_per_node

SCRAPE_TEMPLATE = (
    Path(__file__).resolve().parents[1] / "observability" / "scrape" / ("eks-gpu-cluster.yaml")
)
#: The managed collector's shortest (and the library's) scrape interval, seconds.
SCRAPE_INTERVAL_SECONDS = 30
_EKS = (Orchestrator.EKS, Orchestrator.HYPERPOD_EKS)


def scrape_configuration() -> dict[str, Any]:
    """The shipped EKS scrape configuration with its placeholders filled."""
    text = SCRAPE_TEMPLATE.read_text(encoding="utf-8")
    text = text.replace("{{scrape_interval}}", f"{SCRAPE_INTERVAL_SECONDS}s")
    text = text.replace("{{cluster_name}}", "plan")
    document: dict[str, Any] = yaml.safe_load(text)
    return document


def prometheus_usages(profile: Profile, demand: SubnetDemand) -> list[lim.LimitUsage]:
    """Active series and samples per second of every scraped EKS node group at its largest
    size, against the workspace quotas (empty without observability or EKS nodes)."""
    if not profile.platform.observability:
        return []
    kept = kept_names(scrape_configuration())
    training = len(job_metrics.metric_names())
    total = 0
    parts: list[str] = []
    for group in demand.node_groups:
        workload = profile.workloads_by_name[group.name.split(".", 1)[0]]
        if workload.orchestrator not in _EKS:
            continue
        spec = get_instance_type(group.addressing.instance_type)
        estimate = series_per_node(
            spec,
            kept,
            max_pods=group.addressing.kubelet_max_pods or 1,
            training_series_per_pod=training,
        )
        total += estimate.per_node * group.nodes
        parts.append(f"{group.name} {group.nodes:,} x {estimate.per_node:,}")
    if not parts:
        return []
    what = "series per node under the scrape allowlists: " + ", ".join(parts)
    rate = samples_per_second(total, SCRAPE_INTERVAL_SECONDS)
    return [
        lim.LimitUsage(lim.AMP_ACTIVE_SERIES_PER_WORKSPACE, total, what),
        lim.LimitUsage(
            lim.AMP_INGESTION_RATE_PER_WORKSPACE,
            rate,
            f"{total:,} series every {SCRAPE_INTERVAL_SECONDS} s",
        ),
    ]
