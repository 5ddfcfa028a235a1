"""The user data of AWS PCS nodes, run in a simulated node (tests/hyperpod_node.py): the MIME
parts in the order PCS runs them (cloud-config before registration, the shell part after it
and before slurmd), the wrapper fetching the shared HyperPod Slurm lifecycle scripts from S3,
the NVMe volume, FSx for Lustre at /fsx (LNet over EFA on an EFA file system), containers on
the NVMe with pyxis against the PCS Slurm prefix; a fetch that fails stops the node."""

from __future__ import annotations

import base64
import email
import email.message
import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fm_constructs import pins
from fm_constructs.catalog import get_instance_type
from fm_constructs.orchestration.hyperpod import scripts_directory
from fm_constructs.orchestration.pcs.user_data import (
    NODE_SCRIPTS_DIR,
    job_hook_settings,
    node_parameters,
    pcs_user_data,
    plugstack_file,
    wrapper_path,
)
from tests.hyperpod_node import SimulatedNode

#: The PCS node script runs whole in a simulated node: the end-to-end stage (make e2e, run by
#: .ci/run after make test).
pytestmark = pytest.mark.e2e

BUCKET, PREFIX = "fm-node-scripts", "hyperpod-lifecycle/abc123/"
SCRIPTS_URI = f"s3://{BUCKET}/{PREFIX}"
SLURM_VERSION = pins.pcs().slurm_version
SLURM_PREFIX = f"/opt/aws/pcs/scheduler/slurm-{SLURM_VERSION}"
#: Where the PCS user guide ("Configure SPANK plugins on AWS PCS") has a node keep its SPANK
#: configuration: the controller's plugstack.conf includes this directory.
PLUGSTACK = f"/etc/aws/pcs/scheduler/slurm-{SLURM_VERSION}/plugstack.conf.d/pyxis.conf"
#: `aws s3 cp --recursive s3://<bucket>/<prefix> <dir>` from a local directory standing in for
#: S3 (FAKE_S3/<bucket>/<prefix>), recording the call like the node's other stubs.
AWS_STUB = r"""#!/bin/bash
echo "aws $*" >> "${FM_ROOT}/sim/calls.log"
[[ "$1 $2" == "s3 cp" && " $* " == *" --recursive "* ]] || exit 0
args=("$@")
source="${args[-2]#s3://}"
[[ -d "${FAKE_S3}/${source}" ]] || { echo "fatal error: NoSuchBucket" >&2; exit 1; }
cp -r "${FAKE_S3}/${source}." "${args[-1]}"
"""


def _parts(user_data: str) -> list[tuple[str, str]]:
    message = email.message_from_string(user_data)
    assert message.is_multipart()
    parts = []
    for part in message.get_payload():
        assert isinstance(part, email.message.Message)
        payload = part.get_payload()
        assert isinstance(payload, str)
        parts.append((part.get_content_type(), payload))
    return parts


def _params(efa_fs: bool) -> dict[str, Any]:
    return node_parameters(
        node_groups=[("accelerated", get_instance_type("p5.48xlarge"))],
        fsx={
            "dns_name": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            "mount_name": "abcdefgh",
            "mount_point": "/fsx",
            "efa_enabled": efa_fs,
        },
        efa_clients=4,
    )


def _node(
    tmp_path: Path, params: dict[str, Any], efa_devices: int, **options: Any
) -> SimulatedNode:
    # The simulated node serves the pinned downloads its scripts fetch (enroot, pyxis).
    served = {
        **params,
        "node_exporter_version": pins.binary("node_exporter").version,
        "prometheus_version": pins.binary("prometheus").version,
        "slurm_exporter_version": pins.binary("slurm_exporter").version,
    }
    node = SimulatedNode(
        tmp_path,
        params=served,
        resource_config=None,
        address="10.1.4.20",
        efa_devices=efa_devices,
        **options,
    )
    (node.root / SLURM_PREFIX.lstrip("/") / "include").mkdir(parents=True)
    # The S3 prefix as LifecycleScripts deploys it: the HyperPod scripts and the parameters.
    prefix = tmp_path / "s3" / BUCKET / PREFIX
    shutil.copytree(scripts_directory(), prefix, ignore=shutil.ignore_patterns("__*"))
    # With the digests and source trees of the stand-ins the node serves pinned, as the library
    # pins the real releases' (the scripts refuse a download without a pin).
    pinned = {
        **params,
        "download_sha256": dict(node.pinned),
        "source_git_tree": dict(node.trees),
    }
    (prefix / "provisioning_parameters.json").write_text(json.dumps(pinned))
    stubs = tmp_path / "aws-stub"
    stubs.mkdir()
    (stubs / "aws").write_text(AWS_STUB)
    (stubs / "aws").chmod(0o755)
    return node


def _boot(
    tmp_path: Path, node: SimulatedNode, user_data: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """What cloud-init does with the two parts, in order, under the node's root."""
    (config_type, config), (shell_type, shell) = _parts(user_data)
    assert (config_type, shell_type) == ("text/cloud-config", "text/x-shellscript")
    document = yaml.safe_load(config)
    for entry in document["write_files"]:
        assert entry["encoding"] == "gz+b64"
        path = node.root / entry["path"].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.decompress(base64.b64decode(entry["content"])))
        path.chmod(int(entry["permissions"], 8))
    script = tmp_path / "part-002.sh"
    script.write_text(shell)
    (node.root / "tmp").mkdir(exist_ok=True)
    return subprocess.run(
        ["bash", str(script)],
        env={
            "PATH": f"{tmp_path / 'aws-stub'}:{node.root / 'usr' / 'bin'}:{os.environ['PATH']}",
            "FM_ROOT": str(node.root),
            "HOME": str(node.root),
            "TMPDIR": str(node.root / "tmp"),
            "LANG": "C.UTF-8",
            "FAKE_S3": str(tmp_path / "s3"),
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _calls(node: SimulatedNode) -> list[str]:
    return (node.sim / "calls.log").read_text().splitlines()


def test_cloud_config_writes_the_wrapper_and_the_shell_part_runs_it_last() -> None:
    user_data = pcs_user_data("compute", "accelerated", SCRIPTS_URI, nvme_disks=8)
    (config_type, config), (shell_type, shell) = _parts(user_data)
    assert config_type == "text/cloud-config" and shell_type == "text/x-shellscript"
    (entry,) = yaml.safe_load(config)["write_files"]
    assert entry["path"] == f"{NODE_SCRIPTS_DIR}/pcs_node.sh"
    assert gzip.decompress(base64.b64decode(entry["content"])) == wrapper_path().read_bytes()
    lines = shell.strip().splitlines()
    assert lines[-1] == (
        f'bash "${{FM_ROOT:-}}{NODE_SCRIPTS_DIR}/pcs_node.sh" compute accelerated "{SCRIPTS_URI}"'
    )
    assert shell.index("fm-nvme-raid0.service") < shell.index("pcs_node.sh")
    assert len(user_data.encode()) < 16 * 1024


def test_compute_node_mounts_fsx_over_efa_and_puts_containers_on_the_nvme(
    tmp_path: Path,
) -> None:
    params = _params(efa_fs=True)
    node = _node(tmp_path, params, efa_devices=32)
    user_data = pcs_user_data("compute", "accelerated", SCRIPTS_URI, nvme_disks=8)
    result = _boot(tmp_path, node, user_data)
    assert result.returncode == 0, result.stdout + result.stderr
    calls = _calls(node)
    fetch = calls.index(
        f"aws s3 cp --recursive --only-show-errors {SCRIPTS_URI} {node.root}{NODE_SCRIPTS_DIR}/"
    )
    first_mount = next(i for i, c in enumerate(calls) if c.startswith("mount -t lustre"))
    assert fetch < first_mount
    assert "fm-nvme-raid0.service" in node.enabled
    assert "/fsx" in node.mounts
    fstab = node.file("etc/fstab")
    assert "abcdefgh /fsx lustre" in fstab and "fm-lnet-efa.service" in fstab
    # LNet over EFA on the FSx guide's 8 interfaces for p5 (of its 32 EFA devices).
    assert sum("lnetctl net add --net efa" in c for c in calls) == 8
    assert node.exists("etc/profile.d/fm-nccl-efa.sh")
    enroot = node.file("etc/enroot/enroot.conf")
    assert "ENROOT_CACHE_PATH /opt/dlami/nvme/enroot" in enroot
    assert node.exists("usr/local/lib/slurm/spank_pyxis.so")
    # The pyxis line in the node-local SPANK directory the PCS controller's plugstack.conf
    # includes, not under the Slurm prefix (which configless slurmd never reads).
    assert node.file(PLUGSTACK.lstrip("/")) == "optional /usr/local/lib/slurm/spank_pyxis.so\n"
    assert not node.exists(f"{SLURM_PREFIX.lstrip('/')}/etc/plugstack.conf")
    log = node.file("var/log/fm-provision/pcs_node.log")
    assert "compute node of accelerated (p5.48xlarge)" in log and "pcs_node: done" in log


def test_tcp_file_system_mounts_without_lnet_over_efa(tmp_path: Path) -> None:
    node = _node(tmp_path, _params(efa_fs=False), efa_devices=32)
    result = _boot(
        tmp_path, node, pcs_user_data("compute", "accelerated", SCRIPTS_URI, nvme_disks=8)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert not any("lnetctl net add --net efa" in c for c in _calls(node))
    assert "/fsx" in node.mounts


def test_a_second_boot_leaves_one_fstab_entry(tmp_path: Path) -> None:
    node = _node(tmp_path, _params(efa_fs=False), efa_devices=0)
    user_data = pcs_user_data("compute", "accelerated", SCRIPTS_URI, nvme_disks=8)
    for _ in range(2):
        result = _boot(tmp_path, node, user_data)
        assert result.returncode == 0, result.stdout + result.stderr
    assert node.file("etc/fstab").count(" /fsx lustre ") == 1


@pytest.mark.parametrize("group", ["accelerated", "nonexistent"])
def test_a_node_whose_scripts_cannot_be_fetched_fails_before_slurmd(
    tmp_path: Path, group: str
) -> None:
    node = _node(tmp_path, _params(efa_fs=False), efa_devices=0)
    uri = "s3://missing-bucket/x/" if group == "accelerated" else SCRIPTS_URI
    result = _boot(
        tmp_path, node, pcs_user_data("compute", group, uri, nvme_disks=0), {"FETCH_ATTEMPTS": "2"}
    )
    assert result.returncode != 0
    assert "/fsx" not in node.mounts
    text = result.stdout + result.stderr
    assert (
        ("cannot fetch the node scripts" in text)
        if group == "accelerated"
        else ("no node group nonexistent" in text)
    )


def test_the_wrapper_is_shellcheck_clean() -> None:
    if shutil.which("shellcheck") is None:
        pytest.skip("shellcheck is not installed")
    shared = scripts_directory()
    result = subprocess.run(
        ["shellcheck", "-x", "-P", str(shared), str(wrapper_path())],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout


def test_the_plugstack_file_is_the_one_the_pcs_guide_names() -> None:
    assert plugstack_file(SLURM_VERSION) == PLUGSTACK


def _fake_nvidia_smi(node: SimulatedNode, output: str) -> None:
    fake = node.root / "usr" / "bin" / "nvidia-smi"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(f"#!/usr/bin/env bash\nprintf '%s' '{output}'\n")
    fake.chmod(0o755)


@pytest.mark.parametrize(
    ("gpus", "refusal"),
    [
        ("".join(f"{i}, No\n" for i in range(8)), None),
        ("".join(f"{i}, No\n" for i in range(7)), "7 of 8 GPUs visible"),
        ("0, No\n1, Yes\n" + "".join(f"{i}, No\n" for i in range(2, 8)), "GPU 1"),
    ],
    ids=["healthy", "gpu-missing", "row-remap-failed"],
)
def test_compute_node_installs_the_hyperpod_prolog_where_the_cluster_settings_name_it(
    tmp_path: Path, gpus: str, refusal: str | None
) -> None:
    node = _node(tmp_path, _params(efa_fs=False), efa_devices=0)
    result = _boot(
        tmp_path, node, pcs_user_data("compute", "accelerated", SCRIPTS_URI, nvme_disks=0)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    settings = job_hook_settings(SLURM_VERSION)
    assert settings == {
        "Prolog": f"{SLURM_PREFIX}/etc/scripts/fm-prolog.sh",
        "Epilog": f"{SLURM_PREFIX}/etc/scripts/fm-epilog.sh",
    }
    hooks = node.root / SLURM_PREFIX.lstrip("/") / "etc" / "scripts"
    shared = scripts_directory() / "slurm_hooks"
    assert (hooks / "fm-prolog.sh").read_bytes() == (shared / "prolog.sh").read_bytes()
    assert (hooks / "fm-epilog.sh").read_bytes() == (shared / "epilog.sh").read_bytes()
    for path in settings.values():
        assert (node.root / path.lstrip("/")).stat().st_mode & 0o111
    # The p5.48xlarge group's 8 GPUs, from the parameters; the prolog finds the file beside it.
    assert (hooks / "fm-node.env").read_text() == "EXPECTED_GPUS=8\n"
    # What slurmd does before the node's first job: run the cluster's Prolog.
    _fake_nvidia_smi(node, gpus)
    run = node.run(
        str(node.root / settings["Prolog"].lstrip("/")),
        env={"SLURM_JOB_ID": "7", "SLURM_JOB_GPUS": "0,3"},
    )
    if refusal is None:
        assert run.returncode == 0, run.output
        assert node.file("run/fm-dcgm-jobs/0") == "7\n" == node.file("run/fm-dcgm-jobs/3")
    else:
        assert run.returncode != 0  # slurmd drains the node and requeues the job
        assert refusal in node.file("var/log/slurm/fm-prolog.log")
        assert not node.exists("run/fm-dcgm-jobs/0")


def test_login_node_installs_no_job_hooks(tmp_path: Path) -> None:
    params = node_parameters(node_groups=[("login", get_instance_type("p5.48xlarge"))], fsx=None)
    node = _node(tmp_path, params, efa_devices=0)
    result = _boot(tmp_path, node, pcs_user_data("login", "login", SCRIPTS_URI, nvme_disks=0))
    assert result.returncode == 0, result.stdout + result.stderr
    assert not node.exists(f"{SLURM_PREFIX.lstrip('/')}/etc/scripts/fm-prolog.sh")
    # srun on the login node reads the same node-local SPANK file (through sackd).
    assert "spank_pyxis.so" in node.file(PLUGSTACK.lstrip("/"))


def test_login_node_puts_the_job_scripts_on_fsx(tmp_path: Path) -> None:
    params = node_parameters(
        node_groups=[("login", get_instance_type("p5.48xlarge"))],
        fsx={
            "dns_name": "fs-1.fsx",
            "mount_name": "abc",
            "mount_point": "/fsx",
            "efa_enabled": False,
        },
    )
    node = _node(tmp_path, params, efa_devices=0)
    (node.root / "fsx").mkdir(exist_ok=True)
    result = _boot(tmp_path, node, pcs_user_data("login", "login", SCRIPTS_URI, nvme_disks=0))
    assert result.returncode == 0, result.stdout + result.stderr
    assert node.exists("fsx/fm-jobs/nccl-tests.sbatch")
    assert node.exists("fsx/fm-jobs/torchrun.sbatch")


REMOTE_WRITE = "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"


def _metrics_params() -> dict[str, Any]:
    return node_parameters(
        node_groups=[
            ("accelerated", get_instance_type("p5.48xlarge")),
            ("login", get_instance_type("p5.48xlarge")),
        ],
        fsx=None,
        cluster_name="fm-pcs-cluster",
        region="us-east-1",
        workload="pretraining",
        prometheus_remote_write_url=REMOTE_WRITE,
    )


def _run_metrics_installer(node: SimulatedNode, env: dict[str, str]) -> Any:
    """What fm-metrics-install.service runs (its ExecStart under the node's root), with the
    environment its drop-ins give it."""
    unit = node.file("etc/systemd/system/fm-metrics-install.service")
    exec_start = next(
        line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart=")
    )
    _bash, script, *args = exec_start.split()
    return node.run(
        str(node.root / script.lstrip("/")),
        *args[:3],
        str(node.root / args[3].lstrip("/")),
        env=env,
    )


@pytest.mark.parametrize(("role", "group"), [("compute", "accelerated"), ("login", "login")])
def test_nodes_schedule_the_hyperpod_exporters_with_the_pcs_slurm_prefix(
    tmp_path: Path, role: str, group: str
) -> None:
    node = _node(tmp_path, _metrics_params(), efa_devices=0)
    result = _boot(tmp_path, node, pcs_user_data(role, group, SCRIPTS_URI, nvme_disks=0))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fm-metrics-install.timer" in node.enabled
    unit = node.file("etc/systemd/system/fm-metrics-install.service")
    metrics_role = "worker" if role == "compute" else "controller"
    assert f"metrics.sh install {metrics_role} {group} " in unit
    drop_in = node.file("etc/systemd/system/fm-metrics-install.service.d/fm-pcs.conf")
    assert f"Environment=SLURM_PREFIX={SLURM_PREFIX}" in drop_in
    # What the timer's service then runs, with the drop-in's environment.
    installed = _run_metrics_installer(node, {"SLURM_PREFIX": SLURM_PREFIX})
    assert installed.returncode == 0, installed.output
    agent = json.loads(node.file("etc/fm-metrics/prometheus-agent.yml"))
    jobs = {c["job_name"] for c in agent["scrape_configs"]}
    assert agent["remote_write"][0]["url"] == REMOTE_WRITE
    assert agent["global"]["external_labels"]["cluster"] == "fm-pcs-cluster"
    # The Slurm dashboard lists clusters by this label, so PCS shows beside HyperPod.
    assert agent["global"]["external_labels"]["orchestrator"] == "slurm"
    assert (
        'label_values(up{orchestrator=\\"slurm\\"}, cluster)'
        in (
            Path(scripts_directory()).parents[2]
            / "observability"
            / "dashboards"
            / "slurm-cluster.json"
        ).read_text()
    )
    if role == "login":
        exporter = node.file("etc/systemd/system/fm-slurm-exporter.service")
        assert f"--slurm.bin-path={SLURM_PREFIX}/bin" in exporter
        assert jobs == {"node-exporter", "slurm-exporter"}
    else:
        assert jobs == {"node-exporter", "dcgm-exporter", "efa-exporter", "job-metrics"}
