"""Render the Prometheus agent configuration of a HyperPod node.

The collector is Prometheus in agent mode (one static binary, no local TSDB queries): it scrapes
the exporters on this node and remote-writes to Amazon Managed Service for Prometheus, signing
requests with SigV4 from the instance credentials (the cluster execution role, which holds
``aps:RemoteWrite`` on the workspace). Prometheus accepts JSON as YAML, so the file is written
with the standard library alone.

Standard library only; compatible with python3.8.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: Job names: the same as the EKS scraper's jobs that read the same exporter, so one query,
#: rule or dashboard serves both orchestrators.
NODE_JOB = "node-exporter"
DCGM_JOB = "dcgm-exporter"
EFA_JOB = "efa-exporter"
#: The Slurm exporter on the controller (no EKS counterpart: Kubernetes has kube-state-metrics).
SLURM_JOB = "slurm-exporter"
#: Training processes on the node (the job-metrics contract, port 9464). Present only while a
#: job runs, so its failed scrapes mean "no job here", not an outage.
JOB_METRICS_JOB = "job-metrics"
JOB_METRICS_PORT = 9464

#: Metric families kept per job (everything else is dropped before remote write: Managed
#: Prometheus bills per sample). Equal to the EKS scrape configuration's keep lists; a test
#: compares them.
KEEP: dict[str, str] = {
    NODE_JOB: "node_cpu_seconds_total|node_memory_MemAvailable_bytes|node_memory_MemTotal_bytes"
    "|node_filesystem_avail_bytes|node_filesystem_size_bytes|node_network_receive_bytes_total"
    "|node_network_transmit_bytes_total|node_load1",
    DCGM_JOB: "DCGM_FI_DEV_GPU_UTIL|DCGM_FI_PROF_SM_ACTIVE|DCGM_FI_PROF_SM_OCCUPANCY"
    "|DCGM_FI_PROF_PIPE_TENSOR_ACTIVE|DCGM_FI_PROF_DRAM_ACTIVE|DCGM_FI_DEV_FB_USED"
    "|DCGM_FI_DEV_FB_FREE|DCGM_FI_DEV_GPU_TEMP|DCGM_FI_DEV_MEMORY_TEMP|DCGM_FI_DEV_POWER_USAGE"
    "|DCGM_FI_DEV_SM_CLOCK|DCGM_FI_DEV_XID_ERRORS|DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"
    "|DCGM_FI_DEV_ECC_DBE_VOL_TOTAL|DCGM_FI_DEV_ROW_REMAP_FAILURE"
    "|DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS|DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
    "|DCGM_FI_DEV_THERMAL_VIOLATION|DCGM_FI_DEV_POWER_VIOLATION|DCGM_FI_PROF_NVLINK_TX_BYTES"
    "|DCGM_FI_PROF_NVLINK_RX_BYTES|DCGM_FI_PROF_PCIE_TX_BYTES|DCGM_FI_PROF_PCIE_RX_BYTES"
    "|DCGM_EXP_XID_ERRORS_COUNT|DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL"
    "|DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL|DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL"
    "|DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    EFA_JOB: "node_amazonefa_(tx_bytes|rx_bytes|tx_pkts|rx_pkts|rx_drops|rdma_read_bytes"
    "|rdma_write_bytes|rdma_read_wr_err|rdma_write_wr_err|retrans_bytes|retrans_pkts"
    "|retrans_timeout_events|unresponsive_remote_events|impaired_remote_conn_events)"
    "|fm_lustre_client_.+",
    JOB_METRICS_JOB: "fm_training_.+",
    SLURM_JOB: "slurm_nodes_(alloc|comp|down|drain|fail|idle|mix|planned|total)|slurm_node_status"
    "|slurm_jobs_(pending|running|failed|node_fail|timeout|cancelled|completed)"
    "|slurm_gpus_(alloc|idle|other|total)|slurm_partition_jobs_(pending|running)"
    "|slurm_scheduler_(queue_size|dbd_queue_size|last_cycle)|slurm_exporter_collector_success"
    "|slurm_exporter_command_errors_total",
}


def scrape_targets(params: dict[str, Any], *, role: str, group_name: str) -> list[tuple[str, int]]:
    """(job, port) pairs scraped on a node: node exporter everywhere; the Slurm exporter on the
    controller; DCGM on GPU workers, the EFA exporter on EFA workers, and the job-metrics port
    on every worker."""
    ports = params["exporter_ports"]
    targets = [(NODE_JOB, int(ports["node"]))]
    if role == "controller" and "slurm" in ports:
        targets.append((SLURM_JOB, int(ports["slurm"])))
    if role != "worker":
        return targets
    for group in params.get("worker_groups", []):
        if group["instance_group_name"] != group_name:
            continue
        if group.get("gpus"):
            targets.append((DCGM_JOB, int(ports["dcgm"])))
        if group.get("efa"):
            targets.append((EFA_JOB, int(ports["efa"])))
    targets.append((JOB_METRICS_JOB, JOB_METRICS_PORT))
    return targets


def _scrape_config(job: str, port: int, labels: dict[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {
        "job_name": job,
        "static_configs": [{"targets": [f"localhost:{port}"], "labels": labels}],
        "metric_relabel_configs": [
            {"source_labels": ["__name__"], "action": "keep", "regex": KEEP[job]}
        ],
    }
    if job in (JOB_METRICS_JOB, SLURM_JOB):
        # A job that knows its run name (e.g. SLURM_JOB_NAME) exports it as label ``run``; the
        # Slurm exporter's ``node`` label names the Slurm node a series is about, not the
        # controller it was scraped on.
        config["honor_labels"] = True
    return config


def render(params: dict[str, Any], *, role: str, group_name: str, hostname: str) -> str:
    """The agent configuration as JSON; raises when the cluster has no Prometheus workspace."""
    prometheus = params.get("prometheus")
    if not prometheus:
        raise ValueError("provisioning parameters name no Prometheus workspace")
    # ``node`` is the label every shipped rule and dashboard groups by (on EKS it is the
    # Kubernetes node name); ``instance`` names the host rather than ``localhost:<port>``;
    # ``workload`` is the library workload when the parameters name it, else the group.
    labels = {
        "instance_group": group_name,
        "node_role": role,
        "hostname": hostname,
        "node": hostname,
        "instance": hostname,
        "workload": str(params.get("workload") or group_name),
    }
    config = {
        "global": {
            "scrape_interval": "30s",
            "external_labels": {"cluster": params["cluster_name"], "orchestrator": "slurm"},
        },
        "scrape_configs": [
            _scrape_config(job, port, labels)
            for job, port in scrape_targets(params, role=role, group_name=group_name)
        ],
        "remote_write": [
            {
                "url": prometheus["remote_write_url"],
                "sigv4": {"region": params["region"]},
                "queue_config": {"max_samples_per_send": 1000, "max_shards": 20},
            }
        ],
    }
    return json.dumps(config, indent=2, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--params", required=True)
    parser.add_argument("--role", required=True, choices=["controller", "login", "worker"])
    parser.add_argument("--group", required=True)
    parser.add_argument("--hostname", required=True)
    args = parser.parse_args(argv)
    with open(args.params, encoding="utf-8") as handle:
        params = json.load(handle)
    sys.stdout.write(render(params, role=args.role, group_name=args.group, hostname=args.hostname))
    return 0


if __name__ == "__main__":
    sys.exit(main())
