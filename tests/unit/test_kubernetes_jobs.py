"""Training runtimes and first jobs: schema-valid for every supported Kubernetes version, every
GPU and EFA device of the node, huge pages, /dev/shm, FSx, the workload's names and queue, and
the nccl-tests launcher script run on a simulated launcher."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.domain import names
from fm_constructs.kubernetes import images, jobs, node_shape
from fm_constructs.kubernetes.node_shape import WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import (
    JAX_RUNTIME,
    MPI_RUNTIME,
    TORCH_RUNTIME,
    training_runtimes,
)
from fm_constructs.orchestration import eks_charts
from fm_constructs.planning.kubernetes_versions import SUPPORTED_VERSIONS
from fm_constructs.planning.nccl_bandwidth import MIN_LINE_RATE_MESSAGE_BYTES
from tests.kubernetes_schemas import assert_valid

P5 = WorkloadTarget("pretraining", "p5.48xlarge")
P4D = WorkloadTarget("post_training", "p4d.24xlarge")
TYPES = ["p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "g6e.48xlarge", "p6-b200.48xlarge"]


def _objects(target: WorkloadTarget) -> list[dict[str, Any]]:
    return [*training_runtimes(target), *jobs.first_job_objects(target, 2)]


@pytest.mark.parametrize("version", sorted(SUPPORTED_VERSIONS))
@pytest.mark.parametrize("instance_type", TYPES)
def test_runtimes_and_jobs_match_their_schemas(version: str, instance_type: str) -> None:
    assert_valid(_objects(WorkloadTarget("pretraining", instance_type)), kubernetes_version=version)


def _node_pod(runtime: dict[str, Any], job: str = "node") -> dict[str, Any]:
    (replicated,) = (
        r for r in runtime["spec"]["template"]["spec"]["replicatedJobs"] if r["name"] == job
    )
    pod: dict[str, Any] = replicated["template"]["spec"]["template"]["spec"]
    return pod


@pytest.mark.parametrize("target", [P5, P4D], ids=["p5", "p4d"])
def test_every_runtime_owns_the_node_with_all_gpus_and_efa_devices(target: WorkloadTarget) -> None:
    spec = target.spec
    for runtime in training_runtimes(target):
        pod = _node_pod(runtime)
        (container,) = pod["containers"]
        limits = container["resources"]["limits"]
        assert limits["nvidia.com/gpu"] == str(spec.accelerator_count)
        assert limits["vpc.amazonaws.com/efa"] == str(spec.max_efa_interfaces)
        assert limits["hugepages-2Mi"] == "5120Mi"
        assert container["resources"]["requests"]["hugepages-2Mi"] == "5120Mi"
        mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
        assert mounts == {"/fsx": "fsx", "/dev/shm": "dshm"}
        volumes = {v["name"]: v for v in pod["volumes"]}
        assert volumes["fsx"]["persistentVolumeClaim"]["claimName"] == names.fsx_claim_name(
            target.workload
        )
        assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
        assert pod["serviceAccountName"] == names.service_account_name(target.workload)
        assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": spec.name}
        assert runtime["metadata"]["namespace"] == names.workload_namespace(target.workload)
    assert P5.efa_devices == 32 and P4D.efa_devices == 4


def test_nccl_environment_leaves_what_the_plugin_chooses_unset() -> None:
    for runtime in training_runtimes(P5):
        env = {e["name"]: e["value"] for e in _node_pod(runtime)["containers"][0]["env"]}
        assert env["NCCL_SOCKET_IFNAME"] == "^docker,lo,veth"
        for unset in ("FI_PROVIDER", "FI_EFA_USE_DEVICE_RDMA", "NCCL_PROTO", "RDMAV_FORK_SAFE"):
            assert unset not in env
        assert not any(k.startswith(("NCCL_BUFFSIZE", "NCCL_MIN_NCHANNELS")) for k in env)


def test_runtimes_use_pinned_efa_capable_images_with_sources() -> None:
    by_name = {r["metadata"]["name"]: r for r in training_runtimes(P5)}
    image = {name: _node_pod(r)["containers"][0]["image"] for name, r in by_name.items()}
    assert image == {
        TORCH_RUNTIME: images.PYTORCH_TRAINING.reference,
        JAX_RUNTIME: images.JAX.reference,
        MPI_RUNTIME: images.NCCL_TESTS.reference,
    }
    for pin in images.ALL_IMAGES:
        assert pin.tag and pin.tag != "latest" and pin.source.startswith("https://")


def test_jobs_are_admitted_through_the_workloads_local_queue() -> None:
    """Every first job but the privileged DCGM diagnostic goes through the workload's queue;
    that one runs in the diagnostics namespace, which Kueue does not manage."""
    for job in jobs.first_job_objects(P5, 2):
        if job["metadata"]["name"] == jobs.DCGM_DIAG_JOB:
            assert job["metadata"]["namespace"] == names.diagnostics_namespace("pretraining")
            assert "kueue.x-k8s.io/queue-name" not in job["metadata"]["labels"]
            continue
        assert job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == names.local_queue_name(
            "pretraining"
        )
        assert job["metadata"]["namespace"] == "pretraining"


def test_nccl_tests_run_all_gpus_of_n_nodes_with_large_messages() -> None:
    job = jobs.nccl_tests_trainjob(P5, 4)
    trainer = job["spec"]["trainer"]
    assert (trainer["numNodes"], trainer["numProcPerNode"]) == (4, 8)
    command = trainer["command"][2]
    assert "-np 32" in command and "all_reduce_perf" in command and "-e 16G" in command
    assert job["spec"]["runtimeRef"]["name"] == MPI_RUNTIME
    # Every GPU type's largest message is big enough for the line-rate comparison.
    for instance_type in TYPES:
        size = jobs.max_message_bytes(WorkloadTarget("pretraining", instance_type))
        assert MIN_LINE_RATE_MESSAGE_BYTES <= size <= 16 << 30


def test_dcgm_diagnostic_level_2_one_pod_per_node_with_all_gpus() -> None:
    job = jobs.dcgm_diag_job(P5, 3)
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert "dcgmi diag -r 2" in container["command"][2]
    assert container["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert (job["spec"]["completions"], job["spec"]["parallelism"]) == (3, 3)
    anti = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert anti[0]["topologyKey"] == "kubernetes.io/hostname"


def test_fsdp_job_reads_from_fsx_and_checkpoints_there() -> None:
    job = jobs.fsdp_trainjob(P5, 2)
    command = job["spec"]["trainer"]["command"]
    assert command[0] == "torchrun" and command[1].startswith("/fsx/")
    assert any(arg.startswith("/fsx/checkpoints/") for arg in command)
    assert job["spec"]["runtimeRef"]["name"] == TORCH_RUNTIME


def test_neuron_types_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="NVIDIA GPU types"):
        training_runtimes(WorkloadTarget("pretraining", "trn2.48xlarge"))


def test_taint_keys_match_the_node_groups() -> None:
    assert node_shape.TAINT_KEYS == {
        "NVIDIA": eks_charts.GPU_TAINT_KEY,
        "NEURON": eks_charts.NEURON_TAINT_KEY,
    }


def test_hyperpod_nodes_are_selected_by_their_ml_type_name() -> None:
    target = WorkloadTarget("pretraining", "p5.48xlarge", hyperpod=True)
    assert node_shape.node_selector(target) == {
        "node.kubernetes.io/instance-type": "ml.p5.48xlarge"
    }


# ------------------------------------------------------------------- the launcher script


def _fake(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _launcher(tmp_path: Path, nodes: int) -> str:
    """The launcher command with the key mount, private copy and Open MPI under ``tmp_path``
    (the real SSH path is tested with OpenSSH in test_mpi_ssh.py)."""
    mount = tmp_path / "mount"
    mount.mkdir(exist_ok=True)
    (mount / "id_rsa").write_text("key\n")
    (tmp_path / "openmpi" / "bin").mkdir(parents=True, exist_ok=True)
    return jobs.nccl_tests_command(
        P5,
        nodes,
        mpi_prefix=str(tmp_path / "openmpi"),
        mount_path=str(mount),
        private_dir=str(tmp_path / "ssh"),
    )


def test_launcher_waits_for_every_node_then_runs_mpirun(tmp_path: Path) -> None:
    """A simulated launcher: Trainer's hostfile, an ssh that fails once per host, an mpirun that
    records its arguments."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(
        "nccl-tests-node-0-0.nccl-tests slots=8\nnccl-tests-node-0-1.nccl-tests slots=8\n"
    )
    command = _launcher(tmp_path, 2)
    state = tmp_path / "ssh-state"
    state.mkdir()
    _fake(
        bin_dir,
        "ssh",
        f'host="${{@: -2:1}}"; f="{state}/$host"; '
        'if [ -e "$f" ]; then echo "$host" >> "' + str(tmp_path / "reached") + '"; exit 0; fi; '
        'touch "$f"; exit 255\n',
    )
    _fake(bin_dir, "sleep", "exit 0\n")
    _fake(tmp_path / "openmpi" / "bin", "mpirun", f'echo "$@" > "{tmp_path / "mpirun.args"}"\n')
    env = {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "OMPI_MCA_orte_default_hostfile": str(hostfile),
    }
    bash = shutil.which("bash")
    assert bash is not None
    result = subprocess.run(
        [bash, "-c", command],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "reached").read_text().split() == [
        "nccl-tests-node-0-0.nccl-tests",
        "nccl-tests-node-0-1.nccl-tests",
    ]
    args = (tmp_path / "mpirun.args").read_text()
    assert "-np 16" in args and "/opt/nccl-tests/build/all_reduce_perf" in args
    assert f"--prefix {tmp_path / 'openmpi'} " in args
    assert f"plm_rsh_args -F {tmp_path / 'ssh'}/ssh_config -o ConnectionAttempts=10" in args


def test_mpirun_is_called_by_the_images_absolute_path_with_its_prefix() -> None:
    command = jobs.nccl_tests_command(P5, 2)
    assert "exec /opt/amazon/openmpi/bin/mpirun --prefix /opt/amazon/openmpi " in command


def test_launcher_gives_up_on_a_node_that_never_accepts_ssh(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("dead-node slots=8\n")
    _fake(
        bin_dir,
        "ssh",
        'echo "ssh: connect to host dead-node port 22: No route to host" >&2; exit 255\n',
    )
    _fake(bin_dir, "sleep", "exit 0\n")
    command = _launcher(tmp_path, 1)
    _fake(tmp_path / "openmpi" / "bin", "mpirun", "exit 0\n")
    result = subprocess.run(
        ["bash", "-c", command],
        env={
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "OMPI_MCA_orte_default_hostfile": str(hostfile),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert "node dead-node does not accept ssh after 600 s: ssh: connect to host dead-node" in (
        result.stderr
    )
    assert "No route to host" in result.stderr


def test_every_resource_a_training_pod_requests_is_covered_by_the_kueue_queues() -> None:
    """Kueue refuses to admit a job that requests a resource its ClusterQueue does not cover
    (huge pages and EFA devices included)."""
    kueue = pytest.importorskip(
        "fm_constructs.kubernetes.kueue", reason="the Kueue renderers are not in this tree yet"
    )
    requested: set[str] = set()
    for runtime in training_runtimes(P5):
        for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            pod = job["template"]["spec"]["template"]["spec"]
            for container in pod["containers"]:
                requested |= set(container.get("resources", {}).get("requests", {}))
    assert requested <= set(kueue.COVERED_RESOURCES), requested - set(kueue.COVERED_RESOURCES)


def test_training_pods_follow_the_job_metrics_contract() -> None:
    from fm_constructs.domain import job_metrics

    for runtime in training_runtimes(P5):
        (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"][-1:]
        metadata = job["template"]["spec"]["template"].get("metadata", {})
        if runtime["metadata"]["name"] == MPI_RUNTIME:
            assert "annotations" not in metadata  # nccl-tests serve no metrics
            continue
        assert job_metrics.pod_annotations().items() <= metadata["annotations"].items()
        assert job_metrics.pod_labels("pretraining").items() <= metadata["labels"].items()


def test_training_pods_are_covered_by_a_budget_that_allows_no_eviction() -> None:
    """Every pod a runtime starts carries the label the workload's PodDisruptionBudget selects;
    the budget allows no voluntary eviction of a Ready training pod."""
    from fm_constructs.kubernetes.training_runtimes import (
        TRAINING_POD_LABEL,
        training_pod_budget,
    )

    budget = training_pod_budget(P5)
    assert budget["metadata"]["namespace"] == names.workload_namespace("pretraining")
    assert budget["spec"]["maxUnavailable"] == 0
    assert budget["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow"
    selector = budget["spec"]["selector"]["matchLabels"]
    for runtime in training_runtimes(P5):
        for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
            labels = job["template"]["spec"]["template"]["metadata"]["labels"]
            assert selector.items() <= labels.items(), (runtime["metadata"]["name"], job["name"])
    assert selector == {TRAINING_POD_LABEL: "true"}
    for version in sorted(SUPPORTED_VERSIONS):
        assert_valid([budget], kubernetes_version=version)
