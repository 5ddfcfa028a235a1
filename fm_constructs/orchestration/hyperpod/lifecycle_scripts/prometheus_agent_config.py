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


def scrape_targets(params: dict[str, Any], *, role: str, group_name: str) -> list[tuple[str, int]]:
    """(job, port) pairs scraped on a node: node exporter everywhere; DCGM on GPU workers and
    the EFA exporter on EFA workers."""
    ports = params["exporter_ports"]
    targets = [("node", int(ports["node"]))]
    if role != "worker":
        return targets
    for group in params.get("worker_groups", []):
        if group["instance_group_name"] != group_name:
            continue
        if group.get("gpus"):
            targets.append(("dcgm", int(ports["dcgm"])))
        if group.get("efa"):
            targets.append(("efa", int(ports["efa"])))
    return targets


def render(params: dict[str, Any], *, role: str, group_name: str, hostname: str) -> str:
    """The agent configuration as JSON; raises when the cluster has no Prometheus workspace."""
    prometheus = params.get("prometheus")
    if not prometheus:
        raise ValueError("provisioning parameters name no Prometheus workspace")
    # ``node`` is the label every shipped rule and dashboard groups by (on EKS it is the
    # Kubernetes node name); ``instance`` names the host rather than ``localhost:<port>``.
    labels = {
        "cluster": params["cluster_name"],
        "instance_group": group_name,
        "node_role": role,
        "hostname": hostname,
        "node": hostname,
        "instance": hostname,
    }
    config = {
        "global": {"scrape_interval": "30s", "external_labels": {"cluster": labels["cluster"]}},
        "scrape_configs": [
            {
                "job_name": job,
                "static_configs": [{"targets": [f"localhost:{port}"], "labels": labels}],
            }
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
