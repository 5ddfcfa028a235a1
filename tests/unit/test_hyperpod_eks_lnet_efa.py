"""HyperPod EKS nodes of an EFA-enabled FSx for Lustre file system configure LNet over EFA in
OnCreate, before kubelet mounts the file system: the real ``on_create.sh``, ``lnet_efa_eks.sh``,
``lnet_efa.sh`` and ``lnet_efa_boot.sh`` in a simulated node (tests/hyperpod_node.py), whose
stubs stand only for what this machine cannot have (``lnetctl``, ``modprobe``, ``modinfo``,
``dnf``, systemd as PID 1, the EFA devices), and the provisioning parameters and lifecycle
files they read.

What the scripts are held to (FSx for Lustre guide, "Configuring EFA clients",
configure-efa-clients.html): an efa network on the EFA devices, discovery on and EFA preferred
before the file system is mounted (a mount made before stays on TCP), the Lustre client from
``dnf`` when the AMI lacks it, as on EKS node groups. The node's instance group is found in
HyperPod's resource configuration (``/opt/ml/config/resource_config.json``, the file HyperPod
writes from the CreateCluster request, read as the Slurm nodes read it).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.compute.user_data import lnet_efa_boot_script
from fm_constructs.orchestration.hyperpod import (
    InstanceGroup,
    Orchestrator,
    provisioning_parameters,
    scripts_directory,
)
from fm_constructs.orchestration.hyperpod.lifecycle import LNET_EFA_BOOT, lifecycle_files
from tests.hyperpod_node import SimulatedNode

pytestmark = pytest.mark.e2e

NODE_IP = "10.1.4.20"
FSX = {
    "dns_name": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
    "mount_name": "abcdefgh",
    "mount_point": "/fsx",
    "efa_enabled": True,
    "shared_directories": [],
}


def resource_config(*groups: tuple[str, str]) -> dict[str, Any]:
    """HyperPod's resource configuration with one instance per (group, address)."""
    return {
        "InstanceGroups": [
            {"Name": name, "Instances": [{"InstanceName": f"i-{n}", "CustomerIpAddress": ip}]}
            for n, (name, ip) in enumerate(groups)
        ]
    }


RESOURCE_CONFIG = resource_config(("workers", NODE_IP), ("small", "10.1.4.21"))
LNET_UNIT = "etc/systemd/system/fm-lnet-efa.service"


def eks_params(*, efa_enabled: bool = True, efa_clients: int | None = None) -> dict[str, Any]:
    return provisioning_parameters(
        orchestrator=Orchestrator.EKS,
        cluster_name="fm-eks",
        region="us-east-1",
        instance_groups=[
            InstanceGroup(name="workers", instance_type="p5.48xlarge", instance_count=2),
            InstanceGroup(name="small", instance_type="p4d.24xlarge", instance_count=1),
        ],
        fsx={**FSX, "efa_enabled": efa_enabled},
        efa_clients=efa_clients,
    )


def eks_node(tmp_path: Path, **options: Any) -> SimulatedNode:
    settings: dict[str, Any] = {"resource_config": RESOURCE_CONFIG, "efa_devices": 32}
    settings.update(options)
    params = settings.pop("params", None) or eks_params()
    return SimulatedNode(tmp_path, params=params, address=NODE_IP, slurm=False, **settings)


def efa_interfaces(calls: list[str]) -> list[str]:
    added = [c for c in calls if c.startswith("lnetctl net add --net efa")]
    return [c.split("--if ")[1].split()[0] for c in added]


def test_parameters_give_each_eks_group_its_lnet_interfaces_within_the_connections() -> None:
    params = eks_params()
    groups = {g["instance_group_name"]: g for g in params["worker_groups"]}
    # The FSx guide's figure for the type (p5: 8; p4d, several cards: 2), under 1024 / 3 nodes.
    assert groups["workers"]["lnet_efa_interfaces"] == 8
    assert groups["small"]["lnet_efa_interfaces"] == 2
    # Every EFA node FM316 counts on the file system shares its 1,024 connections.
    shared = {g["instance_group_name"]: g for g in eks_params(efa_clients=300)["worker_groups"]}
    assert shared["workers"]["lnet_efa_interfaces"] == 3
    assert shared["small"]["lnet_efa_interfaces"] == 2
    plain = eks_params(efa_enabled=False)
    assert all("lnet_efa_interfaces" not in g for g in plain["worker_groups"])


def test_trn2_groups_stay_on_tcp_as_eks_node_groups_do(tmp_path: Path) -> None:
    """FSx supports EFA clients "excluding the trn2 instance family" (FSx for Lustre guide,
    "Configuring EFA clients")."""
    params = provisioning_parameters(
        orchestrator=Orchestrator.EKS,
        cluster_name="fm-eks",
        region="us-east-1",
        instance_groups=[
            InstanceGroup(name="trn", instance_type="trn2.48xlarge", instance_count=2)
        ],
        fsx=FSX,
    )
    assert params["worker_groups"][0]["lnet_efa_interfaces"] == 0
    config = resource_config(("trn", NODE_IP))
    sim = eks_node(tmp_path, params=params, resource_config=config, efa_devices=16)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "Lustre stays on TCP" in run.output
    assert not any(c.startswith(("lnetctl", "modprobe")) for c in run.calls)
    assert not sim.exists(LNET_UNIT)


def test_only_hyperpod_eks_nodes_of_an_efa_file_system_get_the_boot_script() -> None:
    assert lifecycle_files(eks_params()) == {LNET_EFA_BOOT: lnet_efa_boot_script()}
    assert lifecycle_files(eks_params(efa_enabled=False)) == {}
    slurm = {**eks_params(), "workload_manager": "slurm"}
    assert lifecycle_files(slurm) == {}
    # The node scripts hold no copy of it: one file, in compute/scripts.
    assert not (scripts_directory() / LNET_EFA_BOOT).exists()


def test_eks_node_configures_lnet_over_efa_before_kubelet(tmp_path: Path) -> None:
    sim = eks_node(tmp_path)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "on_create: group=workers" in run.output
    # The same scripts EKS node groups and Slurm nodes run, not copies.
    lnet_script = (scripts_directory() / "lnet_efa.sh").read_text()
    assert sim.file("usr/local/sbin/fm-lnet-efa") == lnet_script
    assert sim.file("usr/local/sbin/fm-lnet-efa-boot") == lnet_efa_boot_script()
    unit = sim.file(LNET_UNIT)
    assert "Before=nodeadm-run.service kubelet.service" in unit
    assert "ExecStart=/usr/local/sbin/fm-lnet-efa-boot ml.p5.48xlarge 8" in unit
    assert "fm-lnet-efa.service" in sim.enabled
    # LNet now: tcp on the primary interface, 8 of the 32 EFA devices spread evenly, discovery
    # on and EFA preferred, after containerd and kubelet state moved to the extra volume.
    assert "lnetctl net add --net tcp --if ens5" in run.calls
    assert efa_interfaces(run.calls) == [f"rdmap{i:02d}s0" for i in range(0, 32, 4)]
    assert run.calls[-2:] == ["lnetctl set discovery 1", "lnetctl udsp add --src efa --priority 0"]
    storage = run.calls.index("systemctl start var-lib-containerd.mount var-lib-kubelet.mount")
    assert storage < run.calls.index("lnetctl lnet configure")
    # No host mount of the file system: pods mount it through the CSI driver.
    assert not any(c.startswith("mount ") for c in run.calls)
    # The boot unit runs the same set-up at every later boot.
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    script, *args = exec_start.removeprefix("ExecStart=").split()
    boot = sim.run(str(sim.root / script.lstrip("/")), *args)
    assert boot.returncode == 0, boot.output
    assert len(efa_interfaces(boot.calls)) == 8
    if shutil.which("systemd-analyze") is not None:
        result = sim.verify_units()
        problems = [
            line
            for line in result.stderr.splitlines()
            if not line.startswith("Failed to resolve symlink")
        ]
        assert result.returncode == 0 and not problems, "\n".join(problems)


def test_a_running_kubelet_waits_for_lnet_and_earlier_mounts_are_named(tmp_path: Path) -> None:
    sim = eks_node(tmp_path)
    (sim.sim / "active").mkdir()
    (sim.sim / "active" / "kubelet").touch()
    (sim.root / "proc").mkdir()
    (sim.root / "proc" / "mounts").write_text(
        "10.1.0.200@tcp:/abcdefgh /var/lib/kubelet/pods/p/volumes/fsx lustre rw 0 0\n"
    )
    run = sim.run()
    assert run.returncode == 0, run.output
    configure = run.calls.index("lnetctl lnet configure")
    # (node_storage.sh also stops and starts kubelet around its bind mounts, before.)
    stops = [i for i, c in enumerate(run.calls) if c == "systemctl stop kubelet"]
    starts = [i for i, c in enumerate(run.calls) if c == "systemctl start kubelet"]
    assert max(i for i in stops if i < configure) > max(i for i in starts if i < configure)
    assert any(i > configure for i in starts)
    assert "kubelet" in sim.active
    assert "Lustre already mounted at /var/lib/kubelet/pods/p/volumes/fsx" in run.output


def test_an_ami_without_the_lustre_client_gets_it_from_dnf_before_kubelet_is_held(
    tmp_path: Path,
) -> None:
    sim = eks_node(tmp_path, lustre_client=False)
    (sim.sim / "active").mkdir()
    (sim.sim / "active" / "kubelet").touch()
    run = sim.run()
    assert run.returncode == 0, run.output
    install = run.calls.index("dnf install -y --exclude=kernel* lustre-client")
    held = max(i for i, c in enumerate(run.calls) if c == "systemctl stop kubelet")
    # The install (minutes, maybe) runs with kubelet up; kubelet is held for LNet alone.
    assert install < held < run.calls.index("lnetctl lnet configure")
    assert run.calls.count("dnf install -y --exclude=kernel* lustre-client") == 1
    assert len(efa_interfaces(run.calls)) == 8


def test_a_failed_client_install_leaves_lustre_on_tcp_and_the_node_created(tmp_path: Path) -> None:
    sim = eks_node(tmp_path, lustre_client=False)
    sim.inject("offline")
    (sim.sim / "active").mkdir()
    (sim.sim / "active" / "kubelet").touch()
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "Lustre stays on TCP" in run.output
    assert not any(c.startswith("lnetctl") for c in run.calls)
    # Kubelet is not held for a client that is not there (node_storage.sh stops it before,
    # for its bind mounts), and the unit tries again at the next boot.
    install = run.calls.index("dnf install -y --exclude=kernel* lustre-client")
    assert "systemctl stop kubelet" not in run.calls[install:]
    assert "kubelet" in sim.active and "fm-lnet-efa.service" in sim.enabled


def test_a_node_without_efa_devices_stays_on_tcp(tmp_path: Path) -> None:
    sim = eks_node(tmp_path, efa_devices=0)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "no EFA device on this node; Lustre stays on TCP" in run.output
    assert not any(c.startswith(("lnetctl", "modprobe")) for c in run.calls)


@pytest.mark.parametrize(
    "config",
    [None, resource_config(("workers", "10.1.9.9"))],
    ids=["no-resource-config", "not-listed"],
)
def test_a_node_the_resource_config_does_not_name_takes_the_smallest_count(
    tmp_path: Path, config: dict[str, Any] | None
) -> None:
    sim = eks_node(tmp_path, resource_config=config)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "instance group is unknown" in run.output
    assert "ExecStart=/usr/local/sbin/fm-lnet-efa-boot unknown 2" in sim.file(LNET_UNIT)
    assert efa_interfaces(run.calls) == ["rdmap00s0", "rdmap31s0"]
    # Without the file there is nothing to look the node's addresses up in.
    assert any(c.startswith("ip -4 route get") for c in run.calls) == (config is not None)


def test_a_second_run_leaves_the_unit_as_it_is(tmp_path: Path) -> None:
    sim = eks_node(tmp_path)
    assert sim.run().returncode == 0
    unit = sim.file(LNET_UNIT)
    again = sim.run()
    assert again.returncode == 0, again.output
    assert sim.file(LNET_UNIT) == unit
    assert "systemctl daemon-reload" not in again.calls


def test_nodes_of_a_file_system_without_efa_are_unchanged(tmp_path: Path) -> None:
    sim = eks_node(tmp_path, params=eks_params(efa_enabled=False))
    run = sim.run()
    assert run.returncode == 0, run.output
    assert not (sim.scripts / LNET_EFA_BOOT).exists()
    assert not sim.exists(LNET_UNIT) and not sim.exists("usr/local/sbin/fm-lnet-efa")
    assert not any(c.startswith(("lnetctl", "modprobe", "ip -4 route get")) for c in run.calls)
