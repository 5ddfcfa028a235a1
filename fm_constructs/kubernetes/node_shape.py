"""What one training pod claims of an accelerated node, and the NCCL/EFA environment.

A training pod owns its node: every GPU (or Neuron device) and every EFA interface, the 2 MiB
huge pages libfabric's EFA provider registers its buffers in, a memory-backed ``/dev/shm`` for
NCCL and data-loader workers, and most of the node's CPU and memory (the rest stays for the
DaemonSets). These numbers come from the instance catalog, so a runtime for p5 asks for 32 EFA
devices and one for p4d for 4.

References: the EKS user guide's EFA page ("Run a training job with EFA": ``hugepages-2Mi:
5120Mi``, ``vpc.amazonaws.com/efa`` and ``nvidia.com/gpu`` per pod), and the AWS OFI NCCL
plugin's EFA environment notes (with libfabric >= 1.18 and aws-ofi-nccl >= 1.7 the plugin
chooses the EFA provider, RDMA and protocol itself: ``FI_PROVIDER``, ``FI_EFA_USE_DEVICE_RDMA``
and ``NCCL_PROTO`` stay unset, ``RDMAV_FORK_SAFE`` is never set, channel and buffer sizes keep
their defaults).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fm_constructs.catalog import InstanceSpec, get_instance_type
from fm_constructs.domain import names

#: Extended resources of the device plugins, taints on accelerated nodes and the huge pages
#: per pod the EKS EFA guide requests (defined in :mod:`fm_constructs.domain.names`).
GPU_RESOURCE = names.NVIDIA_GPU_RESOURCE
NEURON_RESOURCE = names.NEURON_RESOURCE
EFA_RESOURCE = names.EFA_RESOURCE
TAINT_KEYS = names.ACCELERATOR_TAINT_KEYS
HUGEPAGES_2MI = names.EFA_HUGEPAGES_2MI
#: Share of the node's CPU and memory a training pod requests.
NODE_SHARE = 0.85
#: Memory-backed /dev/shm of a training pod (counted against the pod's memory).
SHM_FRACTION = 0.25
#: Where the workload's FSx for Lustre claim is mounted.
FSX_MOUNT_PATH = "/fsx"
QUEUE_LABEL = names.QUEUE_LABEL
INSTANCE_TYPE_LABEL = names.INSTANCE_TYPE_LABEL
#: NCCL settings the library sets (see the module docstring for what it leaves unset).
NCCL_SOCKET_IFNAME = "^docker,lo,veth"


@dataclass(frozen=True)
class WorkloadTarget:
    """The nodes a job runs on: the workload (profile key) that owns them, their instance type,
    and whether they are SageMaker HyperPod nodes (labelled with the ``ml.`` type name)."""

    workload: str
    instance_type: str
    hyperpod: bool = False

    @property
    def spec(self) -> InstanceSpec:
        return get_instance_type(self.instance_type)

    @property
    def namespace(self) -> str:
        return names.workload_namespace(self.workload)

    @property
    def service_account(self) -> str:
        return names.service_account_name(self.workload)

    @property
    def local_queue(self) -> str:
        return names.local_queue_name(self.workload)

    @property
    def fsx_claim(self) -> str:
        return names.fsx_claim_name(self.workload)

    @property
    def node_type_label(self) -> str:
        spec = self.spec
        if self.hyperpod and spec.hyperpod_name:
            return spec.hyperpod_name
        return spec.name

    @property
    def accelerators(self) -> int:
        return self.spec.accelerator_count

    @property
    def efa_devices(self) -> int:
        return self.spec.max_efa_interfaces


def accelerator_resource(spec: InstanceSpec) -> str:
    return GPU_RESOURCE if spec.eks_ami_family == "NVIDIA" else NEURON_RESOURCE


def node_resources(spec: InstanceSpec) -> dict[str, Any]:
    """Requests and limits of a pod that owns a whole ``spec`` node."""
    limits: dict[str, str] = {accelerator_resource(spec): str(spec.accelerator_count)}
    if spec.max_efa_interfaces:
        limits[EFA_RESOURCE] = str(spec.max_efa_interfaces)
        limits[names.HUGEPAGES_2MI_RESOURCE] = HUGEPAGES_2MI
    requests = {
        "cpu": str(max(1, int(spec.vcpus * NODE_SHARE))),
        "memory": f"{max(1, int(spec.memory_gib * NODE_SHARE))}Gi",
        **limits,
    }
    return {"requests": requests, "limits": dict(limits)}


def shm_size(spec: InstanceSpec) -> str:
    return f"{max(1, int(spec.memory_gib * NODE_SHARE * SHM_FRACTION))}Gi"


def nccl_env(*, debug: str = "WARN") -> list[dict[str, str]]:
    """NCCL environment of training containers. ``debug`` INFO prints the chosen transport
    ('NET/OFI Selected provider is efa'), which ``fmc validate`` reads."""
    return [
        {"name": "NCCL_DEBUG", "value": debug},
        {"name": "NCCL_SOCKET_IFNAME", "value": NCCL_SOCKET_IFNAME},
    ]


def tolerations(spec: InstanceSpec) -> list[dict[str, str]]:
    return [{"key": TAINT_KEYS[spec.eks_ami_family], "operator": "Exists", "effect": "NoSchedule"}]


def node_selector(target: WorkloadTarget) -> dict[str, str]:
    return {INSTANCE_TYPE_LABEL: target.node_type_label}


def volumes(target: WorkloadTarget) -> list[dict[str, Any]]:
    """The workload's FSx claim and a memory-backed /dev/shm."""
    return [
        {"name": "fsx", "persistentVolumeClaim": {"claimName": target.fsx_claim}},
        {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": shm_size(target.spec)}},
    ]


def volume_mounts() -> list[dict[str, Any]]:
    return [
        {"name": "fsx", "mountPath": FSX_MOUNT_PATH},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]


def queue_labels(target: WorkloadTarget) -> dict[str, str]:
    return {QUEUE_LABEL: target.local_queue}
