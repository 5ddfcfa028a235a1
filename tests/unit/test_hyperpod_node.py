"""The real lifecycle scripts, end to end, in simulated HyperPod nodes (see tests/hyperpod_node.py):
controller, login and worker of a Slurm cluster and an EKS node, the files, units and mounts
they leave, ``systemd-analyze verify`` on every unit, and injected failures (downloads that
fail or do not match their checksums, slow DNS, a late route, a flaky mount, a missing EFA
LND, a second run)."""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest

from fm_constructs import pins
from fm_constructs.domain.users import ClusterUser
from fm_constructs.orchestration.hyperpod import (
    InstanceGroup,
    Orchestrator,
    provisioning_parameters,
    slurm_instance_groups,
)
from fm_constructs.orchestration.hyperpod.lifecycle import (
    efa_interface_cap,
    lnet_efa_interfaces,
)
from tests.git_tree import tree_id
from tests.hyperpod_node import SimulatedNode, url_key

#: The lifecycle scripts run whole in a simulated node (real bash, systemd-analyze, munge): the
#: end-to-end stage (make e2e, run by .ci/run after make test).
pytestmark = pytest.mark.e2e

CONTROLLER_IP, LOGIN_IP, WORKER_IP = "10.1.0.10", "10.1.0.11", "10.1.4.20"
RESOURCE_CONFIG: dict[str, Any] = {
    "InstanceGroups": [
        {
            "Name": "controller",
            "InstanceType": "ml.m5.2xlarge",
            "Instances": [{"InstanceName": "i-1", "CustomerIpAddress": CONTROLLER_IP}],
        },
        {
            "Name": "login",
            "InstanceType": "ml.m5.4xlarge",
            "Instances": [{"InstanceName": "i-2", "CustomerIpAddress": LOGIN_IP}],
        },
        {
            "Name": "workers",
            "InstanceType": "ml.p5.48xlarge",
            "Instances": [{"InstanceName": "i-3", "CustomerIpAddress": WORKER_IP}],
        },
    ]
}
SLURM_CONF = f"ClusterName=fm\nSlurmctldHost=ip-10-1-0-10({CONTROLLER_IP})\n"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


USERS = (
    ClusterUser(name="alice", uid=2001),
    ClusterUser(name="bob", uid=2002, gid=3000, groups=("docker", "sudo")),
)


def slurm_params(worker_instance_type: str = "p5.48xlarge") -> dict[str, Any]:
    return provisioning_parameters(
        orchestrator=Orchestrator.SLURM,
        cluster_name="fm-test",
        region="us-east-1",
        instance_groups=slurm_instance_groups(
            worker_instance_type=worker_instance_type, worker_count=1
        ),
        fsx={
            "dns_name": "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
            "mount_name": "abcdefgh",
            "mount_point": "/fsx",
            "efa_enabled": True,
            "shared_directories": ["/datasets", "/checkpoints"],
        },
        prometheus_remote_write_url="https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write",
        users=USERS,
    )


def node(tmp_path: Path, role: str, **options: Any) -> SimulatedNode:
    address = {"controller": CONTROLLER_IP, "login": LOGIN_IP, "worker": WORKER_IP}[role]
    defaults: dict[str, Any] = {"efa_devices": 32 if role == "worker" else 0}
    defaults.update(options)
    sim = SimulatedNode(
        tmp_path,
        params=slurm_params(),
        resource_config=RESOURCE_CONFIG,
        address=address,
        **defaults,
    )
    if role == "controller":
        sim.write_slurm_conf(SLURM_CONF)
    return sim


@functools.cache
def _created(role: str) -> SimulatedNode:
    """One node of ``role`` that has run ``on_create.sh``, built once per test process (in its
    scratch TMPDIR); tests that start from a created node get a copy (:func:`created`)."""
    sim = node(Path(tempfile.mkdtemp(prefix=f"fm-{role}-")), role)
    run = sim.run()
    assert run.returncode == 0, run.output
    return sim


def created(tmp_path: Path, role: str) -> SimulatedNode:
    """A copy of a node of ``role`` right after ``on_create.sh``."""
    return _created(role).clone(tmp_path)


def assert_units_verify(sim: SimulatedNode) -> None:
    if SYSTEMD_ANALYZE is None:
        pytest.skip("systemd-analyze is not installed (systemd is absent on this machine)")
    assert sim.units(), "the scripts wrote no unit"
    result = sim.verify_units()
    problems = [
        line
        for line in result.stderr.splitlines()
        if not line.startswith("Failed to resolve symlink")
    ]
    assert result.returncode == 0, "\n".join(problems)
    # systemd-analyze exits 0 on an unknown key or section and only warns: any line it prints
    # is a problem with a unit.
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------- workers


def test_worker_mounts_fsx_over_efa_and_runs_containers_and_slurmd(tmp_path: Path) -> None:
    sim = node(tmp_path, "worker")
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "group=workers role=worker" in run.output
    # FSx: mounted, verified with a probe file, on demand after the network (and LNet) at boot.
    assert "/fsx" in sim.mounts
    (entry,) = [line for line in sim.file("etc/fstab").splitlines() if " /fsx " in line]
    assert entry.startswith(
        "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh /fsx lustre"
    )
    assert "x-systemd.requires=network-online.target" in entry and "network.service" not in entry
    assert "x-systemd.requires=fm-lnet-efa.service" in entry
    # The after-FSx steps ran: the default user's home is on the shared file system.
    assert sim.file("sim/passwd").startswith("ubuntu:x:1000:1000::/fsx/home/ubuntu:")
    # The Lustre client's metapackage is held, so an upgrade cannot bring in a new kernel.
    assert "apt-mark hold lustre-client-modules-aws" in run.calls
    assert sim.exists("sim/held/lustre-client-modules-aws")
    # LNet over EFA as the FSx guide does it for p5: every fourth of the 32 devices, persisted.
    efa_adds = [c for c in run.calls if c.startswith("lnetctl net add --net efa")]
    assert (
        len(efa_adds) == 8 and "--if rdmap00s0" in efa_adds[0] and "--if rdmap28s0" in efa_adds[-1]
    )
    assert "fm-lnet-efa.service" in sim.enabled
    lnet_unit = sim.file("etc/systemd/system/fm-lnet-efa.service")
    assert "Before=remote-fs-pre.target" in lnet_unit
    assert "ExecStart=/usr/local/sbin/fm-lnet-efa ml.p5.48xlarge 8" in lnet_unit
    assert sim.exists("usr/local/sbin/fm-lnet-efa")
    # Containers: Docker, enroot and pyxis with their data on the NVMe.
    assert '"data-root": "/opt/dlami/nvme/docker/data-root"' in sim.file("etc/docker/daemon.json")
    enroot = sim.file("etc/enroot/enroot.conf")
    assert "ENROOT_DATA_PATH /opt/dlami/nvme/tmp/enroot/data/user-$(id -u)" in enroot
    assert "ENROOT_CACHE_PATH /opt/dlami/nvme/enroot/user-$(id -u)" in enroot
    assert sim.exists("usr/local/lib/slurm/spank_pyxis.so")
    assert "spank_pyxis.so" in sim.file("opt/slurm/etc/plugstack.conf")
    # Slurm: configless slurmd pointed at the controller.
    dropin = sim.file("etc/systemd/system/slurmd.service.d/fm-conf-server.conf")
    assert f"--conf-server {CONTROLLER_IP}" in dropin
    assert "slurmd" in sim.active
    # Metrics: scheduled, not installed, during creation.
    assert "fm-metrics-install.timer" in sim.enabled
    assert "systemctl start --no-block fm-metrics-install.service" in run.calls
    assert not sim.exists("etc/systemd/system/fm-node-exporter.service")
    assert not any(c.startswith("curl") and "prometheus" in c for c in run.calls)
    assert_units_verify(sim)


def test_worker_metrics_installer_writes_units_for_what_it_installed(tmp_path: Path) -> None:
    sim = created(tmp_path, "worker")
    run = sim.run_metrics_installer()
    assert run.returncode == 0, run.output
    node_unit = sim.file("etc/systemd/system/fm-node-exporter.service")
    # The ExecStart is the binary path (H1: no "<file>: OK" from sha256sum in it).
    assert "ExecStart=/opt/fm-metrics/node_exporter-1.9.1.linux-amd64/node_exporter " in node_unit
    assert ": OK" not in node_unit
    agent = sim.file("etc/systemd/system/fm-prometheus-agent.service")
    assert "ExecStart=/opt/fm-metrics/prometheus-3.5.0.linux-amd64/prometheus --agent" in agent
    dcgm = sim.file("etc/systemd/system/fm-dcgm-exporter.service")
    assert "ExecStartPre=-/usr/bin/docker rm -f fm-dcgm-exporter" in dcgm
    # Container units start after the Docker daemon and stop with it; host binaries do not.
    assert "After=network-online.target docker.service\nRequires=docker.service\n" in dcgm
    assert "docker.service" not in node_unit
    assert "-f /etc/dcgm-exporter/fm-counters.csv" in dcgm
    assert "-v /run/fm-dcgm-jobs:/etc/dcgm-exporter/hpc-jobs:ro" in dcgm
    assert "--hpc-job-mapping-dir /etc/dcgm-exporter/hpc-jobs" in dcgm
    assert "--collector.amazonefa" in sim.file("etc/systemd/system/fm-efa-exporter.service")
    assert "remote_write" in sim.file("etc/fm-metrics/prometheus-agent.yml")
    assert {"fm-node-exporter.service", "fm-prometheus-agent.service"} <= sim.active
    assert_units_verify(sim)
    # Idempotent: a second run downloads nothing.
    again = sim.run_metrics_installer()
    assert again.returncode == 0, again.output
    assert not any(c.startswith(("curl", "docker pull")) for c in again.calls)


def test_a_node_without_docker_gets_ubuntus_docker_with_its_data_on_the_nvme(
    tmp_path: Path,
) -> None:
    sim = node(tmp_path, "worker")
    (sim.root / "usr" / "bin" / "docker").unlink()
    run = sim.run()
    assert run.returncode == 0, run.output
    assert any("install" in c and "docker.io" in c for c in run.calls if c.startswith("apt-get"))
    assert "systemctl enable --now docker" in run.calls
    assert '"data-root": "/opt/dlami/nvme/docker/data-root"' in sim.file("etc/docker/daemon.json")
    # Offline, the node still comes up and says why the container exporters wait.
    offline = node(tmp_path / "offline", "worker")
    (offline.root / "usr" / "bin" / "docker").unlink()
    offline.inject("offline")
    run = offline.run()
    assert "Docker could not be installed" in run.output


def test_a_worker_without_docker_says_its_gpu_and_efa_exporters_wait(tmp_path: Path) -> None:
    sim = created(tmp_path, "worker")
    (sim.root / "usr" / "bin" / "docker").unlink()
    run = sim.run_metrics_installer()
    assert run.returncode != 0  # the timer runs the installer again
    for component in ("efa_exporter", "dcgm_exporter"):
        assert f"{component} runs in a container and /usr/bin/docker is missing" in run.output
    assert "not installed: efa_exporter dcgm_exporter" in run.output
    assert sim.exists("etc/systemd/system/fm-node-exporter.service")


def test_failed_downloads_leave_no_unit_and_do_not_fail_the_node(tmp_path: Path) -> None:
    sim = created(tmp_path, "worker")
    sim.inject("offline")
    run = sim.run_metrics_installer()
    assert run.returncode != 0  # the timer runs the installer again later
    assert "node_exporter is not installed yet" in run.output
    # The shared checked download (lib.sh fetch_pinned): tried 5 times, then named.
    archive = "node_exporter-1.9.1.linux-amd64.tar.gz"
    assert sum(c.startswith("curl") and archive in c for c in run.calls) == 5
    assert f"could not download {archive}" in run.output
    for name in ("node-exporter", "prometheus-agent", "dcgm-exporter", "efa-exporter"):
        assert not sim.exists(f"etc/systemd/system/fm-{name}.service"), name
    sim.heal("offline")
    assert sim.run_metrics_installer().returncode == 0
    assert sim.exists("etc/systemd/system/fm-node-exporter.service")


def test_a_tarball_that_fails_its_checksum_is_refused(tmp_path: Path) -> None:
    sim = created(tmp_path, "worker")
    sim.serve_releases(corrupt=True)
    run = sim.run_metrics_installer()
    assert run.returncode != 0
    assert "refusing node_exporter-1.9.1.linux-amd64.tar.gz" in run.output
    assert not sim.exists("opt/fm-metrics/node_exporter-1.9.1.linux-amd64")
    assert not sim.exists("etc/systemd/system/fm-node-exporter.service")


def _pin_download(sim: SimulatedNode, pins: dict[str, str]) -> None:
    """Give the installer's staged provisioning parameters these pinned digests (only)."""
    unit = sim.file("etc/systemd/system/fm-metrics-install.service")
    exec_start = next(line for line in unit.splitlines() if line.startswith("ExecStart="))
    staged = sim.root / exec_start.split()[-1].lstrip("/")
    params = json.loads(staged.read_text())
    params["download_sha256"] = pins
    staged.write_text(json.dumps(params))


def test_only_a_download_whose_digest_is_pinned_runs(tmp_path: Path) -> None:
    """The digests pinned in the provisioning parameters decide: an archive without one is
    refused, an archive with another is refused (a sums file from the release, which comes
    from the same place, is not consulted), and the archive whose digest is pinned is
    installed."""
    archive = "node_exporter-1.9.1.linux-amd64.tar.gz"
    url = f"https://github.com/prometheus/node_exporter/releases/download/v1.9.1/{archive}"
    sim = created(tmp_path, "worker")
    served = (sim.sim / "downloads" / url_key(url)).read_bytes()
    digest = hashlib.sha256(served).hexdigest()
    _pin_download(sim, {})
    run = sim.run_metrics_installer()
    assert run.returncode != 0
    assert f"refusing {archive}: no sha256 is pinned for it" in run.output
    assert "refusing prometheus-3.5.0.linux-amd64.tar.gz: no sha256 is pinned" in run.output
    assert not any("sha256sums.txt" in c for c in run.calls if c.startswith("curl"))
    assert not sim.exists("opt/fm-metrics/node_exporter-1.9.1.linux-amd64")
    _pin_download(sim, {archive: "0" * 64})
    run = sim.run_metrics_installer()
    assert f"refusing {archive}: its sha256 {digest} is not the pinned {'0' * 64}" in run.output
    assert not sim.exists("etc/systemd/system/fm-node-exporter.service")
    _pin_download(sim, {archive: digest})
    run = sim.run_metrics_installer()
    assert f"{archive}: sha256 matches the pinned {digest}" in run.output
    assert sim.exists("etc/systemd/system/fm-node-exporter.service"), run.output


def test_the_shipped_pins_refuse_a_file_that_is_not_the_release(tmp_path: Path) -> None:
    """With the library's own pins (the real releases' digests), the stand-in archives this
    node serves are refused, as any file other than the published one would be: the pins
    reach the node and are enforced there: the pyxis source, pinned by the tree of its release
    tag, is refused for holding another tree. enroot, with no digest pinned yet, is refused
    too, and a worker joins drained naming both."""
    sim = node(tmp_path, "worker", shipped_pins=True)
    run = sim.run()
    assert run.returncode == 0, run.output
    for package in ("enroot_3.4.1-1_amd64.deb", "enroot+caps_3.4.1-1_amd64.deb"):
        assert f"refusing {package}: no sha256 is pinned for it" in run.output or (
            package.startswith("enroot+caps")  # not fetched once the first is refused
        )
    tree = pins.source_trees()["pyxis-0.19.0.tar.gz"]
    assert "refusing pyxis-0.19.0.tar.gz: its source tree " in run.output
    assert f"is not the pinned {tree}" in run.output
    assert sim.slurm_state == ("drain", DRAINED)
    assert not sim.exists("usr/local/lib/slurm/spank_pyxis.so")
    metrics = sim.run_metrics_installer()
    assert metrics.returncode != 0
    pinned = pins.download_digests()
    for archive in (
        "node_exporter-1.9.1.linux-amd64.tar.gz",
        "prometheus-3.5.0.linux-amd64.tar.gz",
    ):
        assert f"refusing {archive}: its sha256 " in metrics.output
        assert f"is not the pinned {pinned[archive]}" in metrics.output
    for name in ("node-exporter", "prometheus-agent"):
        assert not sim.exists(f"etc/systemd/system/fm-{name}.service"), name


def test_a_tampered_enroot_package_is_refused(tmp_path: Path) -> None:
    """A package whose bytes differ from the pinned digest is not installed: apt never sees
    it, and the worker joins drained naming enroot."""
    sim = node(tmp_path, "worker")
    sim.serve_releases(corrupt=True)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "refusing enroot_3.4.1-1_amd64.deb: its sha256 " in run.output
    assert not any(c.startswith("apt-get install") and ".deb" in c for c in run.calls)
    assert "enroot" in sim.file("var/lib/fm-constructs/missing-components").split()
    assert sim.slurm_state[0] == "drain"


PYXIS = pins.binary("pyxis").version
PYXIS_ARCHIVE = f"pyxis-{PYXIS}.tar.gz"


def _git(repo: Path, *args: str) -> bytes:
    environment = {
        "PATH": os.environ["PATH"],
        "HOME": str(repo),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], env=environment, capture_output=True, check=True
    ).stdout


#: A release tag's files (path -> content, executable): a Makefile, sources in a folder whose
#: name sorts between two files' (the order git's trees keep), an executable script.
TAG_FILES = {
    "Makefile": (b"all:\n", False),
    "src/pyxis.c": (b"int x;\n", False),
    "src.h": (b"#pragma once\n", False),
    "src-gen.sh": (b"#!/bin/sh\n", True),
}


@functools.cache
def _tag_archive() -> tuple[bytes, str]:
    """GitHub's archive of a tag, made as GitHub makes it (``git archive`` of the tag with
    the ``<repo>-<version>/`` prefix) from a real repository, and the tag's tree id as git
    reports it."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = Path(tempfile.mkdtemp()) / "pyxis"
    for name, (content, executable) in TAG_FILES.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
        path.chmod(0o755 if executable else 0o644)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "release")
    _git(repo, "tag", f"v{PYXIS}")
    archive = _git(repo, "archive", "--format=tar.gz", f"--prefix=pyxis-{PYXIS}/", f"v{PYXIS}")
    tree = _git(repo, "rev-parse", f"v{PYXIS}^{{tree}}").decode().strip()
    shutil.rmtree(repo.parent)
    return archive, tree


def _retarred(archive: bytes, change: str) -> bytes:
    """``archive`` with one change a tampered download could carry."""
    members: dict[str, tuple[tarfile.TarInfo, bytes]] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for info in tar.getmembers():
            data = tar.extractfile(info).read() if info.isfile() else b""  # type: ignore[union-attr]
            members[info.name] = (info, data)
    top = f"pyxis-{PYXIS}"
    if change == "content":
        info, _ = members[f"{top}/src/pyxis.c"]
        members[info.name] = (info, b"int x; /* and something else */\n")
    elif change == "mode":
        info, data = members[f"{top}/src-gen.sh"]
        info.mode = 0o644
    elif change == "added file":
        info = tarfile.TarInfo(f"{top}/src/extra.c")
        info.mode = 0o644
        members[info.name] = (info, b"void extra(void) {}\n")
    elif change == "git directory":
        info = tarfile.TarInfo(f"{top}/.git/hooks/post-checkout")
        info.mode = 0o755
        members[info.name] = (info, b"#!/bin/sh\n")
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for info, data in members.values():
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return raw.getvalue()


def test_the_pyxis_source_is_built_when_it_holds_the_pinned_tree(tmp_path: Path) -> None:
    """The archive of a release tag, made by git as GitHub makes it, holds the tree git names
    for the tag: the node computes the same id (with the host's git), accepts the source and
    builds it. The tests' own account of git's tree format agrees (tests/git_tree.py)."""
    archive, tree = _tag_archive()
    assert tree_id(TAG_FILES) == tree
    sim = node(tmp_path, "worker")
    sim.serve_source(sim.pyxis_url, archive, tree=tree)
    run = sim.run("containers.sh", "worker")
    assert run.returncode == 0, run.output
    assert f"{PYXIS_ARCHIVE}: source tree matches the pinned {tree}" in run.output
    assert f"containers: built pyxis {PYXIS}" in run.output
    assert sim.exists("usr/local/lib/slurm/spank_pyxis.so")
    assert sim.file("var/lib/fm-constructs/missing-components") == ""


@pytest.mark.parametrize("change", ["content", "mode", "added file", "git directory"])
def test_a_pyxis_source_that_is_not_the_tags_tree_is_refused(tmp_path: Path, change: str) -> None:
    """A changed file, a lost executable bit, an added file or a .git folder (whose hooks no
    tree records) is refused before anything is built, and pyxis counts as missing."""
    archive, tree = _tag_archive()
    sim = node(tmp_path, "worker")
    sim.serve_source(sim.pyxis_url, archive, tree=tree, served=_retarred(archive, change))
    run = sim.run("containers.sh", "worker")
    assert run.returncode == 0, run.output
    if change == "git directory":
        assert f"refusing {PYXIS_ARCHIVE}: it holds a .git entry" in run.output
    else:
        assert f"refusing {PYXIS_ARCHIVE}: its source tree " in run.output
        assert f"is not the pinned {tree}" in run.output
    assert not any(c.startswith("make") for c in run.calls), run.calls
    assert not sim.exists("usr/local/lib/slurm/spank_pyxis.so")
    assert "pyxis" in sim.file("var/lib/fm-constructs/missing-components").split()


def test_a_pyxis_source_without_a_pinned_tree_is_not_downloaded(tmp_path: Path) -> None:
    archive, _tree = _tag_archive()
    sim = node(tmp_path, "worker")
    # Its sha256 pinned instead does not do: a tag's archive is checked by its tree alone.
    sim.trees.clear()
    sim.serve(sim.pyxis_url, archive)
    run = sim.run("containers.sh", "worker")
    assert f"refusing {PYXIS_ARCHIVE}: no source tree is pinned for it" in run.output
    assert not any(sim.pyxis_url in c for c in run.calls), run.calls
    assert not any(c.startswith("make") for c in run.calls), run.calls
    assert "pyxis" in sim.file("var/lib/fm-constructs/missing-components").split()


DRAINED = "fm-constructs: missing enroot pyxis"


@pytest.mark.parametrize("role", ["worker", "login", "controller"])
def test_a_node_whose_downloads_all_fail_joins_drained_and_a_retry_resumes_it(
    tmp_path: Path, role: str
) -> None:
    """Without the network OnCreate still finishes: Slurm runs, what is missing (enroot, pyxis)
    is named, a worker is drained with that reason (controller and login are in no
    partition), and the retry timer, once the downloads work, installs it and resumes the
    worker. On-create never waits on the metrics downloads."""
    sim = node(tmp_path, role)
    sim.inject("offline")
    run = sim.run()
    assert run.returncode == 0, run.output
    assert run.output.rstrip().endswith("on_create: done")
    assert "giving up after 5 attempts" in run.output
    assert sim.file("var/lib/fm-constructs/missing-components").split() == ["enroot", "pyxis"]
    assert not sim.exists("etc/enroot/enroot.conf")
    # plugstack.conf names pyxis anyway: the controller's copy is every configless node's.
    plugstack = sim.file("opt/slurm/etc/plugstack.conf")
    assert plugstack == "optional /usr/local/lib/slurm/spank_pyxis.so\n"
    assert {"slurmd" if role != "controller" else "slurmctld"} <= sim.active
    if role == "worker":
        assert sim.slurm_state == ("drain", DRAINED)
        assert f"scontrol update nodename=ip-10-1-4-20 state=drain reason={DRAINED}" in run.calls
        # The drain comes after slurmd's start, so the node is known when it is drained.
        calls = run.calls
        assert calls.index("systemctl restart slurmd") < next(
            i for i, c in enumerate(calls) if c.startswith("scontrol update")
        )
    else:
        assert not any(c.startswith("scontrol update") for c in run.calls)
    assert "fm-components-retry.timer" in sim.enabled
    assert not any(
        "prometheus" in c or "dcgm" in c for c in run.calls if c.startswith(("curl", "docker"))
    )
    assert_units_verify(sim)

    # Still offline: the retry fails (the timer runs it again) and the node stays drained.
    again = sim.run_unit("fm-components-retry.service")
    assert again.returncode != 0 and "still missing: enroot pyxis" in again.output
    assert sim.slurm_state[0] == ("drain" if role == "worker" else "idle")

    sim.heal("offline")
    healed = sim.run_unit("fm-components-retry.service")
    assert healed.returncode == 0, healed.output
    assert sim.file("var/lib/fm-constructs/missing-components") == ""
    assert sim.exists("usr/local/lib/slurm/spank_pyxis.so")
    assert "ENROOT_RESTRICT_DEV n" in sim.file("etc/enroot/enroot.conf")
    assert sim.slurm_state == ("idle", "")
    assert "fm-components-retry.timer" not in sim.enabled
    if role == "worker":
        assert "scontrol update nodename=ip-10-1-4-20 state=undrain" in healed.calls
        assert "systemctl restart slurmd" in healed.calls


def test_a_retry_leaves_a_drain_it_did_not_set(tmp_path: Path) -> None:
    """Resume only undoes this library's drain: an operator's or a health check's stays."""
    sim = node(tmp_path, "worker")
    sim.inject("offline")
    assert sim.run().returncode == 0
    (sim.sim / "slurm-reason").write_text("Kill task failed\n")
    sim.heal("offline")
    healed = sim.run_unit("fm-components-retry.service")
    assert healed.returncode == 0, healed.output
    assert sim.slurm_state == ("drain", "Kill task failed")
    assert not any("state=undrain" in c for c in healed.calls)


def test_a_worker_drains_when_the_controller_answers_late(tmp_path: Path) -> None:
    """scontrol is retried while slurmctld is unreachable; past the retries the timer drains."""
    sim = node(tmp_path, "worker")
    sim.inject("offline")
    sim.inject("scontrol-failures", 3)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert sim.slurm_state == ("drain", DRAINED)
    late = node(tmp_path / "late", "worker")
    late.inject("offline")
    late.inject("scontrol-failures", 5)
    run = late.run()
    assert run.returncode == 0, run.output
    assert "could not drain ip-10-1-4-20 yet" in run.output
    assert late.slurm_state == ("idle", "")
    assert late.run_unit("fm-components-retry.service").returncode != 0
    assert late.slurm_state == ("drain", DRAINED)


def test_slow_dns_late_route_and_flaky_mount_are_waited_out(tmp_path: Path) -> None:
    sim = node(tmp_path, "worker")
    sim.inject("dns-failures", 6)
    sim.inject("route-failures", 3)
    sim.inject("mount-failures", 2)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "DNS settled" in run.output
    assert "attempt 3 of 7 failed: route_address; retrying in 20s" in run.output
    assert sum(c.startswith("mount -t lustre") for c in run.calls) == 3
    assert "group=workers role=worker" in run.output


def test_route_address_wins_over_the_first_interface(tmp_path: Path) -> None:
    """A container bridge listed first by ``hostname -I`` does not hide the node."""
    sim = node(tmp_path, "worker", extra_addresses=("172.17.0.1", "10.200.0.5"))
    sim.inject("route-failures", 99)  # no route at all: every local address is tried
    run = sim.run(env={"ADDRESS_ATTEMPTS": "2"})
    assert run.returncode == 0, run.output
    assert "no route to the VPC; trying every local address" in run.output
    assert "group=workers role=worker" in run.output


def test_route_lookup_decides_when_another_listed_address_is_in_the_cluster(
    tmp_path: Path,
) -> None:
    """With a working route, the route's source address names the node even when
    ``hostname -I`` lists first an address the resource configuration gives another node."""
    sim = node(tmp_path, "worker", extra_addresses=(CONTROLLER_IP, "172.17.0.1"))
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "group=workers role=worker" in run.output


@pytest.mark.parametrize(
    ("instance_type", "devices", "wanted", "expected"),
    [
        # The count the provisioning parameters give (the FSx guide's table, capped), spread
        # evenly over the node's devices; the first and last for 2.
        ("ml.p5.48xlarge", 32, "8", [0, 4, 8, 12, 16, 20, 24, 28]),
        ("ml.p5en.48xlarge", 16, "8", [0, 2, 4, 6, 8, 10, 12, 14]),
        ("ml.p6-b200.48xlarge", 8, "8", [0, 1, 2, 3, 4, 5, 6, 7]),
        ("ml.p6-b300.48xlarge", 17, "16", list(range(16))),
        ("ml.g6e.48xlarge", 4, "2", [0, 3]),
        ("ml.g5.48xlarge", 1, "1", [0]),
        ("ml.g6e.48xlarge", 4, "", [0, 3]),  # no count: the guide's default for other types
        ("ml.p5.48xlarge", 32, "3", [0, 10, 21]),
        ("ml.p5.48xlarge", 32, "1", [0]),
    ],
)
def test_lnet_uses_the_efa_interfaces_it_is_given_spread_over_the_devices(
    tmp_path: Path, instance_type: str, devices: int, wanted: str, expected: list[int]
) -> None:
    sim = node(tmp_path, "worker", efa_devices=devices)
    run = sim.run("lnet_efa.sh", instance_type, wanted)
    assert run.returncode == 0, run.output
    added = [c.split("--if ")[1].split()[0] for c in run.calls if "net add --net efa" in c]
    assert added == [f"rdmap{index:02d}s0" for index in expected]


def test_lnet_takes_efa_devices_in_numeric_order(tmp_path: Path) -> None:
    """p5 names its devices rdmap79s0 ... rdmap113s0: in name order, not the shell's."""
    sim = node(tmp_path, "worker", efa_devices=0)
    names = [f"rdmap{n}s0" for n in (79, 80, 96, 97, 112, 113)]
    for name in names:
        (sim.root / "sys" / "class" / "infiniband" / name).mkdir(parents=True)
    run = sim.run("lnet_efa.sh", "ml.p5.48xlarge", "3")
    assert run.returncode == 0, run.output
    added = [c.split("--if ")[1].split()[0] for c in run.calls if "net add --net efa" in c]
    assert added == ["rdmap79s0", "rdmap96s0", "rdmap112s0"]


def test_lustre_client_is_tuned_as_the_fsx_guide_recommends_for_its_size(tmp_path: Path) -> None:
    sim = created(tmp_path, "worker")
    unit = sim.file("etc/systemd/system/fm-lustre-tune.service")
    # /fsx mounts on demand: the tuning runs each time fsx.mount comes up and never pulls it in.
    assert "After=fsx.mount" in unit and "WantedBy=fsx.mount" in unit
    assert "RequiresMountsFor" not in unit and "RemainAfterExit" not in unit
    assert "ExecStart=/usr/local/sbin/fm-lustre-tune mounted" in unit
    assert "fm-lustre-tune.service" in sim.enabled
    assert_units_verify(sim)
    script = str(sim.root / "usr/local/sbin/fm-lustre-tune")
    # A p5.48xlarge (192 vCPUs, 2 TiB): the module options and every client setting.
    big = {"FM_CPUS": "192", "FM_MEMORY_GIB": "2048"}
    assert sim.run(script, "modules", env=big).returncode == 0
    assert sim.file("etc/modprobe.d/fm-lustre.conf").splitlines()[1:] == [
        "options ptlrpc ptlrpcd_per_cpt_max=32",
        "options ksocklnd credits=2560",
    ]
    run = sim.run(script, "mounted", env=big)
    assert run.returncode == 0, run.output
    (settings,) = [c for c in run.calls if c.startswith("lctl set_param llite.*.statahead_max")]
    for setting in (
        "ldlm.namespaces.*.lru_max_age=600000",
        "ldlm.namespaces.*.lru_size=19200",
        "osc.*OST*.max_rpcs_in_flight=32",
        "mdc.*.max_rpcs_in_flight=64",
        "mdc.*.max_mod_rpcs_in_flight=50",
    ):
        assert setting in settings.split()
    assert "lctl set_param llite.*.statahead_xattr=1" in run.calls
    # The settings are lctl's patterns: a file in the working directory that matches one is
    # not substituted for it.
    (sim.scripts / "llite.x.statahead_max=512").touch()
    run = sim.run(script, "mounted", env=big)
    assert (
        "llite.*.statahead_max=512"
        in next(c for c in run.calls if c.startswith("lctl set_param")).split()
    )
    # A small controller (8 vCPUs, 32 GiB): statahead only, and no module options.
    small = {"FM_CPUS": "8", "FM_MEMORY_GIB": "32"}
    assert sim.run(script, "modules", env=small).returncode == 0
    assert not sim.exists("etc/modprobe.d/fm-lustre.conf")
    run = sim.run(script, "mounted", env=small)
    assert next(c for c in run.calls if c.startswith("lctl set_param")).split()[2:] == [
        "llite.*.statahead_max=512",
        "llite.*.statahead_agl=1",
    ]


def test_lnet_interfaces_follow_the_fsx_table_within_the_connection_limit() -> None:
    def groups(count: int, instance_type: str = "p5.48xlarge") -> list[InstanceGroup]:
        return slurm_instance_groups(worker_instance_type=instance_type, worker_count=count)

    assert efa_interface_cap(groups(2)) == 512
    assert efa_interface_cap(groups(128)) == 8
    assert efa_interface_cap(groups(300)) == 3
    assert efa_interface_cap(groups(1024)) == 1
    # Another cluster on the same file system counts too; never fewer than this one's nodes.
    assert efa_interface_cap(groups(100), efa_clients=200) == 5
    assert efa_interface_cap(groups(100), efa_clients=10) == 10
    assert efa_interface_cap(groups(4, "m5.2xlarge")) is None

    def interfaces(instance_type: str, cap: int | None = None) -> int:
        (worker,) = [g for g in groups(1, instance_type) if g.name == "workers"]
        return lnet_efa_interfaces(worker, cap)

    assert interfaces("p5.48xlarge") == 8 and interfaces("p5en.48xlarge") == 8
    assert interfaces("p6-b300.48xlarge") == 16 and interfaces("p6-b200.48xlarge") == 8
    assert interfaces("g6e.48xlarge") == 2  # several network cards
    assert interfaces("g5.48xlarge") == 1  # one
    assert interfaces("p5.48xlarge", cap=3) == 3 and interfaces("m5.2xlarge") == 0
    (workers,) = slurm_params()["worker_groups"]
    assert workers["lnet_efa_interfaces"] == 8
    # The boot unit carries the count, so LNet comes back with the same interfaces.
    sim = created(Path(tempfile.mkdtemp()), "worker")
    assert "ExecStart=/usr/local/sbin/fm-lnet-efa ml.p5.48xlarge 8" in sim.file(
        "etc/systemd/system/fm-lnet-efa.service"
    )


def test_missing_efa_lnd_mounts_over_tcp(tmp_path: Path) -> None:
    sim = node(tmp_path, "worker", kefalnd=False)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "no EFA LND (kefalnd); Lustre stays on TCP" in run.output
    assert not any(c.startswith("lnetctl net add") for c in run.calls)
    (entry,) = [line for line in sim.file("etc/fstab").splitlines() if " /fsx " in line]
    assert "fm-lnet-efa" not in entry


def test_a_trn2_worker_mounts_an_efa_file_system_over_tcp(tmp_path: Path) -> None:
    """FSx takes no EFA client of the trn2 family (FSx for Lustre guide, "Configuring EFA
    clients"): the provisioning parameters give its group 0 interfaces and the node mounts over
    TCP, though it has EFA devices and the EFA LND."""
    params = slurm_params(worker_instance_type="trn2.48xlarge")
    assert [g["lnet_efa_interfaces"] for g in params["worker_groups"]] == [0]
    config = json.loads(json.dumps(RESOURCE_CONFIG))
    config["InstanceGroups"][2]["InstanceType"] = "ml.trn2.48xlarge"
    sim = SimulatedNode(
        tmp_path, params=params, resource_config=config, address=WORKER_IP, efa_devices=16
    )
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "is no EFA client of FSx for Lustre; Lustre stays on TCP" in run.output
    assert not any(c.startswith("lnetctl net add --net efa") for c in run.calls)
    assert "(LNet over tcp)" in run.output


def test_a_second_run_changes_nothing(tmp_path: Path) -> None:
    sim = node(tmp_path, "worker")
    (sim.root / "etc").mkdir(parents=True, exist_ok=True)
    (sim.root / "etc" / "fstab").write_text("LABEL=root / ext4 defaults 0 1\n")
    assert sim.run().returncode == 0
    snapshot = {p: p.read_text() for p in sim.units()}
    fstab = sim.file("etc/fstab")
    accounts = (sim.file("sim/passwd"), sim.file("sim/group"))
    keys = sim.file("fsx/home/alice/.ssh/authorized_keys")
    again = sim.run()
    assert again.returncode == 0, again.output
    assert sim.file("etc/fstab") == fstab and fstab.count(" /fsx ") == 1
    assert fstab.startswith("LABEL=root / ext4")
    assert {p: p.read_text() for p in sim.units()} == snapshot
    assert sum(c.startswith("mount -t lustre") for c in again.calls) == 0
    assert not any(c.startswith(("curl", "make")) for c in again.calls)
    assert sim.file("opt/slurm/etc/plugstack.conf").count("spank_pyxis.so") == 1
    assert "already held" in again.output
    assert (sim.file("sim/passwd"), sim.file("sim/group")) == accounts
    assert sim.file("fsx/home/alice/.ssh/authorized_keys") == keys
    assert not any(
        c.startswith(("apt-mark hold", "useradd", "groupadd", "ssh-keygen")) for c in again.calls
    )


# -------------------------------------------------------------------- controller and login


def test_controller_sets_up_accounting_gres_job_hooks_and_slurmctld(tmp_path: Path) -> None:
    sim = node(tmp_path, "controller")
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "group=controller role=controller" in run.output
    accounting = sim.file("opt/slurm/etc/accounting.conf")
    assert "GresTypes=gpu" in accounting and "AccountingStorageTRES=gres/gpu" in accounting
    assert f"AccountingStorageHost={CONTROLLER_IP}" in accounting
    assert "AccountingStorageType=accounting_storage/slurmdbd" in accounting
    assert "include /opt/slurm/etc/accounting.conf" in sim.file("opt/slurm/etc/slurm.conf")
    slurmdbd = sim.root / "opt" / "slurm" / "etc" / "slurmdbd.conf"
    assert slurmdbd.stat().st_mode & 0o077 == 0
    password = next(
        line.split("=", 1)[1]
        for line in slurmdbd.read_text().splitlines()
        if line.startswith("StoragePass=")
    )
    assert len(password) >= 32 and password not in run.output
    assert "CREATE DATABASE IF NOT EXISTS slurm_acct_db" in sim.file("sim/mysql.sql")
    assert sim.file("opt/slurm/etc/gres.conf") == "AutoDetect=nvml\n"
    # What HyperPod's node lines say about GPUs is in the log (this simulated agent lists none).
    assert "HyperPod's slurm.conf: 0 of 0 node lines carry Gres=gpu" in run.output
    assert "no node is listed yet" in run.output
    assert {"slurmdbd", "slurmctld"} <= sim.active
    assert any(c.startswith("systemctl restart slurmctld") for c in run.calls)
    # pyxis on the controller too (it submits jobs); its plugstack.conf is every node's.
    assert sim.exists("usr/local/lib/slurm/spank_pyxis.so")
    assert "spank_pyxis.so" in sim.file("opt/slurm/etc/plugstack.conf")
    # Slurm runs the job hooks (slurmctld checks the scripts exist on the controller too) and
    # its logs rotate.
    hooks = sim.file("opt/slurm/etc/fm-hooks.conf")
    assert hooks == (
        "Prolog=/opt/slurm/etc/scripts/fm-prolog.sh\nEpilog=/opt/slurm/etc/scripts/fm-epilog.sh\n"
    )
    assert (sim.root / "opt/slurm/etc/scripts/fm-prolog.sh").stat().st_mode & 0o111
    assert sim.file("opt/slurm/etc/scripts/fm-node.env") == "EXPECTED_GPUS=0\n"
    rotation = sim.file("etc/logrotate.d/fm-slurm")
    assert rotation.startswith("/var/log/slurm/*.log {") and "SIGUSR2 slurmctld" in rotation
    assert_units_verify(sim)
    # A second run keeps the password and one include line of each.
    assert sim.run().returncode == 0
    assert f"StoragePass={password}" in slurmdbd.read_text()
    slurm_conf = sim.file("opt/slurm/etc/slurm.conf")
    assert slurm_conf.count("accounting.conf") == 1
    assert slurm_conf.count("include /opt/slurm/etc/fm-hooks.conf") == 1


def test_controller_opens_the_data_repository_directories_to_every_user(tmp_path: Path) -> None:
    sim = created(tmp_path, "controller")
    for directory in ("fsx/datasets", "fsx/checkpoints"):
        assert (sim.root / directory).stat().st_mode & 0o7777 == 0o1777
    # The mount point itself and the other directories keep their modes.
    assert (sim.root / "fsx").stat().st_mode & 0o7777 != 0o1777
    assert (sim.root / "fsx/home").stat().st_mode & 0o002 == 0
    # Workers leave them alone (one node is enough; a second run changes nothing).
    worker = created(tmp_path / "w", "worker")
    assert not worker.exists("fsx/checkpoints")
    assert sim.run().returncode == 0
    assert (sim.root / "fsx/checkpoints").stat().st_mode & 0o7777 == 0o1777
    # A mode an administrator sets later is kept by the next run.
    (sim.root / "fsx/checkpoints").chmod(0o1770)
    assert sim.run().returncode == 0
    assert (sim.root / "fsx/checkpoints").stat().st_mode & 0o7777 == 0o1770


def test_includes_come_back_when_hyperpod_writes_slurm_conf_anew(tmp_path: Path) -> None:
    sim = created(tmp_path, "controller")
    # slurmctld checks the includes before every start, and systemd runs the guard whenever
    # the agent rewrites slurm.conf.
    assert "ExecStartPre=-/usr/local/sbin/fm-slurm-includes" in sim.file(
        "etc/systemd/system/slurmctld.service.d/fm-includes.conf"
    )
    assert "PathChanged=/opt/slurm/etc/slurm.conf" in sim.file(
        "etc/systemd/system/fm-slurm-includes.path"
    )
    assert "fm-slurm-includes.path" in sim.enabled and "fm-slurm-includes.path" in sim.active
    # The agent writes a new slurm.conf (a node replaced, its own restart), without a final
    # newline: the guard adds both lines back, each on its own line, and reconfigures.
    sim.write_slurm_conf(SLURM_CONF + "NodeName=ip-10-1-4-21 NodeAddr=10.1.4.21")
    run = sim.run(str(sim.root / "usr/local/sbin/fm-slurm-includes"), "--reconfigure")
    assert run.returncode == 0, run.output
    lines = sim.file("opt/slurm/etc/slurm.conf").splitlines()
    assert lines[-3:] == [
        "NodeName=ip-10-1-4-21 NodeAddr=10.1.4.21",
        "include /opt/slurm/etc/accounting.conf",
        "include /opt/slurm/etc/fm-hooks.conf",
    ]
    assert "systemctl restart slurmctld" in run.calls
    # Nothing missing: nothing written, no restart; an include with a comment counts.
    conf = sim.root / "opt/slurm/etc/slurm.conf"
    conf.write_text(conf.read_text().replace("fm-hooks.conf", "fm-hooks.conf  # job hooks"))
    lines = sim.file("opt/slurm/etc/slurm.conf").splitlines()
    again = sim.run(str(sim.root / "usr/local/sbin/fm-slurm-includes"), "--reconfigure")
    assert again.returncode == 0 and "systemctl restart slurmctld" not in again.calls
    assert sim.file("opt/slurm/etc/slurm.conf").splitlines() == lines
    assert_units_verify(sim)


def test_controller_runs_the_slurm_exporter_the_agent_scrapes(tmp_path: Path) -> None:
    sim = created(tmp_path, "controller")
    run = sim.run_metrics_installer()
    assert run.returncode == 0, run.output
    unit = sim.file("etc/systemd/system/fm-slurm-exporter.service")
    # The release archive has no top-level directory: it is unpacked into its own.
    assert (
        "ExecStart=/opt/fm-metrics/slurm_exporter-1.8.4-linux-amd64/slurm_exporter "
        "--web.listen-address=:9341 --slurm.bin-path=/opt/slurm/bin "
        "--no-collector.nodes.feature-set" in unit
    )
    assert sim.exists("opt/fm-metrics/slurm_exporter-1.8.4-linux-amd64/LICENSE")
    assert "fm-slurm-exporter.service" in sim.active
    agent = sim.file("etc/fm-metrics/prometheus-agent.yml")
    assert '"job_name": "slurm-exporter"' in agent and '"localhost:9341"' in agent
    assert_units_verify(sim)
    again = sim.run_metrics_installer()
    assert again.returncode == 0 and not any(c.startswith("curl") for c in again.calls)


def test_a_slurm_exporter_that_fails_its_checksum_is_refused(tmp_path: Path) -> None:
    sim = created(tmp_path, "controller")
    sim.serve_releases(corrupt=True)
    run = sim.run_metrics_installer()
    assert run.returncode != 0
    assert "refusing slurm_exporter-1.8.4-linux-amd64.tar.gz" in run.output
    assert not sim.exists("opt/fm-metrics/slurm_exporter-1.8.4-linux-amd64")
    assert not sim.exists("etc/systemd/system/fm-slurm-exporter.service")


def test_workers_run_no_slurm_exporter(tmp_path: Path) -> None:
    sim = created(tmp_path, "worker")
    run = sim.run_metrics_installer()
    assert run.returncode == 0, run.output
    assert not sim.exists("etc/systemd/system/fm-slurm-exporter.service")
    assert not any("slurm_exporter" in c for c in run.calls)


def test_controller_keeps_a_prolog_hyperpod_configured(tmp_path: Path) -> None:
    sim = node(tmp_path, "controller")
    sim.write_slurm_conf(SLURM_CONF + "Prolog=/opt/slurm/etc/hyperpod-prolog.sh\n")
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "names its own Prolog or Epilog; keeping them" in run.output
    assert not sim.exists("opt/slurm/etc/fm-hooks.conf")
    assert "fm-hooks.conf" not in sim.file("opt/slurm/etc/slurm.conf")


def _fake_nvidia_smi(sim: SimulatedNode, output: str, status: int = 0) -> None:
    fake = sim.root / "usr" / "bin" / "nvidia-smi"
    fake.write_text(f"#!/usr/bin/env bash\nprintf '%s' '{output}'\nexit {status}\n")
    fake.chmod(0o755)


@pytest.mark.parametrize(
    ("gpus", "status", "refusal"),
    [
        ("".join(f"{i}, No\n" for i in range(8)), 0, None),
        ("".join(f"{i}, No\n" for i in range(7)), 0, "7 of 8 GPUs visible"),
        ("0, No\n1, Yes\n2, No\n3, No\n4, No\n5, Yes\n6, No\n7, No\n", 0, "GPU 1,5"),
        ("", 15, "nvidia-smi failed or did not answer"),
    ],
    ids=["healthy", "gpu-missing", "row-remap-failed", "hung"],
)
def test_worker_prolog_refuses_a_node_with_unhealthy_gpus(
    tmp_path: Path, gpus: str, status: int, refusal: str | None
) -> None:
    sim = created(tmp_path, "worker")
    assert sim.file("opt/slurm/etc/scripts/fm-node.env") == "EXPECTED_GPUS=8\n"
    _fake_nvidia_smi(sim, gpus, status)
    run = sim.run(
        str(sim.root / "opt/slurm/etc/scripts/fm-prolog.sh"),
        env={"SLURM_JOB_ID": "41", "SLURM_JOB_GPUS": "0,1"},
    )
    if refusal is None:
        assert run.returncode == 0, run.output
        assert not sim.exists("var/log/slurm/fm-prolog.log")
        # The DCGM exporter labels GPUs 0 and 1 with the job (hpc_job="41").
        assert sim.file("run/fm-dcgm-jobs/0") == "41\n" == sim.file("run/fm-dcgm-jobs/1")
    else:
        assert run.returncode != 0  # Slurm drains the node and requeues the job
        assert refusal in run.output
        assert refusal in sim.file("var/log/slurm/fm-prolog.log")
        assert not sim.exists("run/fm-dcgm-jobs/0")


def test_epilog_takes_the_job_off_the_gpu_map(tmp_path: Path) -> None:
    sim = created(tmp_path, "worker")
    jobs = sim.root / "run" / "fm-dcgm-jobs"
    jobs.mkdir(parents=True)
    (jobs / "0").write_text("41\n")
    (jobs / "1").write_text("40\n41\n")  # a GPU two jobs share (GRES sharing)
    epilog = str(sim.root / "opt/slurm/etc/scripts/fm-epilog.sh")
    assert sim.run(epilog, env={"SLURM_JOB_ID": "41", "SLURM_JOB_UID": "0"}).returncode == 0
    assert not (jobs / "0").exists()
    assert (jobs / "1").read_text() == "40\n"
    assert sorted(p.name for p in jobs.iterdir()) == ["1"]


def test_worker_epilog_clears_the_job_users_shared_memory(tmp_path: Path) -> None:
    import os

    if os.geteuid() != 0:
        pytest.skip("needs root to give a file to another uid")
    sim = created(tmp_path, "worker")
    shm = sim.root / "dev" / "shm"
    shm.mkdir(parents=True)
    (shm / "nccl-1234").write_text("x")
    os.chown(shm / "nccl-1234", 4242, 4242)
    (shm / "other-user").write_text("y")
    os.chown(shm / "other-user", 4343, 4343)
    epilog = str(sim.root / "opt/slurm/etc/scripts/fm-epilog.sh")
    run = sim.run(epilog, env={"SLURM_JOB_ID": "41", "SLURM_JOB_UID": "4242"})
    assert run.returncode == 0, run.output
    assert not (shm / "nccl-1234").exists() and (shm / "other-user").exists()
    assert "removed 1 entries of uid 4242" in sim.file("var/log/slurm/fm-epilog.log")
    # Root's jobs and missing variables are left alone, and the epilog never fails.
    assert sim.run(epilog, env={"SLURM_JOB_UID": "0"}).returncode == 0
    assert sim.run(epilog).returncode == 0


def test_controller_without_nvml_slurm_writes_no_gres_autodetect(tmp_path: Path) -> None:
    sim = node(tmp_path, "controller", nvml=False)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert not sim.exists("opt/slurm/etc/gres.conf")
    assert "GresTypes=gpu" in sim.file("opt/slurm/etc/accounting.conf")


def test_controller_waits_for_hyperpods_slurm_conf(tmp_path: Path) -> None:
    sim = node(tmp_path, "controller")
    (sim.root / "opt" / "slurm" / "etc" / "slurm.conf").unlink()
    run = sim.run(env={"SLURM_CONF_TIMEOUT": "10"})
    assert run.returncode != 0
    assert "names no controller after 10s" in run.output
    assert not any(c.startswith("systemctl restart slurmctld") for c in run.calls)


def test_login_node_runs_configless_slurmd_and_containers(tmp_path: Path) -> None:
    sim = node(tmp_path, "login", hostname="ip-10-1-0-11")
    run = sim.run()
    assert run.returncode == 0, run.output
    assert "group=login role=login" in run.output
    assert f"--conf-server {CONTROLLER_IP}" in sim.file(
        "etc/systemd/system/slurmd.service.d/fm-conf-server.conf"
    )
    assert sim.exists("usr/local/lib/slurm/spank_pyxis.so")
    # No EFA devices on the login node: Lustre over TCP.
    assert "no EFA device on this node" in run.output
    assert_units_verify(sim)


# ------------------------------------------------------------------------------------- EKS


def eks_params() -> dict[str, Any]:
    return provisioning_parameters(
        orchestrator=Orchestrator.EKS,
        cluster_name="fm-eks",
        region="us-east-1",
        instance_groups=[
            InstanceGroup(name="workers", instance_type="p5.48xlarge", instance_count=2)
        ],
    )


def test_eks_node_moves_containerd_and_kubelet_state_to_the_extra_volume(tmp_path: Path) -> None:
    sim = SimulatedNode(
        tmp_path, params=eks_params(), resource_config=None, address=WORKER_IP, slurm=False
    )
    (sim.root / "var" / "lib" / "containerd").mkdir(parents=True)
    (sim.root / "var" / "lib" / "containerd" / "pause.tar").write_text("image")
    (sim.sim / "active").mkdir()
    (sim.sim / "active" / "containerd").touch()
    run = sim.run()
    assert run.returncode == 0, run.output
    for name in ("containerd", "kubelet"):
        mount = sim.file(f"etc/systemd/system/var-lib-{name}.mount")
        assert f"What=/opt/sagemaker/{name}" in mount and f"Where=/var/lib/{name}" in mount
        assert f"RequiresMountsFor=/var/lib/{name}" in sim.file(
            f"etc/systemd/system/{name}.service.d/fm-state.conf"
        )
        assert f"var-lib-{name}.mount" in sim.enabled
    assert sim.file("opt/sagemaker/containerd/pause.tar") == "image"
    assert run.calls.index("systemctl stop containerd") < run.calls.index(
        "systemctl start var-lib-containerd.mount var-lib-kubelet.mount"
    )
    # No Slurm, no host FSx mount (pods use the CSI driver) and no resource-config lookup.
    assert not any(c.startswith(("mount -t lustre", "ip -4 route get")) for c in run.calls)
    assert_units_verify(sim)


@pytest.mark.parametrize(
    ("mounts", "disk"),
    [(("/opt/sagemaker",), "/opt/sagemaker"), ((), "/opt/sagemaker")],
    ids=["no-nvme", "no-disk"],
)
def test_container_data_falls_back_to_the_extra_volume(
    tmp_path: Path, mounts: tuple[str, ...], disk: str
) -> None:
    """Without the NVMe, Docker and enroot use the extra EBS volume; with neither mounted the
    node still comes up (data on the root volume, said in the log)."""
    sim = node(tmp_path, "worker", mounts=mounts)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert f'"data-root": "{disk}/docker/data-root"' in sim.file("etc/docker/daemon.json")
    assert f"ENROOT_CACHE_PATH {disk}/enroot/user-$(id -u)" in sim.file("etc/enroot/enroot.conf")
    assert ("container data stays on the root volume" in run.output) == (not mounts)


@pytest.mark.parametrize(
    ("mounts", "disk"),
    [(("/opt/dlami/nvme",), "/opt/dlami/nvme"), ((), None)],
    ids=["nvme-only", "no-disk"],
)
def test_eks_node_state_falls_back_to_the_nvme_or_stays(
    tmp_path: Path, mounts: tuple[str, ...], disk: str | None
) -> None:
    sim = SimulatedNode(
        tmp_path,
        params=eks_params(),
        resource_config=None,
        address=WORKER_IP,
        slurm=False,
        mounts=mounts,
    )
    run = sim.run(env={"DISK_WAIT": "0"})
    assert run.returncode == 0, run.output
    if disk is None:
        assert not sim.exists("etc/systemd/system/var-lib-containerd.mount")
        assert "containerd and kubelet stay on the root volume" in run.output
    else:
        mount = sim.file("etc/systemd/system/var-lib-containerd.mount")
        assert f"What={disk}/containerd" in mount


# ------------------------------------------------------------------------------------ users


def _passwd(sim: SimulatedNode) -> dict[str, str]:
    return {line.split(":")[0]: line for line in sim.file("sim/passwd").splitlines()}


def test_users_get_the_same_accounts_shared_homes_and_one_key_pair_on_every_node(
    tmp_path: Path,
) -> None:
    """The controller and a worker mount one file system: both have the same accounts, homes
    on /fsx/home and one key pair per user, authorized once (a second run changes nothing:
    test_a_second_run_changes_nothing)."""
    shared = tmp_path / "fsx"
    nodes = [node(tmp_path / role, role, shared_fsx=shared) for role in ("controller", "worker")]
    runs = [sim.run() for sim in nodes]
    for run in runs:
        assert run.returncode == 0, run.output
    keygens = sum(c.startswith("ssh-keygen -q -t ed25519") for run in runs for c in run.calls)
    assert keygens == 3  # ubuntu, alice and bob: once each, on the first node
    expected = {
        "ubuntu": "ubuntu:x:1000:1000::/fsx/home/ubuntu:/bin/bash",
        "alice": "alice:x:2001:2001::/fsx/home/alice:/bin/bash",
        "bob": "bob:x:2002:3000::/fsx/home/bob:/bin/bash",
    }
    for sim in nodes:
        assert _passwd(sim) == expected
        groups = sim.file("sim/group").splitlines()
        assert "alice:x:2001:" in groups and "bob:x:3000:" in groups
        assert "sudo:x:27:ubuntu,bob" in groups
        assert any(g.startswith("docker:x:") and g.endswith(":bob") for g in groups)
        ssh = sim.file("etc/ssh/ssh_config.d/fm-cluster.conf")
        assert "Host localhost 127.0.0.1 ip-*-*-*-*" in ssh and "StrictHostKeyChecking no" in ssh
    for user, uid, gid in (("ubuntu", 1000, 1000), ("alice", 2001, 2001), ("bob", 2002, 3000)):
        dot_ssh = shared / "home" / user / ".ssh"
        public = (dot_ssh / "id_ed25519.pub").read_text().strip()
        assert public.endswith(f"{user}@fm-test")
        assert (dot_ssh / "authorized_keys").read_text().splitlines().count(public) == 1
        assert dot_ssh.stat().st_mode & 0o777 == 0o700
        assert (dot_ssh / "id_ed25519").stat().st_mode & 0o777 == 0o600
        assert (dot_ssh / "authorized_keys").stat().st_mode & 0o777 == 0o600
        assert f"chown -R {uid}:{gid} {nodes[0].root}/fsx/home/{user}/.ssh" in runs[0].calls
    # Homes start from the default user's old home and from /etc/skel.
    assert (shared / "home" / "ubuntu" / ".bashrc").read_text() == "# the AMI's .bashrc\n"
    assert (shared / "home" / "alice" / ".profile").exists()


@pytest.mark.parametrize(
    ("passwd", "group", "message"),
    [
        (
            "carol:x:2001:2001::/home/carol:/bin/bash\n",
            "",
            "uid 2001 (for user alice) belongs to user carol",
        ),
        (
            "alice:x:2005:2005::/home/alice:/bin/bash\n",
            "",
            "user alice is 2001:2001 in the profile but 2005:2005",
        ),
        ("", "staff:x:3000:\n", "gid 3000 (for group bob) belongs to group staff"),
    ],
    ids=["uid-taken", "name-with-other-uid", "gid-taken"],
)
def test_an_account_that_clashes_with_the_profile_stops_the_users_step(
    tmp_path: Path, passwd: str, group: str, message: str
) -> None:
    sim = node(tmp_path, "worker")
    with (sim.sim / "passwd").open("a") as handle:
        handle.write(passwd)
    with (sim.sim / "group").open("a") as handle:
        handle.write(group)
    (sim.root / "fsx").mkdir()
    params = str(sim.scripts / "provisioning_parameters.json")
    run = sim.run("after_fsx.d/10-users.sh", "worker", "workers", params)
    assert run.returncode != 0
    assert message in run.output


def test_a_busy_default_user_keeps_its_home_and_the_node_goes_on(tmp_path: Path) -> None:
    sim = node(tmp_path, "worker")
    sim.inject("busy-ubuntu")  # ubuntu runs processes: usermod refuses to move its home
    (sim.root / "fsx").mkdir()
    params = str(sim.scripts / "provisioning_parameters.json")
    run = sim.run("after_fsx.d/10-users.sh", "worker", "workers", params)
    assert run.returncode == 0, run.output
    assert "could not move ubuntu's home to /fsx/home/ubuntu on this node yet" in run.output
    assert _passwd(sim)["ubuntu"] == "ubuntu:x:1000:1000::/home/ubuntu:/bin/bash"
    assert _passwd(sim)["alice"] == "alice:x:2001:2001::/fsx/home/alice:/bin/bash"


def test_hotfix_waits_for_dpkg_and_skips_what_is_not_installed(tmp_path: Path) -> None:
    sim = node(tmp_path, "worker")
    sim.inject("dpkg-lock-failures", 2)
    run = sim.run("hotfix.sh")
    assert run.returncode == 0, run.output
    assert sum(c == "apt-mark hold lustre-client-modules-aws" for c in run.calls) == 3
    assert "held lustre-client-modules-aws" in run.output
    bare = node(tmp_path / "bare", "worker", packages=())
    run = bare.run("hotfix.sh")
    assert run.returncode == 0, run.output
    assert "lustre-client-modules-aws is not installed; nothing to hold" in run.output
    assert not any(c.startswith("apt-mark hold") for c in run.calls)
