"""User data for accelerated nodes: NVMe instance store as one RAID0 volume, plus hooks.

Two ways, chosen by :class:`UserDataMode`:

* ``EKS_NODEADM``: Amazon Linux 2023 EKS nodes. A MIME multipart document whose
  ``application/node.eks.aws`` part is a nodeadm ``NodeConfig`` with
  ``spec.instance.localStorage.strategy: RAID0`` (nodeadm assembles the disks and moves the
  kubelet and containerd state onto them, under ``/mnt/k8s-disks``). Managed node groups merge
  this with the cluster details EKS adds; self-managed nodes or custom AMIs pass
  :class:`NodeadmCluster` so nodeadm can join the cluster.
* ``SHELL``: any other Linux AMI. The script installs ``fm-nvme-raid0.service``, which at every
  boot assembles (after a reboot) or recreates (after a stop and start, when the instance store
  is blank) the RAID0 array of the instance-store disks and mounts it at ``/opt/dlami/nvme``
  (the path the AWS Deep Learning AMIs use) before the container runtime, kubelet or slurmd
  start.

More boot steps go in as shell parts after the NodeConfig (:func:`append_shell_part`), each
installing a script and a unit that runs it at every boot (:func:`boot_unit_setup`), ordered
before kubelet (nodeadm-run.service and kubelet.service) when it must precede every pod (LNet
over EFA for FSx for Lustre, :mod:`fm_constructs.orchestration.lustre_efa_client`).

Strings may contain CDK tokens (a cluster endpoint, say); CloudFormation resolves them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from importlib import resources

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


#: Content type of a user-data part cloud-init runs as a shell script.
SHELL_SCRIPT_PART = 'text/x-shellscript; charset="us-ascii"'


def append_shell_part(user_data: str | None, script: str) -> str:
    """``user_data`` (a MIME multipart document of :func:`mime_multipart`, or None) with
    ``script`` as one more ``text/x-shellscript`` part at its end: cloud-init runs the shell
    parts in order, after the ones already there."""
    if not script.startswith("#!"):
        script = "#!/bin/bash\n" + script
    if user_data is None:
        return mime_multipart([(SHELL_SCRIPT_PART, script)])
    closing = f"--{MIME_BOUNDARY}--\n"
    if not user_data.endswith(closing):
        raise ValueError("user data is not a MIME multipart document of mime_multipart")
    part = mime_multipart([(SHELL_SCRIPT_PART, script)])
    first = part.index(f"--{MIME_BOUNDARY}\n")
    return user_data[: -len(closing)] + part[first:]


def lnet_efa_boot_script() -> str:
    """The packaged ``lnet_efa_boot.sh``: on an EKS node, before kubelet, the Lustre client when
    missing, then LNet over EFA through ``fm-lnet-efa`` (or Lustre stays on TCP, said so, on a
    node without EFA devices or an EFA LND)."""
    return (resources.files("fm_constructs.compute") / "scripts" / "lnet_efa_boot.sh").read_text()


#: The boot-time script (packaged beside this module) and the unit that runs it.
NVME_RAID0_SCRIPT_PATH = "/usr/local/sbin/fm-nvme-raid0"
NVME_RAID0_UNIT = "fm-nvme-raid0.service"
#: Services that keep state on the NVMe volume, started only after it is mounted.
NVME_CONSUMERS = ("docker.service", "containerd.service", "kubelet.service", "slurmd.service")


def nvme_raid0_script() -> str:
    """The packaged ``nvme_raid0.sh``: finds the instance-store disks, assembles or creates
    their RAID0 array, makes a file system only when none is there, and mounts it."""
    return (resources.files("fm_constructs.compute") / "scripts" / "nvme_raid0.sh").read_text()


def nvme_raid0_unit(disks: int) -> str:
    """The systemd unit that runs the RAID0 script at every boot (the instance store is blank
    after a stop and start) before the services that use it. It runs after the AMI's own
    ``dlami-nvme.service`` (if any), so a volume the AMI mounted is left as it is."""
    return (
        "[Unit]\n"
        f"Description=fm-constructs: instance-store NVMe as one volume at {NVME_MOUNT_PATH}\n"
        "After=local-fs.target dlami-nvme.service\n"
        f"Before={' '.join(NVME_CONSUMERS)}\n"
        "\n"
        "[Service]\n"
        "Type=oneshot\n"
        "RemainAfterExit=yes\n"
        f"Environment=FM_NVME_DISKS={int(disks)}\n"
        f"ExecStart={NVME_RAID0_SCRIPT_PATH}\n"
        "TimeoutStartSec=15min\n"
        "\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n"
    )


def _heredoc(path: str, body: str, marker: str) -> str:
    """Shell that writes ``body`` to ``${FM_ROOT}<path>`` verbatim (quoted here-document)."""
    if any(line == marker for line in body.splitlines()):
        raise ValueError(f"{marker} occurs in the document it delimits")
    return f"cat > \"${{FM_ROOT}}{path}\" <<'{marker}'\n{body.rstrip(chr(10))}\n{marker}"


def boot_unit_setup(
    *,
    comment: Sequence[str],
    scripts: Sequence[tuple[str, str, str]],
    unit: tuple[str, str, str],
    prelude: Sequence[str] = (),
) -> str:
    """Shell that installs a boot step and runs it now: ``scripts`` (path on the node, body,
    here-document marker) written verbatim and made executable, ``unit`` (name, body, marker)
    written to /etc/systemd/system, enabled for every later boot and started. ``comment``
    lines open it (without their ``#``); ``prelude`` runs before the files are written.
    Every path is under ``${FM_ROOT}`` (empty on a node), so tests run it under a directory."""
    lines = [f"# {line}" for line in comment]
    lines += ['FM_ROOT="${FM_ROOT:-}"', *prelude]
    lines.append('mkdir -p "${FM_ROOT}/usr/local/sbin" "${FM_ROOT}/etc/systemd/system"')
    for path, body, marker in scripts:
        lines += [_heredoc(path, body, marker), f'chmod 0755 "${{FM_ROOT}}{path}"']
    name, unit_body, marker = unit
    lines += [
        _heredoc(f"/etc/systemd/system/{name}", unit_body, marker),
        "systemctl daemon-reload",
        f"systemctl enable --now {name}",
    ]
    return "\n".join(lines) + "\n"


def raid0_setup_script(disks: int) -> str:
    """Shell that installs the RAID0 script and its unit, enables the unit for every later
    boot and starts it now. Nothing goes into ``/etc/fstab``: an entry by UUID would name an
    array a stop/start destroys. mdadm is installed when the type has several disks."""
    prelude = []
    if disks > 1:
        prelude.append(
            "command -v mdadm > /dev/null || dnf install -y mdadm || yum install -y mdadm \\\n"
            "  || { apt-get update && apt-get install -y mdadm; }"
        )
    return boot_unit_setup(
        comment=[
            f"Instance-store NVMe as one volume at {NVME_MOUNT_PATH}, rebuilt at every boot by",
            f"{NVME_RAID0_UNIT}.",
        ],
        prelude=prelude,
        scripts=[(NVME_RAID0_SCRIPT_PATH, nvme_raid0_script(), "FM_NVME_RAID0_SCRIPT")],
        unit=(NVME_RAID0_UNIT, nvme_raid0_unit(disks), "FM_NVME_UNIT"),
    )


def shell_user_data(*, raid0: bool, extra_script: str | None, nvme_disks: int = 0) -> str | None:
    """A bash user-data script (the boot-time RAID0 unit for ``nvme_disks`` instance-store
    disks, then ``extra_script``), or None if empty."""
    raid0 = raid0 and nvme_disks > 0
    if not raid0 and not extra_script:
        return None
    body = ["#!/bin/bash", "set -euo pipefail"]
    if raid0:
        body.append(raid0_setup_script(nvme_disks).rstrip("\n"))
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
    nvme_disks: int = 0,
) -> str | None:
    """The user data for ``mode`` (None when there is nothing to run). ``max_pods`` applies to
    nodeadm nodes only; ``nvme_disks`` (the type's instance-store disk count) to shell ones."""
    if mode is UserDataMode.NONE:
        return None
    if mode is UserDataMode.SHELL:
        return shell_user_data(raid0=raid0, extra_script=extra_script, nvme_disks=nvme_disks)
    parts: list[tuple[str, str]] = []
    node_config = node_config_yaml(raid0=raid0, cluster=cluster, max_pods=max_pods)
    if node_config:
        parts.append(("application/node.eks.aws", node_config))
    if extra_script:
        script = extra_script
        if not script.startswith("#!"):
            script = "#!/bin/bash\n" + script
        parts.append((SHELL_SCRIPT_PART, script))
    return mime_multipart(parts) if parts else None
