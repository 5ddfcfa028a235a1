"""How one model-server replica maps onto GPU nodes: pure math, shared by the profile loader,
``fmc plan`` and :class:`~fm_constructs.patterns.InferenceService` (floor 1).

A replica of ``tensor_parallel_size x pipeline_parallel_size`` GPUs runs in one pod on one node
when it fits, several replicas sharing a node; a bigger replica spans whole nodes (one pod per
node, LeaderWorkerSet, EFA between them). The rules a layout must follow are in
:mod:`fm_constructs.rules.inference`, whose ``plan_layout`` runs them and then
:func:`layout_replica`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fm_constructs import pins
from fm_constructs.catalog import InstanceSpec
from fm_constructs.domain import ports

#: Share of a node's CPU, memory and instance store a model server may request; the rest is
#: left to the DaemonSets (device plugins, DCGM/EFA exporters, CNI, node monitoring agent).
NODE_SHARE = 0.85
#: Weight cache on the root volume when the type has no instance store (GiB).
ROOT_VOLUME_CACHE_GIB = 200

#: vLLM settings the profile and the model server spec share (one place per default).
GPU_MEMORY_UTILIZATION = 0.9
GPU_MEMORY_UTILIZATION_RANGE = (0.1, 0.98)
#: Target waiting requests per replica (queue-depth autoscaling).
AUTOSCALING_TARGET = 8.0


#: vLLM's OpenAI-compatible server (docker.io, published by the vLLM project), pinned. It ships
#: no libfabric and no AWS OFI NCCL plugin (its Dockerfile installs libibverbs only), so NCCL
#: between the nodes of a multi-node replica runs over TCP: such replicas reserve no EFA device
#: unless ``ModelServerSpec.efa_image`` says the image carries the EFA stack.
VLLM_IMAGE = pins.image("vllm-openai").reference
#: Port of the model server: the port the AMP scraper already reaches on GPU nodes
#: (``EksClusterScraping.EXPORTER_PORTS``) and the one vLLM's LWS recipe uses.
DEFAULT_PORT = ports.MODEL_SERVER_PORT


@dataclass(frozen=True)
class ModelServerSpec:
    """What to serve and how: the model under ``model_s3_prefix`` of the data bucket, served as
    ``served_model_name`` by ``replicas`` (up to ``max_replicas``) vLLM replicas of
    ``tensor_parallel_size x pipeline_parallel_size`` GPUs each.

    ``name`` is the Kubernetes name of the workload and service (derived from
    ``served_model_name`` when None). ``model_cache_size_gib`` caps the instance-store space of
    the weight copy (default: the pod's share of the node's NVMe). ``startup_timeout_s`` is how
    long the server may take to load weights before it is restarted.
    """

    model_s3_prefix: str
    served_model_name: str
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    replicas: int = 1
    max_replicas: int = 1
    image: str = VLLM_IMAGE
    gpu_memory_utilization: float = GPU_MEMORY_UTILIZATION
    max_model_len: int | None = None
    port: int = DEFAULT_PORT
    name: str | None = None
    extra_args: tuple[str, ...] = ()
    model_cache_size_gib: int | None = None
    startup_timeout_s: int = 1800
    efa_image: bool = False

    @property
    def gpus_per_replica(self) -> int:
        return self.tensor_parallel_size * self.pipeline_parallel_size

    @property
    def kubernetes_name(self) -> str:
        """``name``, or ``served_model_name`` made a DNS label (``meta-llama/Llama-3.1-8B``
        -> ``meta-llama-llama-3-1-8b``)."""
        if self.name is not None:
            return self.name
        slug = re.sub(r"[^a-z0-9]+", "-", self.served_model_name.lower()).strip("-")
        return slug[:40].rstrip("-") or "model"


@dataclass(frozen=True)
class ServingLayout:
    """How one replica maps onto nodes of one instance type (see :func:`layout_replica`)."""

    instance_type: str
    multi_node: bool
    nodes_per_replica: int
    gpus_per_pod: int
    efa_per_pod: int
    cpu_request: int
    memory_request_gib: int
    model_cache_size_gib: int
    node_has_nvme: bool
    pods_per_node: int = field(default=1)

    def nodes_for(self, replicas: int) -> int:
        """GPU nodes needed to run ``replicas`` replicas."""
        if self.multi_node:
            return replicas * self.nodes_per_replica
        return math.ceil(replicas / self.pods_per_node)


def spans_nodes(tensor_parallel_size: int, pipeline_parallel_size: int, gpus: int) -> bool:
    """True when a replica needs more GPUs than one node has."""
    return tensor_parallel_size * pipeline_parallel_size > gpus


def gpus_per_pod(
    instance: InstanceSpec, tensor_parallel_size: int, pipeline_parallel_size: int
) -> int:
    """GPUs one pod of the replica holds: the replica's own, or the whole node when it spans
    nodes."""
    gpus = instance.accelerator_count
    return (
        gpus
        if spans_nodes(tensor_parallel_size, pipeline_parallel_size, gpus)
        else (tensor_parallel_size * pipeline_parallel_size)
    )


def pod_nvme_gib(
    instance: InstanceSpec, tensor_parallel_size: int, pipeline_parallel_size: int
) -> int | None:
    """The instance store one pod may fill with its weight cache, GiB (its share of the
    node's NVMe, decimal GB turned into GiB), or None when the type has none."""
    if instance.nvme is None:
        return None
    share = gpus_per_pod(instance, tensor_parallel_size, pipeline_parallel_size) / (
        instance.accelerator_count
    )
    return int(instance.nvme_total_gb * 1e9 / 2**30 * share * NODE_SHARE)


def layout_replica(
    instance: InstanceSpec, sizes: tuple[int, int], cache_gib: int | None, efa_image: bool
) -> ServingLayout:
    """Map a replica onto ``instance`` nodes, for sizes the rules accept
    (:func:`fm_constructs.rules.inference.plan_layout` checks them first). ``sizes`` is
    (tensor parallel, pipeline parallel); ``cache_gib`` the weight cache asked for (None: the
    pod's share of the node's NVMe, else a root-volume cache).

    ``efa_image``: the server image carries libfabric and the AWS OFI NCCL plugin, so a
    replica spanning nodes reserves the nodes' EFA devices (without, NCCL runs over TCP)."""
    gpus = instance.accelerator_count
    gpus_per_replica = sizes[0] * sizes[1]
    multi_node = gpus_per_replica > gpus
    per_pod = gpus_per_pod(instance, *sizes)
    share = per_pod / gpus
    nvme_gib = pod_nvme_gib(instance, *sizes)
    cache = cache_gib or (nvme_gib if nvme_gib is not None else ROOT_VOLUME_CACHE_GIB)
    return ServingLayout(
        instance_type=instance.name,
        multi_node=multi_node,
        nodes_per_replica=gpus_per_replica // gpus if multi_node else 1,
        gpus_per_pod=per_pod,
        efa_per_pod=instance.max_efa_interfaces if multi_node and efa_image else 0,
        cpu_request=max(1, int(instance.vcpus * share * NODE_SHARE)),
        memory_request_gib=max(1, int(instance.memory_gib * share * NODE_SHARE)),
        model_cache_size_gib=cache,
        node_has_nvme=instance.nvme is not None,
        pods_per_node=1 if multi_node else gpus // per_pod,
    )
