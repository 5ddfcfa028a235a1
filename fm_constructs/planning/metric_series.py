"""How many Prometheus series one accelerated node sends, from the metric names the scrape
configuration keeps, and what a cluster of them asks of a Managed Prometheus workspace.

The scrape configuration keeps an allowlist of names per job (``metric_relabel_configs``,
``action: keep`` on ``__name__``): that relabeling is what keeps a thousand nodes inside the
workspace's quotas, and :func:`kept_names` reads it back from the configuration itself. Each
kept name then gets a cardinality per node from what produces it:

* DCGM fields: one series per GPU;
* ``node_cpu_seconds_total``: one per vCPU and CPU mode (the cpu collector's 8 modes);
* filesystem figures: one per mount the node exporter reports, about six for the host and two
  per pod (each pod's projected service-account token and its volumes are tmpfs mounts the
  default ``fs-types-exclude`` keeps);
* network figures: one per network device, the ENA interfaces (EFA-only interfaces have no
  netdev) plus one veth per pod;
* EFA counters: one per EFA device; kube-state-metrics: fixed per node, and per pod;
* anything else: one series per node.

Figures are upper estimates for a node running ``max_pods`` pods. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fm_constructs.catalog import InstanceSpec

#: CPU modes the node exporter's cpu collector reports (user, nice, system, idle, iowait, irq,
#: softirq, steal).
CPU_MODES = 8
#: Host mounts the node exporter reports besides pods' (/, /boot, the NVMe RAID, /fsx, ...).
HOST_MOUNTS = 6
MOUNTS_PER_POD = 2
#: Node conditions (Ready, MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable) x the
#: three statuses kube-state-metrics reports for each.
NODE_CONDITION_SERIES = 5 * 3
#: Resources a GPU node reports in capacity and allocatable (cpu, memory, pods,
#: ephemeral-storage, hugepages-1Gi, hugepages-2Mi, the accelerator, EFA).
NODE_RESOURCES = 8
#: kube_pod_status_phase reports the 5 phases of every pod.
POD_PHASES = 5
#: Lustre client counters: read and write bytes, and per operation kind (about 12) a count and
#: a time.
LUSTRE_SERIES = 2 + 2 * 12


def kept_names(scrape_config: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    """Job name -> metric names its ``metric_relabel_configs`` keep (only jobs with a plain
    ``a|b|c`` allowlist on ``__name__``; patterns such as ``fm_training_.+`` are left out and
    counted by the caller)."""
    out: dict[str, tuple[str, ...]] = {}
    for job in scrape_config.get("scrape_configs") or []:
        for relabel in job.get("metric_relabel_configs") or []:
            if relabel.get("action") != "keep" or relabel.get("source_labels") != ["__name__"]:
                continue
            names = tuple(
                n for n in str(relabel.get("regex", "")).split("|") if re.fullmatch(r"\w+", n)
            )
            if names:
                out[job["job_name"]] = names
    return out


def _per_node(name: str, spec: InstanceSpec, max_pods: int) -> int:
    """Series of metric ``name`` on one node of ``spec`` running ``max_pods`` pods."""
    gpus = spec.accelerator_count if spec.eks_ami_family == "NVIDIA" else 0
    if name.startswith("DCGM_"):
        return gpus
    if name == "node_cpu_seconds_total":
        return spec.vcpus * CPU_MODES
    if name.startswith("node_filesystem_"):
        return HOST_MOUNTS + MOUNTS_PER_POD * max_pods
    if name.startswith("node_network_"):
        return 2 + max_pods  # lo, the primary ENA, a veth per pod
    if name.startswith("node_amazonefa_"):
        return spec.max_efa_interfaces
    if name == "kube_node_status_condition":
        return NODE_CONDITION_SERIES
    if name in ("kube_node_status_capacity", "kube_node_status_allocatable"):
        return NODE_RESOURCES
    if name == "kube_pod_status_phase":
        return POD_PHASES * max_pods
    if name == "kube_pod_container_status_restarts_total":
        return max_pods
    return 1


@dataclass(frozen=True)
class SeriesEstimate:
    """Active series of one node by scrape job, and in total."""

    instance_type: str
    by_job: dict[str, int]

    @property
    def per_node(self) -> int:
        return sum(self.by_job.values())


def series_per_node(
    spec: InstanceSpec,
    kept: Mapping[str, tuple[str, ...]],
    *,
    max_pods: int,
    training_series_per_pod: int = 0,
) -> SeriesEstimate:
    """The series one ``spec`` node sends under the allowlists ``kept``, running ``max_pods``
    pods; ``training_series_per_pod``: the job-metrics contract's series of the one training
    pod a node runs. The Lustre client counters (kept by a pattern) and one ``up`` series per
    scrape job are added."""
    by_job = {
        job: sum(_per_node(name, spec, max_pods) for name in names) for job, names in kept.items()
    }
    if "efa-exporter" in by_job:
        by_job["efa-exporter"] += LUSTRE_SERIES
    by_job["workload-pods"] = by_job.get("workload-pods", 0) + training_series_per_pod
    by_job["up"] = len(kept) + 1
    return SeriesEstimate(spec.name, by_job)


def samples_per_second(series: int, scrape_interval_seconds: int) -> int:
    """Ingestion rate of ``series`` scraped every ``scrape_interval_seconds``."""
    return -(-series // scrape_interval_seconds)
