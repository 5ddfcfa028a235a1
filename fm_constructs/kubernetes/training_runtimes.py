"""Kubeflow Trainer runtimes of a workload, EFA-aware (``trainer.kubeflow.org/v1alpha1``).

The Trainer chart ships its own runtimes switched off, and they request no EFA device, no
huge pages and no shared memory. These namespaced ``TrainingRuntime`` objects live in the
workload's namespace and run as its service account on its nodes:

* :data:`TORCH_RUNTIME` (``torch: {}``): Trainer starts ``torchrun`` with the ``PET_*``
  rendezvous environment on every node; the container is the AWS PyTorch DLC.
* :data:`JAX_RUNTIME` (``jax: {}``): Trainer sets the JAX coordinator environment; the
  container is the JAX-Toolbox image.
* :data:`MPI_RUNTIME` (``mpi``, OpenMPI): a launcher job and ``node`` jobs running sshd; Trainer
  generates the SSH keys and the hostfile. nccl-tests run through it.

Shapes follow the chart's own runtime manifests at the pinned version (replicated jobs named
``node`` and ``launcher``, containers named ``node``, the ``trainjob-ancestor-step: trainer``
label on the job that runs the training).
"""

from __future__ import annotations

from typing import Any

from fm_constructs.domain import job_metrics
from fm_constructs.domain.topology import (
    PREFERRED_LEVEL,
    PREFERRED_TOPOLOGY_ANNOTATION,
    has_instance_topology,
)
from fm_constructs.kubernetes import images, mpi_ssh
from fm_constructs.kubernetes.node_shape import (
    WorkloadTarget,
    nccl_env,
    node_resources,
    node_selector,
    tolerations,
    volume_mounts,
    volumes,
)

API_VERSION = "trainer.kubeflow.org/v1alpha1"
TORCH_RUNTIME = "fm-torch-distributed"
JAX_RUNTIME = "fm-jax-distributed"
MPI_RUNTIME = "fm-mpi"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
FRAMEWORK_LABEL = "trainer.kubeflow.org/framework"
#: Where Trainer mounts the MPI SSH keys; both pods copy them to a private 0600 copy at start
#: (see ``kubernetes.mpi_ssh``: as root, OpenSSH refuses the 0640 key Trainer mounts).
SSH_AUTH_PATH = mpi_ssh.MOUNT_PATH
#: Label on every pod a training runtime starts; the workload's PodDisruptionBudget selects it.
TRAINING_POD_LABEL = "fm-constructs/training-pod"
#: Name of that PodDisruptionBudget.
TRAINING_POD_BUDGET = "fm-training-pods"
#: The MPI pods run as root (sshd on port 22, the nccl-tests image's user); stated, not assumed.
ROOT_SECURITY_CONTEXT: dict[str, Any] = {"runAsUser": 0, "runAsGroup": 0}


def _metadata(target: WorkloadTarget, name: str, framework: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": target.namespace,
        "labels": {FRAMEWORK_LABEL: framework, "app.kubernetes.io/managed-by": "fm-constructs"},
    }


def node_pod_spec(
    target: WorkloadTarget,
    *,
    image: str,
    debug: str = "WARN",
    extra_container: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Pod of one training node: the whole node, FSx at /fsx, /dev/shm, NCCL environment."""
    spec = target.spec
    container: dict[str, Any] = {
        "name": "node",
        "image": image,
        "env": nccl_env(debug=debug),
        "resources": node_resources(spec),
        "volumeMounts": volume_mounts(),
        **(extra_container or {}),
    }
    return {
        "serviceAccountName": target.service_account,
        "restartPolicy": "Never",
        "nodeSelector": node_selector(target),
        "tolerations": tolerations(spec),
        "containers": [container],
        "volumes": volumes(target),
    }


def _replicated_job(
    name: str,
    pod_spec: dict[str, Any],
    *,
    trainer: bool,
    pod_metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    metadata = dict(pod_metadata or {})
    metadata["labels"] = {**metadata.get("labels", {}), TRAINING_POD_LABEL: "true"}
    pod: dict[str, Any] = {"metadata": metadata, "spec": pod_spec}
    job: dict[str, Any] = {"template": {"spec": {"template": pod}}}
    if trainer:
        job["template"]["metadata"] = {"labels": {ANCESTOR_LABEL: "trainer"}}
    return {"name": name, "replicas": 1, **job}


def _runtime(
    target: WorkloadTarget, name: str, framework: str, ml_policy: dict[str, Any], jobset: Any
) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainingRuntime",
        "metadata": _metadata(target, name, framework),
        "spec": {"mlPolicy": ml_policy, "template": {"spec": jobset}},
    }


def _metrics_metadata(target: WorkloadTarget) -> dict[str, Any]:
    """Pod labels and annotations of the job-metrics contract, so the scraper collects the
    ``fm_training_*`` metrics a training job serves (see ``domain.job_metrics``)."""
    annotations = dict(job_metrics.pod_annotations())
    if not target.hyperpod and has_instance_topology(target.spec):
        # Kueue topology-aware scheduling: all nodes of a job within the closest network
        # layer that holds them (the pool's ResourceFlavor names the cluster's Topology).
        annotations[PREFERRED_TOPOLOGY_ANNOTATION] = PREFERRED_LEVEL
    return {"labels": job_metrics.pod_labels(target.workload), "annotations": annotations}


def _node_runtime(target: WorkloadTarget, name: str, framework: str, image: str) -> dict[str, Any]:
    """A runtime of ``numNodes`` identical whole-node pods, one process group per node."""
    pod = node_pod_spec(target, image=image)
    return _runtime(
        target,
        name,
        framework,
        {"numNodes": 1, framework: {}},
        {
            "replicatedJobs": [
                _replicated_job("node", pod, trainer=True, pod_metadata=_metrics_metadata(target))
            ]
        },
    )


def torch_runtime(target: WorkloadTarget, *, image: str | None = None) -> dict[str, Any]:
    """torchrun across ``numNodes`` whole nodes (set per TrainJob)."""
    return _node_runtime(target, TORCH_RUNTIME, "torch", image or images.PYTORCH_TRAINING.reference)


def jax_runtime(target: WorkloadTarget, *, image: str | None = None) -> dict[str, Any]:
    """JAX multi-process across ``numNodes`` whole nodes."""
    return _node_runtime(target, JAX_RUNTIME, "jax", image or images.JAX.reference)


def mpi_runtime(target: WorkloadTarget, *, image: str | None = None) -> dict[str, Any]:
    """OpenMPI launcher + sshd nodes. The nodes own their accelerated nodes; the launcher only
    runs mpirun and asks for one CPU, but Kueue gives it the flavor's node labels and
    tolerations like every pod set, so it shares a node of the same pool."""
    image = image or images.NCCL_TESTS.reference
    node = node_pod_spec(
        target,
        image=image,
        debug="INFO",
        extra_container={
            "command": ["/bin/bash", "-c", mpi_ssh.node_start()],
            "securityContext": dict(ROOT_SECURITY_CONTEXT),
            "readinessProbe": {"tcpSocket": {"port": 22}, "initialDelaySeconds": 5},
        },
    )
    launcher = {
        "serviceAccountName": target.service_account,
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "node",
                "image": image,
                "env": nccl_env(debug="INFO"),
                "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
                "securityContext": dict(ROOT_SECURITY_CONTEXT),
            }
        ],
    }
    return _runtime(
        target,
        MPI_RUNTIME,
        "mpi",
        {
            "numNodes": 1,
            "mpi": {
                "mpiImplementation": "OpenMPI",
                "numProcPerNode": target.accelerators,
                "sshAuthMountPath": SSH_AUTH_PATH,
                "runLauncherAsNode": False,
            },
        },
        {
            "network": {"publishNotReadyAddresses": True},
            "successPolicy": {"operator": "All", "targetReplicatedJobs": ["launcher"]},
            "replicatedJobs": [
                _replicated_job("launcher", launcher, trainer=True),
                _replicated_job("node", node, trainer=False),
            ],
        },
    )


def training_pod_budget(target: WorkloadTarget) -> dict[str, Any]:
    """A PodDisruptionBudget that allows no voluntary eviction of a running training pod.

    A node group update (or a drain, or the cluster autoscaler) then waits for the jobs on a
    node instead of killing one rank of a multi-node job, which would fail the whole job: EKS
    managed node group updates respect it unless ``force_update`` is set (they stop after their
    drain timeout rather than evict). Pods that are not Ready may still be evicted
    (``unhealthyPodEvictionPolicy: AlwaysAllow``), so a crashed rank never blocks a drain.
    Kueue's preemption deletes workloads and is not held back by it.
    """
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {
            "name": TRAINING_POD_BUDGET,
            "namespace": target.namespace,
            "labels": {"app.kubernetes.io/managed-by": "fm-constructs"},
        },
        "spec": {
            "maxUnavailable": 0,
            "selector": {"matchLabels": {TRAINING_POD_LABEL: "true"}},
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


def training_runtimes(target: WorkloadTarget) -> list[dict[str, Any]]:
    """The runtimes installed for a workload on NVIDIA nodes (PyTorch, JAX, MPI)."""
    if target.spec.eks_ami_family != "NVIDIA":
        raise ValueError(
            f"training runtimes are rendered for NVIDIA GPU types; {target.instance_type} is "
            f"{target.spec.accelerator_name} (use the AWS Neuron DLC images instead)"
        )
    return [torch_runtime(target), jax_runtime(target), mpi_runtime(target)]
