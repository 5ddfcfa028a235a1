"""Kubernetes names a workload owns on a shared cluster.

One function per name so that the constructs that create these objects, the job templates that
reference them and `fmc validate` that submits jobs agree by construction.
"""

from __future__ import annotations

import re

#: The workload kinds a profile has (its tables) and ``fmc`` offers (``--workload``).
WORKLOAD_KINDS = ("pretraining", "post_training", "inference")
#: Every workload's ClusterQueue joins this Kueue cohort, so idle GPUs can be borrowed.
KUEUE_COHORT = "fm-accelerators"
#: Namespace label that lets Kueue's webhooks see a namespace (``managedJobsNamespaceSelector``):
#: namespaces without it (kube-system, device plugins, exporters) never wait on Kueue.
KUEUE_MANAGED_LABEL = "fm-constructs/kueue-managed"
#: Node label naming the node pool (and Kueue ResourceFlavor) a node belongs to.
NODE_POOL_LABEL = "fm-constructs/node-pool"
#: Label naming the library workload a node group ("system", "gpu", "neuron") or a pod
#: belongs to.
WORKLOAD_LABEL = "fm-constructs/workload"
#: Label naming the Kueue LocalQueue of a job.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: Kubernetes label every node carries with its instance type.
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
#: Extended resources the device plugins advertise.
NVIDIA_GPU_RESOURCE = "nvidia.com/gpu"
NEURON_RESOURCE = "aws.amazon.com/neuron"
EFA_RESOURCE = "vpc.amazonaws.com/efa"
#: Huge pages (2 MiB pages) a pod requests, a node resource of the kubelet.
HUGEPAGES_2MI_RESOURCE = "hugepages-2Mi"
#: Huge pages (MiB) libfabric's EFA provider needs per whole-node pod, as the EKS user guide's
#: EFA page requests them ("Run a training job with EFA": ``hugepages-2Mi: 5120Mi``).
EFA_HUGEPAGES_2MI_MI = 5120
#: :data:`EFA_HUGEPAGES_2MI_MI` as a Kubernetes quantity.
EFA_HUGEPAGES_2MI = f"{EFA_HUGEPAGES_2MI_MI}Mi"

#: Taint keys on accelerated nodes (value "true", effect NoSchedule).
GPU_TAINT_KEY = NVIDIA_GPU_RESOURCE
NEURON_TAINT_KEY = NEURON_RESOURCE
EFA_TAINT_KEY = "aws.amazon.com/efa"
#: The taint key of each accelerator family (the EKS AMI family: "NVIDIA" or "NEURON").
ACCELERATOR_TAINT_KEYS = {"NVIDIA": GPU_TAINT_KEY, "NEURON": NEURON_TAINT_KEY}
#: Node labels set on accelerated nodes. ``nvidia.com/gpu.present`` matches the default node
#: affinity of the NVIDIA device plugin chart; ``aws.amazon.com/neuron.present`` and
#: ``vpc.amazonaws.com/efa.present`` are the selectors AWS's own EKS blueprints use.
GPU_PRESENT_LABEL = "nvidia.com/gpu.present"
NEURON_PRESENT_LABEL = "aws.amazon.com/neuron.present"
EFA_PRESENT_LABEL = "vpc.amazonaws.com/efa.present"

#: Name of a workload's main accelerated node pool.
MAIN_POOL = "gpu"
#: Name of the RL rollout node pool (generation workers) of a post-training workload.
ROLLOUT_POOL = "rollout"
#: Node label and taint key that keep the RL rollout group for generation workers (value
#: :data:`ROLLOUT_POOL`).
WORKLOAD_ROLE_LABEL = "workload-role"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def workload_namespace(workload: str) -> str:
    """Namespace of a workload (profile key ``post_training`` -> ``post-training``)."""
    name = workload.replace("_", "-").lower()
    if not _DNS_LABEL.match(name):
        raise ValueError(f"workload name {workload!r} does not map to a DNS label ({name!r})")
    return name


def diagnostics_namespace(workload: str) -> str:
    """Namespace of a workload's privileged node diagnostics (DCGM level 2 needs SYS_ADMIN,
    which the workload namespace's Pod Security level forbids)."""
    return f"{workload_namespace(workload)}-diagnostics"


def service_account_name(workload: str) -> str:
    """Service account a workload's pods run as (bound to the workload's Pod Identity role)."""
    return f"{workload_namespace(workload)}-workload"


def cluster_queue_name(workload: str) -> str:
    """Kueue ClusterQueue holding the workload's nominal accelerator quota."""
    return workload_namespace(workload)


def local_queue_name(workload: str) -> str:
    """Kueue LocalQueue in the workload namespace; jobs name it in ``kueue.x-k8s.io/queue-name``."""
    return f"{workload_namespace(workload)}-jobs"


def fsx_claim_name(workload: str) -> str:
    """PersistentVolumeClaim of the workload's FSx for Lustre file system, mounted at ``/fsx``."""
    return "fsx-lustre"


def resource_flavor_name(workload: str, pool: str) -> str:
    """Kueue ResourceFlavor of one node pool of a workload (``pretraining-gpu``); also the
    value of :data:`NODE_POOL_LABEL` on the pool's nodes."""
    return f"{workload_namespace(workload)}-{pool}"


def accelerator_resource(eks_ami_family: str) -> str:
    """Extended resource of an accelerator family ("NVIDIA" or "NEURON")."""
    return NEURON_RESOURCE if eks_ami_family == "NEURON" else NVIDIA_GPU_RESOURCE
