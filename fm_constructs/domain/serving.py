"""What a model server serves and how it scales: the value types the inference pattern, the
profile's options and the Kubernetes renderers share (no aws_cdk import).

:class:`ModelServerSpec` names the model, its parallelism and its replicas;
:class:`AutoscalingPolicy` the serving metric KEDA follows. Their checks live with the rules
(``validate_spec``, ``validate_policy``); their objects are rendered by
:mod:`fm_constructs.kubernetes.model_server`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from fm_constructs import pins
from fm_constructs.config.model import ServingMetric
from fm_constructs.planning.serving_layout import AUTOSCALING_TARGET, GPU_MEMORY_UTILIZATION

#: vLLM's OpenAI-compatible server (docker.io, published by the vLLM project), pinned. It ships
#: no libfabric and no AWS OFI NCCL plugin (its Dockerfile installs libibverbs only), so NCCL
#: between the nodes of a multi-node replica runs over TCP: such replicas reserve no EFA device
#: unless ``ModelServerSpec.efa_image`` says the image carries the EFA stack.
VLLM_IMAGE = pins.image("vllm-openai").reference
#: Port of the model server: the port the AMP scraper already reaches on GPU nodes
#: (``EksClusterScraping.EXPORTER_PORTS``) and the one vLLM's LWS recipe uses.
DEFAULT_PORT = 8080


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
class AutoscalingPolicy:
    """Replica autoscaling on a serving metric read from Prometheus by KEDA.

    ``target``: per-replica waiting requests (QUEUE_DEPTH) or seconds of p90 time to first
    token (TTFT_P90). ``scale_down_stabilization_s`` keeps a replica (and its GPUs) for that
    long after load drops: a new replica costs minutes of weight loading.
    """

    metric: ServingMetric = ServingMetric.QUEUE_DEPTH
    target: float = AUTOSCALING_TARGET
    polling_interval_s: int = 30
    scale_down_stabilization_s: int = 600
