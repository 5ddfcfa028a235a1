"""User data of AWS PCS nodes: a MIME multipart document in the order PCS runs its parts.

PCS merges the launch template's user data with its own, so it must be MIME multipart
(PCS user guide, "Working with Amazon EC2 user data"): ``text/cloud-config`` parts run before
the instance registers with PCS, ``text/x-shellscript`` parts after registration and before
slurmd starts. The document here has one of each:

1. ``text/cloud-config``: ``write_files`` puts the PCS wrapper ``pcs_node.sh`` (gzip-compressed)
   under :data:`NODE_SCRIPTS_DIR`.
2. ``text/x-shellscript``: the instance-store NVMe as one volume at ``/opt/dlami/nvme``
   (:func:`fm_constructs.compute.user_data.raid0_setup_script`), then
   ``pcs_node.sh <role> <group> <scripts-uri>``: it fetches the Slurm node scripts HyperPod
   runs too (:mod:`fm_constructs.orchestration.slurm`) and ``provisioning_parameters.json``
   from the S3 prefix where :class:`~fm_constructs.orchestration.hyperpod.LifecycleScripts`
   deployed them (the scripts are read from their package directory and shared, never
   copied), then mounts FSx for
   Lustre and sets up containers on the NVMe. slurmd starts after it, so no job lands on a
   node without its file system. The scripts travel through S3 because together they exceed
   the 16 KiB EC2 allows for user data.

Strings may hold CDK tokens; CloudFormation resolves them inside the document.
"""

from __future__ import annotations

import base64
import gzip
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from fm_constructs import pins
from fm_constructs.catalog import InstanceSpec
from fm_constructs.compute.user_data import mime_multipart, raid0_setup_script
from fm_constructs.orchestration.slurm.parameters import (
    container_parameters,
    default_lnet_efa_interfaces,
    metrics_parameters,
)
from fm_constructs.planning.fsx_sizing import EFA_CONNECTIONS

#: Where the scripts land on the node.
NODE_SCRIPTS_DIR = "/opt/fm-constructs/pcs"
WRAPPER = "pcs_node.sh"
#: The roles a PCS node takes (containers.sh sets up enroot and pyxis on both).
ROLES = ("login", "compute")
#: Where the PCS Slurm installer puts each Slurm version (slurm-<version> below it; PCS user
#: guide, "Install SPANK plugins on AWS PCS").
PCS_SLURM_ROOT = "/opt/aws/pcs/scheduler"
#: Where a PCS node keeps its own SPANK configuration: the controller's plugstack.conf, which
#: configless slurmd and sackd fetch, includes slurm-<version>/plugstack.conf.d/ below it (PCS
#: user guide, "Configure SPANK plugins on AWS PCS").
PCS_SPANK_ROOT = "/etc/aws/pcs/scheduler"
#: The job hooks slurm_hooks.sh installs under the node's Slurm prefix (those of HyperPod).
HOOKS = {"Prolog": "etc/scripts/fm-prolog.sh", "Epilog": "etc/scripts/fm-epilog.sh"}
#: EC2's limit on user data (before base64).
USER_DATA_MAX_BYTES = 16 * 1024
CLOUD_CONFIG = 'text/cloud-config; charset="us-ascii"'
SHELL_SCRIPT = 'text/x-shellscript; charset="us-ascii"'


def wrapper_path() -> Path:
    """The packaged ``pcs_node.sh``."""
    return Path(str(resources.files("fm_constructs.orchestration.pcs") / "node_scripts" / WRAPPER))


def slurm_prefix(slurm_version: str) -> str:
    """Where Slurm ``slurm_version`` lives on a PCS node (``SLURM_PREFIX`` of the scripts)."""
    return f"{PCS_SLURM_ROOT}/slurm-{slurm_version}"


def plugstack_file(slurm_version: str) -> str:
    """The node-local SPANK file ``pcs_node.sh`` puts the pyxis line in (``PLUGSTACK_CONF``)."""
    return f"{PCS_SPANK_ROOT}/slurm-{slurm_version}/plugstack.conf.d/pyxis.conf"


def job_hook_settings(slurm_version: str) -> dict[str, str]:
    """The cluster-level ``Prolog`` and ``Epilog`` of a PCS cluster on ``slurm_version``: the
    absolute paths where ``slurm_hooks.sh`` installs HyperPod's hooks on every compute node.
    Absolute, so slurmd runs the node's own file (configless Slurm sends a controller's
    script only for a relative path: ``new_config_response`` in src/common/fetch_config.c,
    Slurm 25.05)."""
    prefix = slurm_prefix(slurm_version)
    return {name: f"{prefix}/{path}" for name, path in HOOKS.items()}


def lnet_efa_interfaces(spec: InstanceSpec, efa_clients: int | None) -> int:
    """EFA interfaces LNet uses on a node of type ``spec``: the FSx guide's figure for the type
    (the table HyperPod uses too), within the node's share of the file system's
    :data:`EFA_CONNECTIONS` across ``efa_clients`` nodes; 0 without EFA."""
    default = default_lnet_efa_interfaces(spec)
    if not default or not efa_clients:
        return default
    return min(default, max(1, EFA_CONNECTIONS // efa_clients))


def node_parameters(
    *,
    node_groups: Sequence[tuple[str, InstanceSpec]],
    fsx: Mapping[str, Any] | None,
    efa_clients: int | None = None,
    slurm_version: str | None = None,
    cluster_name: str = "",
    region: str = "",
    workload: str = "",
    prometheus_remote_write_url: str | None = None,
) -> dict[str, Any]:
    """The ``provisioning_parameters.json`` of a PCS cluster: ``slurm_version``, ``fsx``
    (``dns_name``, ``mount_name``, ``mount_point``, ``efa_enabled``) or null, ``node_groups``
    (``name``, ``instance_type``, ``lnet_efa_interfaces``: LNet's EFA interfaces where the file
    system has EFA, else 0), ``worker_groups`` (``instance_group_name``, ``gpus``, ``efa``:
    the GPUs the job prolog expects on a node of the group, which exporters it runs) and the
    pinned ``enroot_version`` and ``pyxis_version`` that ``containers.sh`` installs. With
    ``prometheus_remote_write_url``, also what the shared ``metrics.sh`` reads:
    ``prometheus``, ``cluster_name``, ``region``, ``workload``, ``exporter_ports``,
    ``efa_exporter_image`` and the pinned exporter versions. Values may be tokens."""
    efa_fs = bool(fsx is not None and fsx.get("efa_enabled"))
    out: dict[str, Any] = {
        "slurm_version": slurm_version or pins.pcs().slurm_version,
        "fsx": dict(fsx) if fsx is not None else None,
        "node_groups": [
            {
                "name": name,
                "instance_type": spec.name,
                "lnet_efa_interfaces": lnet_efa_interfaces(spec, efa_clients) if efa_fs else 0,
            }
            for name, spec in node_groups
        ],
        # The GPUs the prolog expects (slurm_hooks.sh) and the exporters a node runs.
        "worker_groups": [
            {
                "instance_group_name": name,
                "gpus": spec.accelerator_count if spec.accelerator_kind == "gpu" else 0,
                "efa": spec.efa_supported,
            }
            for name, spec in node_groups
        ],
        **container_parameters(),
        "prometheus": None,
    }
    if prometheus_remote_write_url is None:
        return out
    out.update(
        {
            "prometheus": {"remote_write_url": prometheus_remote_write_url},
            "cluster_name": cluster_name,
            "region": region,
            "workload": workload,
            **metrics_parameters(region),
        }
    )
    return out


def _packed(content: bytes) -> str:
    """gzip (no timestamp, so the template is stable) then base64, for ``gz+b64``."""
    return base64.b64encode(gzip.compress(content, compresslevel=9, mtime=0)).decode("ascii")


def cloud_config() -> str:
    """The ``text/cloud-config`` part: the wrapper, written before the node registers."""
    lines = [
        "#cloud-config",
        "write_files:",
        f"  - path: {NODE_SCRIPTS_DIR}/{WRAPPER}",
        "    permissions: '0755'",
        "    encoding: gz+b64",
        f"    content: {_packed(wrapper_path().read_bytes())}",
    ]
    return "\n".join(lines) + "\n"


def setup_script(role: str, group: str, scripts_uri: str, *, nvme_disks: int) -> str:
    """The ``text/x-shellscript`` part: the NVMe volume (when the type has instance store),
    then ``pcs_node.sh <role> <group> <scripts-uri>``."""
    body = ["#!/bin/bash", "set -euo pipefail"]
    if nvme_disks > 0:
        body.append(raid0_setup_script(nvme_disks).rstrip("\n"))
    body.append(f'bash "${{FM_ROOT:-}}{NODE_SCRIPTS_DIR}/{WRAPPER}" {role} {group} "{scripts_uri}"')
    return "\n".join(body) + "\n"


def pcs_user_data(role: str, group: str, scripts_uri: str, *, nvme_disks: int) -> str:
    """The MIME multipart user data of a node of group ``group`` and ``role`` ('login' or
    'compute'), whose scripts are under ``scripts_uri`` (``s3://bucket/prefix/``)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    return mime_multipart(
        [
            (CLOUD_CONFIG, cloud_config()),
            (SHELL_SCRIPT, setup_script(role, group, scripts_uri, nvme_disks=nvme_disks)),
        ]
    )
