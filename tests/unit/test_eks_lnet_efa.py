"""LNet over EFA on EKS nodes of an EFA-enabled FSx for Lustre file system, before kubelet.

The user-data shell part of :mod:`fm_constructs.orchestration.lustre_efa_client` runs here in a
simulated AL2023 EKS node: a temporary root as ``FM_ROOT`` with the stubbed commands of
:mod:`tests.hyperpod_node` first on ``PATH``. Stubs stand in only for what this machine cannot
have: the Lustre client's kernel modules and tools (``modprobe``, ``modinfo``, ``lnetctl``), the
node's network (``ip``), systemd as PID 1 (``systemctl``) and Amazon Linux's ``dnf``. What the
scripts rely on from them, and where it is written:

- ``lnetctl net add --net efa --if <device> --peer-credits 32``, ``lnetctl set discovery 1``,
  ``lnetctl udsp add --src efa --priority 0`` after ``modprobe kefalnd ipif_name=<primary>``
  and a ``tcp`` net on the primary interface: the FSx for Lustre guide, "Configuring EFA
  clients" (configure-efa-clients.html), and the EKS guide's EFA tuning page
  (awsdocs/amazon-eks-user-guide, latest/ug/storage/fsx-csi-tuning-efa.adoc); the guide's
  default interface counts (8 on p5.48xlarge) and its 1,024 EFA connections per file system.
- The Lustre client (``lnetctl``) on AL2023 EKS nodes comes from ``dnf install -y
  lustre-client`` in launch-template user data (latest/ug/storage/fsx-csi-tuning-non-efa.adoc);
  the EKS-optimized AL2023 AMI does not install it (awslabs/amazon-eks-ami v20260724: no
  ``lustre`` under templates/al2023).
- cloud-init runs the shell parts in cloud-final.service, and ``nodeadm-run.service``, which
  starts kubelet, runs ``After=cloud-final.service`` (amazon-eks-ami v20260724,
  templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service): the part and the
  unit ordered ``Before=nodeadm-run.service kubelet.service`` have run before any pod, so
  before the FSx CSI driver mounts. The driver's EFA notes say the same: the node's EFA set-up
  goes before bootstrap (kubernetes-sigs/aws-fsx-csi-driver v1.9.0,
  examples/kubernetes/dynamic_provisioning/README.md, "preBootstrapCommands").

The unit itself is checked by the real ``systemd-analyze verify``.
"""

from __future__ import annotations

import email
import os
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.compute.user_data import (
    MIME_BOUNDARY,
    SHELL_SCRIPT_PART,
    UserDataMode,
    append_shell_part,
    lnet_efa_boot_script,
    mime_multipart,
    render_user_data,
)
from fm_constructs.orchestration import lustre_efa_client
from fm_constructs.orchestration.pcs.user_data import USER_DATA_MAX_BYTES, lnet_efa_interfaces
from fm_constructs.orchestration.slurm.parameters import scripts_directory
from tests.hyperpod_node import STUB, install_stub_commands, install_systemd_units

#: The commands the node's PATH has first (lnetctl only once the Lustre client is in).
COMMANDS = ("systemctl", "modprobe", "modinfo", "ip", "dnf", "lctl")
#: Units of the EKS node the boot unit is ordered against (stand-ins, for systemd-analyze).
NODE_UNITS = ("kubelet.service", "nodeadm-run.service", "containerd.service")


@dataclass
class Run:
    returncode: int
    output: str
    calls: list[str]


class EksNode:
    """A simulated AL2023 EKS node under ``tmp_path`` (``root`` is its file system)."""

    def __init__(
        self, tmp_path: Path, *, efa_devices: int, kefalnd: bool = True, lustre_client: bool = False
    ) -> None:
        self.root = tmp_path / "root"
        self.sim = self.root / "sim"
        install_stub_commands(
            self.root, STUB, (*COMMANDS, *(("lnetctl",) if lustre_client else ()))
        )
        install_systemd_units(self.root, NODE_UNITS)
        self.sim.mkdir()
        (self.sim / "route-ip").write_text("10.1.4.20")
        if kefalnd:
            (self.sim / "kefalnd").touch()
        for index in range(efa_devices):
            (self.root / "sys" / "class" / "infiniband" / f"rdmap{index:02d}s0").mkdir(parents=True)

    def run(self, *command: str) -> Run:
        calls = self.sim / "calls.log"
        calls.unlink(missing_ok=True)
        result = subprocess.run(
            ["bash", *command],
            env={
                "PATH": f"{self.root / 'usr' / 'bin'}:{os.environ['PATH']}",
                "FM_ROOT": str(self.root),
                "HOME": str(self.root),
                "LANG": "C.UTF-8",
            },
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return Run(
            result.returncode,
            result.stdout + result.stderr,
            calls.read_text().splitlines() if calls.exists() else [],
        )

    def run_user_data(self, user_data: str) -> Run:
        """Every shell part of ``user_data``, in order, as cloud-init runs them."""
        message = email.message_from_string(user_data)
        assert message.is_multipart()
        out = Run(0, "", [])
        for index, part in enumerate(message.walk()):
            if part.get_content_type() != "text/x-shellscript":
                continue
            script = self.root / "tmp" / f"part-{index}.sh"
            script.parent.mkdir(parents=True, exist_ok=True)
            script.write_text(str(part.get_payload()))
            run = self.run(str(script))
            out = Run(run.returncode, out.output + run.output, out.calls + run.calls)
            if run.returncode:
                break
        return out

    def run_unit(self, name: str) -> Run:
        """What the unit ``name`` runs at boot: its ExecStart, under this root."""
        unit = self.file(f"etc/systemd/system/{name}")
        exec_start = next(
            line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart=")
        )
        script, *args = exec_start.split()
        return self.run(str(self.root / script.lstrip("/")), *args)

    def file(self, path: str) -> str:
        return (self.root / path).read_text()

    def exists(self, path: str) -> bool:
        return (self.root / path).exists()


def eks_user_data(instance_type: str, interfaces: int) -> str:
    """A p5-like EKS node's user data (nodeadm NodeConfig with RAID0) and the LNet part, as
    :meth:`EfaNodeGroup.use_lnet_over_efa` writes it."""
    base = render_user_data(UserDataMode.EKS_NODEADM, raid0=True, max_pods=110)
    return append_shell_part(base, lustre_efa_client.setup_script(instance_type, interfaces))


def efa_adds(calls: list[str]) -> list[str]:
    return [
        c.split("--if ")[1].split()[0] for c in calls if c.startswith("lnetctl net add --net efa")
    ]


# ------------------------------------------------------------------------------ the document


def test_the_lnet_part_follows_the_nodeadm_config_in_one_mime_document() -> None:
    user_data = eks_user_data("p5.48xlarge", 8)
    message = email.message_from_string(user_data)
    types = [part.get_content_type() for part in message.walk() if not part.is_multipart()]
    assert types == ["application/node.eks.aws", "text/x-shellscript"]
    # Appending a part is the document mime_multipart makes with both parts.
    base = render_user_data(UserDataMode.EKS_NODEADM, raid0=True, max_pods=110)
    assert base is not None
    node_config = str(
        next(
            p for p in email.message_from_string(base).walk() if not p.is_multipart()
        ).get_payload()
    )
    script = lustre_efa_client.setup_script("p5.48xlarge", 8)
    assert user_data == mime_multipart(
        [("application/node.eks.aws", node_config), (SHELL_SCRIPT_PART, script)]
    )
    assert user_data.count(f"--{MIME_BOUNDARY}--") == 1
    # Within what EC2 takes as user data.
    assert len(user_data.encode()) < USER_DATA_MAX_BYTES
    # Without a document to extend, the part is a document of its own; shell user data is not
    # a MIME document and is refused.
    assert email.message_from_string(append_shell_part(None, "echo hi\n")).is_multipart()
    with pytest.raises(ValueError, match="not a MIME multipart"):
        append_shell_part("#!/bin/bash\necho hi\n", "echo again\n")


def test_the_node_runs_the_slurm_nodes_lnet_script_not_a_copy(tmp_path: Path) -> None:
    node = EksNode(tmp_path, efa_devices=32)
    run = node.run_user_data(eks_user_data("p5.48xlarge", 8))
    assert run.returncode == 0, run.output
    shipped = (scripts_directory() / "lnet_efa.sh").read_text()
    assert node.file("usr/local/sbin/fm-lnet-efa") == shipped
    assert node.file("usr/local/sbin/fm-lnet-efa-boot") == lnet_efa_boot_script()
    for script in ("fm-lnet-efa", "fm-lnet-efa-boot"):
        assert os.access(node.root / "usr/local/sbin" / script, os.X_OK)


# ------------------------------------------------------------------------------ at boot


def test_lnet_is_on_efa_before_kubelet_at_every_boot(tmp_path: Path) -> None:
    node = EksNode(tmp_path, efa_devices=32)
    run = node.run_user_data(eks_user_data("p5.48xlarge", 8))
    assert run.returncode == 0, run.output
    unit = node.file("etc/systemd/system/fm-lnet-efa.service")
    assert "Before=nodeadm-run.service kubelet.service" in unit
    assert "After=network-online.target" in unit and "Wants=network-online.target" in unit
    assert "WantedBy=multi-user.target" in unit
    assert "ExecStart=/usr/local/sbin/fm-lnet-efa-boot p5.48xlarge 8" in unit
    # Enabled for every later boot and started now, from the user data (first boot).
    assert "systemctl enable --now fm-lnet-efa.service" in run.calls
    verify = subprocess.run(
        ["systemd-analyze", "verify", f"--root={node.root}", "--man=no", "fm-lnet-efa.service"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr
    # What the unit runs at boot: the Lustre client first (the AMI has none), then LNet as the
    # FSx guide sets it up for p5: tcp on the primary interface, efa on every fourth of the
    # 32 EFA devices, discovery on, EFA preferred.
    boot = node.run_unit("fm-lnet-efa.service")
    assert boot.returncode == 0, boot.output
    # The client, never a new kernel with it.
    assert boot.calls[0] == "dnf install -y --exclude=kernel* lustre-client"
    assert "modprobe kefalnd ipif_name=ens5" in boot.calls
    assert "lnetctl net add --net tcp --if ens5" in boot.calls
    assert efa_adds(boot.calls) == [f"rdmap{i:02d}s0" for i in range(0, 32, 4)]
    assert all("--peer-credits 32" in c for c in boot.calls if "--net efa" in c and "add" in c)
    assert boot.calls[-2:] == ["lnetctl set discovery 1", "lnetctl udsp add --src efa --priority 0"]
    # At the next boot the client is there: no second install.
    again = node.run_unit("fm-lnet-efa.service")
    assert again.returncode == 0, again.output
    assert not any(c.startswith("dnf") for c in again.calls)
    assert len(efa_adds(again.calls)) == 8


def test_a_node_without_efa_devices_or_efa_lnd_stays_on_tcp_and_says_so(tmp_path: Path) -> None:
    no_lnd = EksNode(tmp_path / "lnd", efa_devices=16, kefalnd=False, lustre_client=True)
    script = str(no_lnd.root / "boot.sh")
    Path(script).write_text(lnet_efa_boot_script())
    run = no_lnd.run(script, "p5en.48xlarge", "8")
    assert run.returncode == 0, run.output
    assert "no EFA LND (kefalnd); Lustre stays on TCP" in run.output
    assert not any(c.startswith(("lnetctl", "modprobe")) for c in run.calls)
    no_efa = EksNode(tmp_path / "efa", efa_devices=0, lustre_client=True)
    Path(no_efa.root / "boot.sh").write_text(lnet_efa_boot_script())
    run = no_efa.run(str(no_efa.root / "boot.sh"), "g6e.48xlarge", "2")
    assert run.returncode == 0, run.output
    assert "no EFA device on this node; Lustre stays on TCP" in run.output
    assert not any(c.startswith(("lnetctl", "modprobe")) for c in run.calls)


def test_a_failed_client_install_fails_the_unit_without_touching_lnet(tmp_path: Path) -> None:
    node = EksNode(tmp_path, efa_devices=8)
    (node.sim / "offline").touch()
    Path(node.root / "boot.sh").write_text(lnet_efa_boot_script())
    run = node.run(str(node.root / "boot.sh"), "p6-b200.48xlarge", "8")
    assert run.returncode == 1
    assert "could not install lustre-client; Lustre stays on TCP" in run.output
    assert not any(c.startswith(("lnetctl", "modprobe")) for c in run.calls)


@pytest.mark.parametrize(
    ("instance_type", "clients", "expected"),
    [
        ("p5.48xlarge", 2, 8),  # the FSx guide's table
        ("p6-b300.48xlarge", None, 16),
        ("g6e.48xlarge", 10, 2),  # several network cards
        ("p5.48xlarge", 200, 5),  # 1,024 connections over 200 nodes
        ("p5.48xlarge", 4096, 1),  # never below one
    ],
)
def test_interfaces_follow_the_fsx_table_within_the_connections(
    instance_type: str, clients: int | None, expected: int
) -> None:
    assert lnet_efa_interfaces(get_instance_type(instance_type), clients) == expected


def test_the_scripts_are_shellcheck_clean() -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    scripts = [
        str(resources.files("fm_constructs.compute") / "scripts" / "lnet_efa_boot.sh"),
        str(scripts_directory() / "lnet_efa.sh"),
    ]
    result = subprocess.run(["shellcheck", *scripts], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout
    # The user-data part as the node gets it.
    part = lustre_efa_client.setup_script("p5.48xlarge", 8)
    result = subprocess.run(
        ["shellcheck", "-s", "bash", "-"], input=part, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout
