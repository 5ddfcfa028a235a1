"""User data for accelerated nodes: NVMe instance store as one RAID0 volume, plus hooks.

Two ways, chosen by :class:`UserDataMode`:

* ``EKS_NODEADM``: Amazon Linux 2023 EKS nodes. A MIME multipart document whose
  ``application/node.eks.aws`` part is a nodeadm ``NodeConfig`` with
  ``spec.instance.localStorage.strategy: RAID0`` (nodeadm assembles the disks and moves the
  kubelet and containerd state onto them, under ``/mnt/k8s-disks``). Managed node groups merge
  this with the cluster details EKS adds; self-managed nodes or custom AMIs pass
  :class:`NodeadmCluster` so nodeadm can join the cluster.
* ``SHELL``: any other Linux AMI. A shell script builds a RAID0 array with mdadm and mounts it
  at ``/opt/dlami/nvme`` (the path the AWS Deep Learning AMIs use), idempotently.

Strings may contain CDK tokens (a cluster endpoint, say); CloudFormation resolves them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum

MIME_BOUNDARY = "==FM-CONSTRUCTS-BOUNDARY=="
NVME_MOUNT_PATH = "/opt/dlami/nvme"


class UserDataMode(Enum):
    """How the launch template's user data is written."""

    #: AL2023 EKS node: MIME multipart with a nodeadm NodeConfig (RAID0 local storage).
    EKS_NODEADM = "eks-nodeadm"
    #: Plain shell script: mdadm RAID0 mounted at /opt/dlami/nvme.
    SHELL = "shell"
    #: No user data at all (the AMI or the orchestrator prepares the node).
    NONE = "none"


@dataclass(frozen=True)
class NodeadmCluster:
    """Cluster coordinates nodeadm needs when EKS does not inject them (self-managed nodes,
    custom AMIs). ``certificate_authority`` is the base64 CA bundle; ``cidr`` the service
    CIDR."""

    name: str
    api_server_endpoint: str
    certificate_authority: str
    cidr: str


def _yaml_string(value: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(value)


def node_config_yaml(
    *, raid0: bool, cluster: NodeadmCluster | None, max_pods: int | None = None
) -> str | None:
    """The nodeadm NodeConfig document, or None when it would be empty. ``max_pods``: kubelet's
    ``maxPods`` (nodeadm's ``spec.kubelet.config``), which bounds the pod addresses a node
    takes from its pod subnet."""
    if not raid0 and cluster is None and max_pods is None:
        return None
    lines = ["---", "apiVersion: node.eks.aws/v1alpha1", "kind: NodeConfig", "spec:"]
    if cluster is not None:
        lines += [
            "  cluster:",
            f"    name: {_yaml_string(cluster.name)}",
            f"    apiServerEndpoint: {_yaml_string(cluster.api_server_endpoint)}",
            f"    certificateAuthority: {_yaml_string(cluster.certificate_authority)}",
            f"    cidr: {_yaml_string(cluster.cidr)}",
        ]
    if max_pods is not None:
        lines += ["  kubelet:", "    config:", f"      maxPods: {int(max_pods)}"]
    if raid0:
        lines += ["  instance:", "    localStorage:", "      strategy: RAID0"]
    return "\n".join(lines) + "\n"


def mime_multipart(parts: list[tuple[str, str]]) -> str:
    """A MIME multipart/mixed document from (content type, body) pairs."""
    out = [
        "MIME-Version: 1.0",
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"',
        "",
    ]
    for content_type, body in parts:
        out += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n"), ""]
    out.append(f"--{MIME_BOUNDARY}--")
    return "\n".join(out) + "\n"


RAID0_SCRIPT = f"""\
# Assemble every NVMe instance-store disk into one RAID0 volume at {NVME_MOUNT_PATH}.
fm_nvme_raid0() {{
  local mount_path="{NVME_MOUNT_PATH}"
  if mountpoint -q "$mount_path"; then return 0; fi
  local devices
  mapfile -t devices < <(lsblk -dpno NAME,MODEL \\
    | awk '/Amazon EC2 NVMe Instance Storage/ {{print $1}}')
  if [ "${{#devices[@]}}" -eq 0 ]; then return 0; fi
  local target="${{devices[0]}}"
  if [ "${{#devices[@]}}" -gt 1 ]; then
    command -v mdadm >/dev/null || dnf install -y mdadm || yum install -y mdadm \\
      || (apt-get update && apt-get install -y mdadm)
    target=/dev/md/fm-nvme
    mdadm --create "$target" --level=0 --raid-devices="${{#devices[@]}}" --run "${{devices[@]}}"
  fi
  mkfs.xfs -f "$target"
  mkdir -p "$mount_path"
  mount -o noatime "$target" "$mount_path"
  echo "UUID=$(blkid -s UUID -o value "$target") $mount_path xfs noatime,nofail 0 2" >> /etc/fstab
  chmod 1777 "$mount_path"
}}
fm_nvme_raid0
"""


def shell_user_data(*, raid0: bool, extra_script: str | None) -> str | None:
    """A bash user-data script (RAID0 assembly, then ``extra_script``), or None if empty."""
    if not raid0 and not extra_script:
        return None
    body = ["#!/bin/bash", "set -euo pipefail"]
    if raid0:
        body.append(RAID0_SCRIPT.rstrip("\n"))
    if extra_script:
        body.append(extra_script.rstrip("\n"))
    return "\n".join(body) + "\n"


def render_user_data(
    mode: UserDataMode,
    *,
    raid0: bool,
    cluster: NodeadmCluster | None = None,
    extra_script: str | None = None,
    max_pods: int | None = None,
) -> str | None:
    """The user data for ``mode`` (None when there is nothing to run). ``max_pods`` applies to
    nodeadm nodes only."""
    if mode is UserDataMode.NONE:
        return None
    if mode is UserDataMode.SHELL:
        return shell_user_data(raid0=raid0, extra_script=extra_script)
    parts: list[tuple[str, str]] = []
    node_config = node_config_yaml(raid0=raid0, cluster=cluster, max_pods=max_pods)
    if node_config:
        parts.append(("application/node.eks.aws", node_config))
    if extra_script:
        script = extra_script
        if not script.startswith("#!"):
            script = "#!/bin/bash\n" + script
        parts.append(('text/x-shellscript; charset="us-ascii"', script))
    return mime_multipart(parts) if parts else None
