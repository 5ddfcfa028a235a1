"""fm-lnet-efa.service in the boot of an AL2023 EKS node: the real ``systemd-analyze verify``
builds the start transaction of ``multi-user.target`` with the unit enabled beside the units an
EKS node starts, ordered as upstream orders them, and finds no ordering cycle (one would make
systemd drop a job at boot: LNet, or nodeadm's kubelet start).

Verifying the unit alone against blank stand-ins cannot find a cycle: a unit's own start
transaction does not pull in the units it is only ordered against. The stand-ins here carry
the ordering and requirements of the real units, nothing else:

- ``nodeadm-config.service`` (``Before=cloud-init.service``,
  ``After=systemd-networkd-wait-online.service``) and ``nodeadm-run.service``
  (``After=nodeadm-config.service cloud-final.service``, ``Requires=nodeadm-config.service``),
  both enabled by the AMI build (``WantedBy=multi-user.target``); ``kubelet.service``
  (``After=containerd.service``, ``Wants=containerd.service``), not enabled: nodeadm-run
  restarts it at every boot. awslabs/amazon-eks-ami v20260724,
  templates/al2023/runtime/rootfs/etc/systemd/system/{nodeadm-config,nodeadm-run,kubelet}.service,
  templates/al2023/provisioners/install-nodeadm.sh, nodeadm/internal/kubelet/daemon.go.
- ``cloud-final.service`` (``After=network-online.target cloud-config.service``,
  ``Wants=network-online.target cloud-config.service``) and ``cloud-config.service``
  (``After=network-online.target``): canonical/cloud-init 22.2.2 (the AL2023 package),
  systemd/cloud-final.service.tmpl and cloud-config.service.tmpl, for a non-Debian variant.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from fm_constructs.orchestration import lustre_efa_client
from tests.hyperpod_node import install_systemd_units

pytestmark = pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed"
)

#: name -> ([Unit] lines, enabled in multi-user.target): the ordering of the module docstring.
NODE_UNITS: dict[str, tuple[tuple[str, ...], bool]] = {
    "nodeadm-config.service": (
        ("Before=cloud-init.service", "After=systemd-networkd-wait-online.service"),
        True,
    ),
    "nodeadm-run.service": (
        ("After=nodeadm-config.service cloud-final.service", "Requires=nodeadm-config.service"),
        True,
    ),
    "kubelet.service": (("After=containerd.service", "Wants=containerd.service"), False),
    "containerd.service": ((), False),
    "cloud-init.service": ((), True),
    "cloud-config.service": (("After=network-online.target",), True),
    "cloud-final.service": (
        (
            "After=network-online.target cloud-config.service",
            "Wants=network-online.target cloud-config.service",
        ),
        True,
    ),
}


def _node(root: Path, lnet_unit: str) -> None:
    """An EKS node's units under ``root``, with ``lnet_unit`` as fm-lnet-efa.service, enabled
    as the user-data part enables it."""
    install_systemd_units(root, ())
    system = root / "etc" / "systemd" / "system"
    wants = system / "multi-user.target.wants"
    wants.mkdir(parents=True)
    units = {
        name: ("[Unit]", f"Description=stand-in {name}", *ordering)
        for name, (ordering, _) in NODE_UNITS.items()
    }
    for name, lines in units.items():
        body = "\n".join(lines) + "\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n"
        (system / name).write_text(body)
    (system / lustre_efa_client.LNET_UNIT).write_text(lnet_unit)
    enabled = [name for name, (_, on) in NODE_UNITS.items() if on]
    for name in [*enabled, lustre_efa_client.LNET_UNIT]:
        (wants / name).symlink_to(f"../{name}")
    script = root / lustre_efa_client.BOOT_SCRIPT_PATH.lstrip("/")
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)


def _verify_boot(root: Path) -> str:
    result = subprocess.run(
        ["systemd-analyze", "verify", f"--root={root}", "--man=no", "multi-user.target"],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    return result.stdout + result.stderr


def test_the_boot_transaction_has_no_ordering_cycle(tmp_path: Path) -> None:
    _node(tmp_path, lustre_efa_client.lnet_unit("p5.48xlarge", 8))
    output = _verify_boot(tmp_path)
    assert "ordering cycle" not in output, output
    assert "deleted to break" not in output, output


def test_a_unit_ordered_after_nodeadm_run_is_found_in_a_cycle(tmp_path: Path) -> None:
    """The check above can fail: the same unit also ordered after nodeadm-run.service (which
    it must precede) is a cycle systemd breaks by deleting a job."""
    unit = lustre_efa_client.lnet_unit("p5.48xlarge", 8).replace(
        "After=network-online.target\n", "After=network-online.target nodeadm-run.service\n"
    )
    _node(tmp_path, unit)
    output = _verify_boot(tmp_path)
    assert "Found ordering cycle" in output, output
