"""Jobs a user runs on a fresh cluster: nccl-tests across nodes, the DCGM level-2 health check,
and a first multi-node PyTorch FSDP job. Each is admitted through the workload's Kueue
LocalQueue (``kueue.x-k8s.io/queue-name``) and runs as the workload's service account.
"""

from __future__ import annotations

import shlex
from typing import Any

from fm_constructs.domain import names
from fm_constructs.kubernetes import images, mpi_ssh
from fm_constructs.kubernetes.node_shape import (
    WorkloadTarget,
    accelerator_resource,
    node_selector,
    queue_labels,
    tolerations,
)
from fm_constructs.kubernetes.training_runtimes import (
    API_VERSION,
    MPI_RUNTIME,
    TORCH_RUNTIME,
)

NCCL_TESTS_JOB = "nccl-tests"
DCGM_DIAG_JOB = "dcgm-diag"
FSDP_JOB = "fsdp-first-job"
#: Where nccl-tests live in the AWS nccl-tests image.
NCCL_TESTS_BIN = "/opt/nccl-tests/build/all_reduce_perf"
#: How long the launcher waits for every node's sshd before giving up.
SSH_WAIT_SECONDS = 600
#: Open MPI of the EFA installer in the nccl-tests image. ``mpirun`` is called by this path and
#: given it as ``--prefix``, so the remote ``orted`` is found over a non-interactive ssh session
#: whose PATH does not include it.
MPI_PREFIX = "/opt/amazon/openmpi"
#: Largest all_reduce message: 16 GiB, or less so that send and receive buffers fit in a
#: quarter of one GPU's memory each.
MAX_MESSAGE_BYTES = 16 << 30


def max_message_bytes(target: WorkloadTarget) -> int:
    """The largest power-of-two message (<= 16 GiB) whose buffers fit the GPU comfortably."""
    budget = int(target.spec.accelerator_memory_gib * (1 << 30) / 4)
    size = 1 << 30
    while size * 2 <= min(budget, MAX_MESSAGE_BYTES):
        size *= 2
    return size


def _size_arg(num_bytes: int) -> str:
    return f"{num_bytes >> 30}G" if num_bytes >= 1 << 30 else f"{num_bytes >> 20}M"


def nccl_tests_command(
    target: WorkloadTarget,
    nodes: int,
    *,
    mpi_prefix: str = MPI_PREFIX,
    mount_path: str = mpi_ssh.MOUNT_PATH,
    private_dir: str = mpi_ssh.PRIVATE_DIR,
    port: int = mpi_ssh.SSH_PORT,
) -> str:
    """The launcher's shell command: take the SSH key to a private copy, wait for every node's
    sshd, then mpirun all_reduce_perf on all GPUs of ``nodes`` nodes (8 B to the largest
    message, factor 2, checked). The keyword arguments move paths for tests."""
    ranks = nodes * target.accelerators
    mpirun = [
        f"{mpi_prefix}/bin/mpirun",
        "--prefix",
        mpi_prefix,
        "--allow-run-as-root",
        "--tag-output",
        "-np",
        str(ranks),
        "--bind-to",
        "none",
        "-x",
        "NCCL_DEBUG",
        "-x",
        "NCCL_SOCKET_IFNAME",
        "-x",
        "LD_LIBRARY_PATH",
        "-x",
        "PATH",
        "--mca",
        "plm_rsh_args",
        mpi_ssh.rsh_args(private_dir),
        "--mca",
        "pml",
        "^ucx",
        "--mca",
        "btl",
        "tcp,self",
        "--mca",
        "btl_tcp_if_exclude",
        "lo,docker0",
        NCCL_TESTS_BIN,
        "-b",
        "8",
        "-e",
        _size_arg(max_message_bytes(target)),
        "-f",
        "2",
        "-g",
        "1",
        "-c",
        "1",
        "-n",
        "20",
    ]
    wait = mpi_ssh.wait_for_nodes("$hostfile", seconds=SSH_WAIT_SECONDS, private_dir=private_dir)
    return (
        "set -eu; "
        'hostfile="${OMPI_MCA_orte_default_hostfile:?the MPI hostfile Trainer mounts}"; '
        f"{mpi_ssh.launcher_setup(mount_path, private_dir, port)}; "
        f"{wait}; "
        f"exec {shlex.join(mpirun)}"
    )


def _trainjob(
    target: WorkloadTarget, name: str, runtime: str, nodes: int, command: list[str]
) -> dict[str, Any]:
    """A TrainJob ``name`` in the workload's queue: ``command`` on every accelerator of
    ``nodes`` nodes of the TrainingRuntime ``runtime``."""
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": target.namespace, "labels": queue_labels(target)},
        "spec": {
            "runtimeRef": {
                "apiGroup": "trainer.kubeflow.org",
                "kind": "TrainingRuntime",
                "name": runtime,
            },
            "trainer": {
                "numNodes": nodes,
                "numProcPerNode": target.accelerators,
                "command": command,
            },
        },
    }


def nccl_tests_trainjob(target: WorkloadTarget, nodes: int) -> dict[str, Any]:
    """nccl-tests ``all_reduce_perf`` across ``nodes`` nodes through the MPI runtime."""
    if nodes < 1:
        raise ValueError(f"nodes must be >= 1, got {nodes}")
    return _trainjob(
        target,
        NCCL_TESTS_JOB,
        MPI_RUNTIME,
        nodes,
        ["/bin/bash", "-c", nccl_tests_command(target, nodes)],
    )


def fsdp_trainjob(
    target: WorkloadTarget,
    nodes: int,
    *,
    script: str = "/fsx/datasets/fsdp/train_fsdp.py",
    args: tuple[str, ...] = (
        "--data",
        "/fsx/datasets/tokens.bin",
        "--checkpoint-dir",
        "/fsx/checkpoints/fsdp-first-job",
    ),
) -> dict[str, Any]:
    """A multi-node PyTorch job: torchrun (rendezvous from Trainer's PET_* environment) runs
    ``script`` from FSx on every GPU of ``nodes`` nodes, checkpointing under /fsx/checkpoints.
    The defaults run ``examples/first-job/train_fsdp.py`` copied to ``s3://<bucket>/datasets/``
    (imported at /fsx/datasets by the file system's data repository association)."""
    return _trainjob(target, FSDP_JOB, TORCH_RUNTIME, nodes, ["torchrun", script, *args])


def dcgm_diag_job(target: WorkloadTarget, nodes: int) -> dict[str, Any]:
    """DCGM diagnostics level 2 on ``nodes`` GPU nodes, one pod per node (each takes every GPU
    of its node, so it only runs where no training holds them). A pod fails when any check
    fails; its log names the GPU and the test.

    It runs in the workload's diagnostics namespace: DCGM level 2 needs SYS_ADMIN, which the
    workload namespace's Pod Security level refuses. That namespace is not Kueue-managed and
    has no AWS identity, so the job carries no queue label and uses the namespace's default
    service account; the scheduler places it only on nodes whose GPUs are all free."""
    spec = target.spec
    if spec.eks_ami_family != "NVIDIA":
        raise ValueError(f"DCGM diagnostics need NVIDIA GPUs; {spec.name} has none")
    labels = {"app.kubernetes.io/name": DCGM_DIAG_JOB}
    gpus = {accelerator_resource(spec): str(spec.accelerator_count)}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": DCGM_DIAG_JOB,
            "namespace": names.diagnostics_namespace(target.workload),
            "labels": labels,
        },
        "spec": {
            "completions": nodes,
            "parallelism": nodes,
            "backoffLimit": 0,
            "ttlSecondsAfterFinished": 86400,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "automountServiceAccountToken": False,
                    "restartPolicy": "Never",
                    "nodeSelector": node_selector(target),
                    "tolerations": tolerations(spec),
                    "affinity": {
                        "podAntiAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": [
                                {
                                    "labelSelector": {"matchLabels": labels},
                                    "topologyKey": "kubernetes.io/hostname",
                                }
                            ]
                        }
                    },
                    "containers": [
                        {
                            "name": "dcgm-diag",
                            "image": images.DCGM.reference,
                            "command": [
                                "/bin/bash",
                                "-c",
                                "set -eu; nv-hostengine; sleep 2; dcgmi discovery -l; "
                                "exec dcgmi diag -r 2",
                            ],
                            "resources": {"requests": dict(gpus), "limits": dict(gpus)},
                            "securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}},
                        }
                    ],
                },
            },
        },
    }


def first_job_objects(target: WorkloadTarget, nodes: int) -> list[dict[str, Any]]:
    """The jobs of the first-job guide, in the order a user runs them."""
    return [
        dcgm_diag_job(target, nodes),
        nccl_tests_trainjob(target, nodes),
        fsdp_trainjob(target, nodes),
    ]


__all__ = [
    "DCGM_DIAG_JOB",
    "FSDP_JOB",
    "NCCL_TESTS_JOB",
    "dcgm_diag_job",
    "first_job_objects",
    "fsdp_trainjob",
    "max_message_bytes",
    "nccl_tests_command",
    "nccl_tests_trainjob",
]
