"""What a HyperPod node needs to know about its part in the Slurm cluster.

Runs on every node during ``on_create.sh``. HyperPod's own agent writes ``slurm.conf`` (the
controller, one node line per instance and one partition per worker group) from
``provisioning_parameters.json`` (``controller_group``, ``login_group`` and ``worker_groups``
with ``instance_group_name`` and ``partition_name``) and keeps it current as Continuous
provisioning and automatic node recovery add and replace nodes. The lifecycle scripts therefore
never write nodes, partitions or the controller host; this module only answers:

- ``group``/``role``: this node's instance group and part (controller, login or worker), found
  by its IP in HyperPod's resource configuration (``/opt/ml/config/resource_config.json``);
- ``controllers``: the controller IPs, which the agent's ``slurm.conf`` names once it is written
  (``setup_slurm.sh`` waits for that before it starts slurmctld) and which workers pass to
  slurmd as ``--conf-server``;
- ``slurm-conf-ready``: whether a ``slurm.conf`` names one of those controllers;
- ``gres``: the ``gres.conf`` the controller serves (NVIDIA GPUs found through NVML), empty when
  no worker group has GPUs or the AMI's Slurm has no NVML plugin;
- ``gres-report``: one line on whether the agent's node lines declare GPUs (see
  :func:`gres_report`).

Standard library only; compatible with python3.8 (the oldest python3 on HyperPod AMIs).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

#: Where HyperPod writes the cluster's resource configuration on each node.
RESOURCE_CONFIG_PATH = "/opt/ml/config/resource_config.json"


def load_json(path: str) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def _addresses(local_ip: str | Sequence[str]) -> list[str]:
    return [local_ip] if isinstance(local_ip, str) else list(local_ip)


def node_group(resource_config: dict[str, Any], local_ip: str | Sequence[str]) -> str:
    """Name of the instance group holding this node: the first of its candidate addresses
    (``local_ip``, the route lookup's first, then every local address) that the resource
    configuration lists as an instance's ``CustomerIpAddress``."""
    candidates = _addresses(local_ip)
    for address in candidates:
        for group in resource_config.get("InstanceGroups", []):
            for instance in group.get("Instances", []):
                if instance.get("CustomerIpAddress") == address:
                    return str(group.get("Name"))
    raise LookupError(
        f"no instance with IP {', '.join(candidates) or '(none)'} in the resource configuration"
    )


def node_role(
    resource_config: dict[str, Any], params: dict[str, Any], local_ip: str | Sequence[str]
) -> str:
    """``controller``, ``login`` or ``worker`` for this node (see :func:`node_group`)."""
    name = node_group(resource_config, local_ip)
    if name == params.get("controller_group"):
        return "controller"
    if name == params.get("login_group"):
        return "login"
    return "worker"


def controller_addresses(resource_config: dict[str, Any], params: dict[str, Any]) -> list[str]:
    """Private IPs of the controller group's instances (raises when there are none)."""
    wanted = params.get("controller_group")
    for group in resource_config.get("InstanceGroups", []):
        if group.get("Name") == wanted:
            addresses = [
                str(i["CustomerIpAddress"])
                for i in group.get("Instances", [])
                if i.get("CustomerIpAddress")
            ]
            if addresses:
                return addresses
    raise LookupError(f"controller group {wanted!r} has no instance in the resource configuration")


def slurm_conf_ready(slurm_conf: str, controllers: list[str]) -> bool:
    """True when the agent's ``slurm.conf`` names one of ``controllers`` outside comments (as
    ``SlurmctldHost=...(<ip>)`` or a ``NodeAddr``)."""
    for line in slurm_conf.splitlines():
        content = line.split("#", 1)[0]
        for address in controllers:
            start = content.find(address)
            while start >= 0:
                end = start + len(address)
                before = content[start - 1] if start > 0 else " "
                after = content[end] if end < len(content) else " "
                # The whole address, not a prefix of another one (10.1.0.1 in 10.1.0.10).
                if not (before.isdigit() or before == ".") and not (
                    after.isdigit() or after == "."
                ):
                    return True
                start = content.find(address, end)
    return False


#: The GPU plugin a Slurm build has only when it was built against NVML.
NVML_PLUGIN = "gpu_nvml.so"


def gres_conf(params: dict[str, Any], slurm_lib: str | None = None) -> str:
    """``gres.conf`` for the cluster: NVIDIA GPUs found through NVML on each node. Empty when no
    worker group has GPUs, or when ``slurm_lib`` (the Slurm plugin directory) lacks the NVML
    plugin: a Slurm built without NVML refuses ``AutoDetect=nvml`` and slurmd would not start."""
    if not any(group.get("gpus") for group in params.get("worker_groups", [])):
        return ""
    if slurm_lib is not None and not os.path.exists(os.path.join(slurm_lib, NVML_PLUGIN)):
        return ""
    return "AutoDetect=nvml\n"


def _declares_gpus(fields: list[str]) -> bool:
    return any(f.lower().startswith("gres=") and "gpu" in f.lower() for f in fields)


def gres_report(slurm_conf: str) -> str:
    """One line on how the agent's ``slurm.conf`` declares GPUs: how many of its node lines
    carry ``Gres=gpu`` themselves or from a ``NodeName=DEFAULT`` line before them (so
    ``--gres=gpu:N`` and ``--gpus-per-node`` can be scheduled) and whether it sets
    ``GresTypes`` itself. The library never writes node lines, so this is what the controller
    logs for the person who submits GPU jobs."""
    nodes = with_gpus = 0
    types = default_gpus = False
    for line in slurm_conf.splitlines():
        fields = line.split("#", 1)[0].split()
        if not fields:
            continue
        key, _, value = fields[0].partition("=")
        key = key.lower()
        if key == "grestypes":
            types = True
        elif key == "nodename" and value.upper() == "DEFAULT":
            default_gpus = _declares_gpus(fields[1:]) or (
                default_gpus and not any(f.lower().startswith("gres=") for f in fields[1:])
            )
        elif key == "nodename":
            nodes += 1
            own = [f for f in fields[1:] if f.lower().startswith("gres=")]
            if _declares_gpus(own) or (default_gpus and not own):
                with_gpus += 1
    where = "sets GresTypes" if types else "sets no GresTypes (accounting.conf adds gpu)"
    if nodes == 0:
        advice = "no node is listed yet (nodes join as HyperPod adds them)"
    elif with_gpus == 0:
        advice = "GPU jobs get whole nodes with --exclusive; --gres=gpu:N is not schedulable"
    else:
        advice = "--gres=gpu:N and --gpus-per-node work on those nodes"
    return (
        f"HyperPod's slurm.conf: {with_gpus} of {nodes} node lines carry Gres=gpu and it "
        f"{where}; {advice}\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "command",
        choices=["node", "role", "group", "controllers", "slurm-conf-ready", "gres", "gres-report"],
    )
    parser.add_argument("--params", required=True)
    parser.add_argument("--resource-config", default=RESOURCE_CONFIG_PATH)
    parser.add_argument(
        "--local-ip",
        action="append",
        default=[],
        help="for node, role and group: a candidate address of this node (repeat, best first)",
    )
    parser.add_argument("--slurm-lib", help="for gres: the Slurm plugin directory")
    parser.add_argument(
        "--slurm-conf", help="for slurm-conf-ready and gres-report: the slurm.conf to read"
    )
    args = parser.parse_args(argv)
    params = load_json(args.params)
    if args.command == "gres":
        sys.stdout.write(gres_conf(params, args.slurm_lib))
        return 0
    if args.command == "gres-report":
        with open(args.slurm_conf, encoding="utf-8") as handle:
            sys.stdout.write(gres_report(handle.read()))
        return 0
    resource_config = load_json(args.resource_config)
    if args.command == "node":  # both at once: "<group> <role>"
        group = node_group(resource_config, args.local_ip)
        sys.stdout.write(f"{group} {node_role(resource_config, params, args.local_ip)}\n")
    elif args.command == "role":
        sys.stdout.write(node_role(resource_config, params, args.local_ip) + "\n")
    elif args.command == "group":
        sys.stdout.write(node_group(resource_config, args.local_ip) + "\n")
    elif args.command == "controllers":
        sys.stdout.write(" ".join(controller_addresses(resource_config, params)) + "\n")
    else:
        try:
            with open(args.slurm_conf, encoding="utf-8") as handle:
                text = handle.read()
        except FileNotFoundError:
            return 1
        return 0 if slurm_conf_ready(text, controller_addresses(resource_config, params)) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
