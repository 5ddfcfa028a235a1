"""The MPI runtime's SSH path with real OpenSSH (Debian's openssh-server and openssh-client).

The key files are laid out as Kubeflow Trainer mounts them (kubeflow/trainer v2.3.0,
``pkg/constants/constants.go``: ``MPISSHPrivateKeyFileMode`` 0o640, ``MPISSHPublicKeyFileMode``
0o644 for ``id_rsa.pub`` and ``authorized_keys``, ``MPISSHAuthDefaultMode`` 0o400;
``pkg/runtime/framework/plugins/mpi/mpi.go``: an EC P-521 key in PEM, a Secret volume). The
kubelet writes a Secret volume as a timestamped directory behind a ``..data`` symlink, files
owned by root. The pods run as root (the runtime's securityContext), as this test does: sshd
runs on a loopback port with the configuration the node pod renders, and the launcher's rendered
command reaches it with a real ``ssh``, through its wait loop and through the ``plm_rsh_args``
``mpirun`` passes to ssh.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fm_constructs.kubernetes import jobs, mpi_ssh
from fm_constructs.kubernetes.node_shape import WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import ROOT_SECURITY_CONTEXT, mpi_runtime

#: Real OpenSSH daemons on loopback: the end-to-end stage (make e2e, run by .ci/run after make
#: test).
pytestmark = pytest.mark.e2e

P5 = WorkloadTarget("pretraining", "p5.48xlarge")
SSHD = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)

needs_openssh = pytest.mark.skipif(
    SSHD is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None,
    reason="OpenSSH (Debian openssh-server and openssh-client) is not installed",
)
needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="the MPI pods run as root; this test needs root to be them"
)


def _secret_volume(path: Path, files: dict[str, tuple[bytes, int]]) -> None:
    """A Secret volume as the kubelet writes it: ``..<timestamp>/`` holding the files with
    their modes, ``..data`` pointing at it, and one symlink per key."""
    stamp = path / "..2026_12_01_00_00_00.000000001"
    stamp.mkdir(parents=True)
    for name, (content, mode) in files.items():
        (stamp / name).write_bytes(content)
        os.chown(stamp / name, 0, 0)
        (stamp / name).chmod(mode)
    (path / "..data").symlink_to(stamp.name)
    for name in files:
        (path / name).symlink_to(f"..data/{name}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def trainer_mount() -> Iterator[Path]:
    """A base under /run (sshd's StrictModes refuses an authorized_keys below /tmp's 1777)."""
    base = Path(tempfile.mkdtemp(prefix="fm-mpi-ssh-", dir="/run"))
    try:
        key = base / "keygen" / "key"
        key.parent.mkdir()
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ecdsa", "-b", "521", "-m", "PEM", "-N", "", "-f", str(key)],
            check=True,
        )
        public = key.with_suffix(".pub").read_bytes()
        _secret_volume(
            base / "mount",
            {
                "id_rsa": (key.read_bytes(), 0o640),
                "id_rsa.pub": (public, 0o644),
                "authorized_keys": (public, 0o644),
            },
        )
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _bash(script: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        ["bash", "-c", script], capture_output=True, text=True, check=False, timeout=60, **kwargs
    )


def test_the_runtime_mounts_the_keys_outside_ssh_paths_and_runs_as_root() -> None:
    runtime = mpi_runtime(P5)
    assert runtime["spec"]["mlPolicy"]["mpi"]["sshAuthMountPath"] == mpi_ssh.MOUNT_PATH
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        (container,) = job["template"]["spec"]["template"]["spec"]["containers"]
        # Trainer mounts the Secret only into containers named "node" (mpi.go).
        assert container["name"] == "node"
        assert container["securityContext"] == ROOT_SECURITY_CONTEXT
        if job["name"] == "node":
            assert container["command"] == ["/bin/bash", "-c", mpi_ssh.node_start()]


@pytest.mark.parametrize(
    "script",
    [
        mpi_ssh.node_start(),
        jobs.nccl_tests_command(P5, 2),
    ],
    ids=["node", "launcher"],
)
def test_rendered_scripts_are_shellcheck_clean(script: str, tmp_path: Path) -> None:
    path = tmp_path / "script.sh"
    path.write_text("#!/usr/bin/env bash\n" + script + "\n")
    result = subprocess.run(["shellcheck", str(path)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout


@needs_openssh
@needs_root
def test_root_ssh_refuses_the_key_where_trainer_mounts_it(trainer_mount: Path) -> None:
    """Why the copy exists: as root, the 0640 root-owned key is the caller's own and too open."""
    result = subprocess.run(
        ["ssh-keygen", "-y", "-f", str(trainer_mount / "mount" / "id_rsa")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "UNPROTECTED PRIVATE KEY FILE" in result.stderr


@needs_openssh
@needs_root
def test_launcher_reaches_node_with_real_openssh(trainer_mount: Path) -> None:
    mount = str(trainer_mount / "mount")
    port = _free_port()
    node_dir = str(trainer_mount / "node")
    launcher_dir = str(trainer_mount / "launcher")
    assert SSHD is not None
    sshd = subprocess.Popen(
        ["bash", "-c", mpi_ssh.node_start(mount, node_dir, port, sshd=SSHD)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # The node's private copy: 0600 files in a 0700 directory.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert sshd.poll() is None, sshd.stdout.read() if sshd.stdout else ""
            time.sleep(0.1)
        mode = stat.S_IMODE(os.stat(f"{node_dir}/authorized_keys").st_mode)
        assert mode == 0o600 and stat.S_IMODE(os.stat(node_dir).st_mode) == 0o700

        # The launcher's rendered command, with a stand-in for mpirun that does what Open MPI
        # does with plm_rsh_args and --prefix: ssh to every host and start a daemon by path.
        prefix = trainer_mount / "openmpi"
        (prefix / "bin").mkdir(parents=True)
        mpirun = prefix / "bin" / "mpirun"
        mpirun.write_text(
            "#!/usr/bin/env bash\nset -eu\n"
            'while [ "$#" -gt 0 ]; do case "$1" in\n'
            '  --prefix) prefix="$2"; shift 2;;\n'
            '  --mca) if [ "$2" = plm_rsh_args ]; then rsh="$3"; fi; shift 3;;\n'
            "  *) shift;;\n"
            "esac; done\n"
            "while read -r host _; do\n"
            "  # shellcheck disable=SC2086\n"
            '  ssh $rsh -n "$host" "test -x $prefix/bin/mpirun && echo orted-$host-$(id -u)"\n'
            'done < "$OMPI_MCA_orte_default_hostfile"\n'
        )
        mpirun.chmod(0o755)
        hostfile = trainer_mount / "hostfile"
        hostfile.write_text("127.0.0.1 slots=8\n")
        command = jobs.nccl_tests_command(
            P5,
            1,
            mpi_prefix=str(prefix),
            mount_path=mount,
            private_dir=launcher_dir,
            port=port,
        )
        result = _bash(command, env={**os.environ, "OMPI_MCA_orte_default_hostfile": str(hostfile)})
        assert result.returncode == 0, result.stderr
        # Remote command ran as root on the node: ssh from launcher to node works.
        assert result.stdout.strip() == "orted-127.0.0.1-0"
        key_mode = stat.S_IMODE(os.stat(f"{launcher_dir}/id_rsa").st_mode)
        assert key_mode == 0o600
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)


@needs_openssh
@needs_root
def test_the_wait_names_the_node_and_what_ssh_said(trainer_mount: Path) -> None:
    """A node whose sshd never comes up: the launcher names it and quotes ssh's reason."""
    launcher_dir = str(trainer_mount / "launcher")
    port = _free_port()  # nothing listens here
    hostfile = trainer_mount / "hostfile"
    hostfile.write_text("127.0.0.1 slots=8\n")
    script = (
        "set -eu; "
        + mpi_ssh.launcher_setup(str(trainer_mount / "mount"), launcher_dir, port)
        + "; "
        + mpi_ssh.wait_for_nodes(str(hostfile), seconds=2, private_dir=launcher_dir, interval=1)
    )
    result = _bash(script)
    assert result.returncode == 1
    assert "node 127.0.0.1 does not accept ssh after 2 s" in result.stderr
    assert "Connection refused" in result.stderr
