"""Rules of model serving: the accelerator, tensor/pipeline parallelism against the node, EFA
only where a replica spans nodes, replicas within the node group, a model to serve.

Keys are the profile's names inside ``[inference.model]`` (``tensor_parallel_size``) or
``[inference]`` (``instance_type``, ``max_instance_count``); the loader prefixes them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from fm_constructs.catalog import InstanceSpec
from fm_constructs.domain.kinds import LoadBalancer
from fm_constructs.domain.numbers import is_whole_number
from fm_constructs.domain.ports import NODE_EXPORTER_PORTS
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.serving_layout import (
    GPU_MEMORY_UTILIZATION,
    GPU_MEMORY_UTILIZATION_RANGE,
    VLLM_IMAGE,
    ModelServerSpec,
    ServingLayout,
    layout_replica,
    pod_nvme_gib,
    spans_nodes,
)
from fm_constructs.rules import platform as platform_rules
from fm_constructs.rules.constructs import INFERENCE_SERVICE, MODEL_SERVER
from fm_constructs.rules.findings import Finding, Severity, define, errors
from fm_constructs.rules.tokens import is_unresolved

NVIDIA_GPU = define(
    "FM501",
    "The model server (vLLM's CUDA image) needs an NVIDIA GPU type.",
    "Choose an NVIDIA GPU type for inference (g5, g6, g6e, p4d, p5, ...).",
)


def nvidia_accelerator(instance: InstanceSpec, *, key: str = "instance_type") -> list[Finding]:
    if instance.eks_ami_family == "NVIDIA":
        return []
    return [
        NVIDIA_GPU.finding(
            key,
            instance.name,
            f"must be an NVIDIA GPU type: the vLLM CUDA image does not run on "
            f"{instance.accelerator_name}",
            "choose an NVIDIA GPU type such as 'g6e.48xlarge' or 'p5.48xlarge'",
        )
    ]


TP_WITHIN_NODE = define(
    "FM502",
    "Tensor parallelism is larger than the GPUs of one node (it runs within one node).",
    "Set tensor_parallel_size to the GPUs of a node and spread the rest over "
    "pipeline_parallel_size.",
)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


REPLICA_DIVIDES_NODE = define(
    "FM503",
    "The GPUs of one replica do not divide the GPUs of a node (idle GPUs, and vLLM rejects "
    "most odd tensor-parallel sizes).",
    "Use a tensor_parallel_size x pipeline_parallel_size that divides the GPUs of a node.",
)


REPLICA_FILLS_NODES = define(
    "FM504",
    "A replica spanning nodes must fill whole nodes.",
    "Make tensor_parallel_size x pipeline_parallel_size a multiple of the GPUs of a node.",
)


EFA_ACROSS_NODES = define(
    "FM507",
    "A replica spans nodes but the instance type has no EFA.",
    "Choose an EFA-capable type, or a layout whose replica fits one node.",
)


def efa_where_replicas_span_nodes(
    tensor_parallel_size: int,
    pipeline_parallel_size: int,
    instance: InstanceSpec,
    *,
    key: str = "instance_type",
) -> list[Finding]:
    if instance.efa_supported or not spans_nodes(
        tensor_parallel_size, pipeline_parallel_size, instance.accelerator_count
    ):
        return []
    return [
        EFA_ACROSS_NODES.finding(
            key,
            instance.name,
            f"must support EFA when a replica spans nodes "
            f"({tensor_parallel_size * pipeline_parallel_size} GPUs per replica, "
            f"{instance.accelerator_count} per node)",
            "choose an EFA-capable type, or make the replica fit one node",
        )
    ]


def serving_layout(
    tensor_parallel_size: int, pipeline_parallel_size: int, instance: InstanceSpec
) -> list[Finding]:
    """Every layout rule for one replica on ``instance``: an NVIDIA GPU (FM501), tensor
    parallelism within one node (FM502), and a replica that divides a node (FM503) or, when it
    spans nodes, fills whole nodes (FM504)."""
    accelerator = nvidia_accelerator(instance)
    if accelerator:
        return accelerator
    tp, pp = tensor_parallel_size, pipeline_parallel_size
    gpus = instance.accelerator_count
    per_replica = tp * pp
    if tp > gpus:
        return [
            TP_WITHIN_NODE.finding(
                "tensor_parallel_size",
                tp,
                f"must be at most the {gpus} GPUs of one {instance.name} (tensor parallelism "
                "stays within one node; pipeline parallelism spans nodes)",
                f"for a {per_replica}-GPU replica set tensor_parallel_size = {gpus} and "
                f"pipeline_parallel_size = {math.ceil(tp / gpus) * pp}",
            )
        ]
    if per_replica <= gpus:
        if gpus % per_replica == 0:
            return []
        return [
            REPLICA_DIVIDES_NODE.finding(
                "tensor_parallel_size",
                tp,
                f"tensor_parallel_size x pipeline_parallel_size ({per_replica}) must divide the "
                f"{gpus} GPUs of one {instance.name}",
                f"use one of {', '.join(map(str, _divisors(gpus)))}",
            )
        ]
    if per_replica % gpus == 0:
        return []
    return [
        REPLICA_FILLS_NODES.finding(
            "pipeline_parallel_size",
            pp,
            f"tensor_parallel_size x pipeline_parallel_size ({per_replica}) must fill whole "
            f"{instance.name} nodes ({gpus} GPUs each) when a replica spans several nodes",
            f"use a multiple of {gpus} GPUs per replica",
        )
    ]


CACHE_FITS = define(
    "FM508",
    "The weight cache does not fit the pod's share of the node's instance store.",
    "Leave model_cache_size_gib unset (the pod's share) or lower it.",
)


def model_cache_fits(
    cache_gib: int, nvme_share_gib: int | None, instance: InstanceSpec
) -> list[Finding]:
    if nvme_share_gib is None or cache_gib <= nvme_share_gib:
        return []
    return [
        CACHE_FITS.finding(
            "model_cache_size_gib",
            cache_gib,
            f"must fit the pod's share of the {instance.name} instance store "
            f"({nvme_share_gib} GiB)",
        )
    ]


def plan_layout(
    instance: InstanceSpec,
    *,
    tensor_parallel_size: int = 1,
    pipeline_parallel_size: int = 1,
    model_cache_size_gib: int | None = None,
    efa_image: bool = False,
    context: str | None = "ModelServerSpec",
) -> ServingLayout:
    """Map a replica onto ``instance`` nodes
    (:func:`fm_constructs.planning.serving_layout.layout_replica`) once the layout rules
    (:func:`serving_layout`, :func:`model_cache_fits`) pass; raise FmValidationError listing
    every problem otherwise. The profile loader, ``fmc plan`` and the model server spec all
    plan through here."""
    layout_errors = errors(serving_layout(tensor_parallel_size, pipeline_parallel_size, instance))
    if layout_errors:
        raise FmValidationError(layout_errors, context=context)
    sizes = (tensor_parallel_size, pipeline_parallel_size)
    layout = layout_replica(instance, sizes, model_cache_size_gib, efa_image)
    nvme_gib = pod_nvme_gib(instance, *sizes)
    cache_findings = model_cache_fits(layout.model_cache_size_gib, nvme_gib, instance)
    if cache_findings:
        raise FmValidationError(cache_findings, context=context)
    return layout


REPLICAS_FIT = define(
    "FM505",
    "The node group at its largest cannot hold the replicas asked for.",
    "Raise inference.max_instance_count (or instance_count), or lower the replicas.",
)


def replicas_fit_nodes(
    replicas: int, layout: ServingLayout, max_nodes: int, *, key: str = "max_instance_count"
) -> list[Finding]:
    needed = layout.nodes_for(replicas)
    if needed <= max_nodes:
        return []
    return [
        REPLICAS_FIT.finding(
            key,
            max_nodes,
            f"must hold {replicas} replicas: they need {needed} {layout.instance_type} nodes "
            f"({layout.pods_per_node if not layout.multi_node else 1} replica(s) per node"
            + (f", {layout.nodes_per_replica} nodes per replica" if layout.multi_node else "")
            + ")",
            f"set max_instance_count = {needed} or lower the replicas",
        )
    ]


NO_MODEL = define(
    "FM506",
    "Inference is enabled without a model: the GPU cluster is built (the documented choice "
    "for serving by other means) and its nodes bill while no model server runs.",
    "Add an [inference.model] table (model_s3_prefix, served_model_name), or set "
    "inference.enabled = false, unless you deploy your own server on the nodes.",
    severity=Severity.WARNING,
)


def model_present(has_model: bool, *, key: str = "model") -> list[Finding]:
    if has_model:
        return []
    return [
        NO_MODEL.finding(
            key,
            None,
            "no model: the GPU nodes are built and bill, but no model server is deployed",
            "add [inference.model] with model_s3_prefix and served_model_name, or set "
            "inference.enabled = false",
        )
    ]


MEMORY_SHARE = define(
    "FM509",
    "The share of each GPU's memory vLLM may use is outside the range it can run with.",
    f"Use a fraction from {GPU_MEMORY_UTILIZATION_RANGE[0]} to "
    f"{GPU_MEMORY_UTILIZATION_RANGE[1]}, or leave gpu_memory_utilization unset.",
)


def gpu_memory_utilization(value: float, *, key: str = "gpu_memory_utilization") -> list[Finding]:
    """The profile and :class:`ModelServerSpec` read this one range."""
    low, high = GPU_MEMORY_UTILIZATION_RANGE
    if low <= value <= high:
        return []
    return [
        MEMORY_SHARE.finding(
            key,
            value,
            f"must be {low} to {high} (the fraction of each GPU's memory vLLM may use)",
            f"leave it unset for {GPU_MEMORY_UTILIZATION}",
        )
    ]


REPLICA_RANGE = define(
    "FM510",
    "The most replicas (max_replicas) are fewer than the least (replicas).",
    "Set max_replicas to at least replicas, or leave it unset (no autoscaling headroom).",
)


def max_replicas_cover_replicas(
    replicas: int, max_replicas: int | None, *, key: str = "max_replicas"
) -> list[Finding]:
    """Autoscaling runs between ``replicas`` and ``max_replicas`` (None: ``replicas``)."""
    if max_replicas is None or max_replicas >= replicas:
        return []
    return [REPLICA_RANGE.finding(key, max_replicas, f"must be >= replicas ({replicas})")]


WEIGHTS_FIT = define(
    "FM511",
    "The model's weights do not fit the GPU memory one replica has (tensor_parallel_size x "
    "pipeline_parallel_size GPUs, at gpu_memory_utilization): vLLM would fail to load them.",
    "Give a replica more GPUs (tensor_parallel_size, on a type with that many), serve "
    "quantized weights (weight_bytes_per_parameter), or serve a smaller model.",
)

#: A size in a model's name: "llama-3.1-70b-instruct", "Qwen3-32B", "phi-3.5-mini-3.8b" (not
#: the "7B" of "8x7B", whose parameters are not 7 billion).
_SIZE_IN_NAME = re.compile(r"(?<![\w.])(?P<size>\d+(?:\.\d+)?)b(?![a-z0-9])", re.IGNORECASE)


def parameters_in_name(*names: str | None) -> tuple[float, str] | None:
    """(billions of parameters, the name it was read from) for the first name stating a size."""
    for name in names:
        if not name:
            continue
        for part in re.split(r"[/_-]", name):
            match = _SIZE_IN_NAME.fullmatch(part)
            if match:
                return float(match["size"]), name
    return None


def _smallest_type_with(instance: InstanceSpec, gpus: int) -> str | None:
    """The type with the fewest ``instance``-like GPUs, at least ``gpus`` of them."""
    from fm_constructs.catalog import all_instance_types  # floor 1, loaded on demand

    same = [
        spec
        for spec in all_instance_types()
        if spec.accelerator_name == instance.accelerator_name
        and spec.accelerator_memory_gib == instance.accelerator_memory_gib
        and spec.accelerator_count >= gpus
    ]
    if not same:
        return None
    return min(same, key=lambda s: (s.accelerator_count, s.vcpus, s.name)).name


def weights_fit_gpus(
    parameters_billion: float,
    bytes_per_parameter: float,
    tensor_parallel_size: int,
    pipeline_parallel_size: int,
    instance: InstanceSpec,
    gpu_memory_utilization: float,
    *,
    source: str = "model_parameters_billion",
    key: str = "tensor_parallel_size",
) -> list[Finding]:
    """The weights of one replica fit the memory vLLM may use on its GPUs.

    The weights alone must fit: the KV cache and activations need room besides, so a model
    that passes can still run short of context length, never the other way round."""
    weights_gib = parameters_billion * 1e9 * bytes_per_parameter / 2**30
    gpus = tensor_parallel_size * pipeline_parallel_size
    per_gpu = instance.accelerator_memory_gib * gpu_memory_utilization
    if weights_gib <= gpus * per_gpu:
        return []
    needed = math.ceil(weights_gib / per_gpu)
    tensor_parallel = 1 << (needed - 1).bit_length()  # vLLM shards heads by a power of two
    if tensor_parallel <= instance.accelerator_count:
        fix = (
            f"set tensor_parallel_size = {tensor_parallel} ({instance.name} has "
            f"{instance.accelerator_count} GPUs)"
        )
    else:
        bigger = _smallest_type_with(instance, tensor_parallel)
        if bigger is not None:
            fix = (
                f"use an instance type with {tensor_parallel} GPUs ({bigger}) and set "
                f"tensor_parallel_size = {tensor_parallel}"
            )
        else:  # no node has that many: whole nodes per stage, stages across nodes
            per_node = instance.accelerator_count
            fix = (
                f"span nodes: tensor_parallel_size = {per_node} and pipeline_parallel_size = "
                f"{math.ceil(tensor_parallel / per_node)}"
            )
    fix += ", serve quantized weights (weight_bytes_per_parameter = 1 for FP8), or a smaller model"
    return [
        WEIGHTS_FIT.finding(
            key,
            tensor_parallel_size,
            f"must hold the model's weights: one replica has {gpus} x "
            f"{instance.accelerator_memory_gib:.0f} GiB "
            f"{instance.accelerator_name} ({gpus * per_gpu:.0f} GiB at "
            f"gpu_memory_utilization {gpu_memory_utilization:g}); the weights of a "
            f"{parameters_billion:g}B-parameter model ({source}) at {bytes_per_parameter:g} "
            f"bytes each take {weights_gib:.0f} GiB",
            fix,
        )
    ]


PUBLIC_ENDPOINT_RANGES = define(
    "FM512",
    "An internet-facing model endpoint has no source ranges, or a range is not a CIDR block or "
    "opens it to the whole internet.",
    "List the client ranges allowed to reach the endpoint (load_balancer_source_ranges), or "
    "keep the load balancer internal.",
)


def public_endpoint_source_ranges(
    load_balancer: str, source_ranges: Sequence[str], *, key: str = "load_balancer_source_ranges"
) -> list[Finding]:
    """An internet-facing load balancer admits only the listed client ranges: none listed
    would open the endpoint (a bearer key over plain HTTP) to anyone, and each range is judged
    as the public API endpoint's are (CIDR blocks, not the internet by address space)."""
    if load_balancer != LoadBalancer.INTERNET_FACING:
        return []
    if not source_ranges:
        return [
            PUBLIC_ENDPOINT_RANGES.finding(
                key,
                [],
                "must list the client ranges an internet-facing endpoint admits (without them "
                "the load balancer admits any address)",
                "list your clients' ranges, e.g. ['203.0.113.0/24'], or set load_balancer = "
                "'internal'",
            )
        ]
    return [
        PUBLIC_ENDPOINT_RANGES.finding(f.key, f.value, f.allowed, f.fix)
        for f in platform_rules.public_access_cidrs(list(source_ranges), key=key)
    ]


ENDPOINT_TLS = define(
    "FM513",
    "An internet-facing model endpoint has no TLS certificate, or the certificate is not an ACM "
    "certificate ARN of the endpoint's Region.",
    "Name an ACM certificate of the endpoint's Region (tls_certificate_arn): the load balancer "
    "then listens with TLS on 443; or keep the load balancer internal.",
)
_ACM_ARN = re.compile(r"^arn:aws[a-z-]*:acm:([a-z0-9-]+):\d{12}:certificate/[0-9a-f-]{36}$")


def endpoint_tls(
    load_balancer: str,
    certificate_arn: str | None,
    region: str | None,
    *,
    key: str = "tls_certificate_arn",
) -> list[Finding]:
    """An internet-facing endpoint carries the API key and every prompt across the internet:
    it needs TLS, which a Network Load Balancer terminates with an ACM certificate of its own
    Region. An internal endpoint may have one too. Tokens are skipped."""
    if certificate_arn is None:
        if load_balancer != LoadBalancer.INTERNET_FACING:
            return []
        return [
            ENDPOINT_TLS.finding(
                key,
                None,
                "must name an ACM certificate for an internet-facing endpoint (the API key and "
                "the prompts would cross the internet in plain text)",
                "request or import one in ACM (aws acm request-certificate ...) and set "
                "tls_certificate_arn, or set load_balancer = 'internal'",
            )
        ]
    if is_unresolved(certificate_arn):
        return []
    match = _ACM_ARN.match(certificate_arn)
    if match is None:
        return [
            ENDPOINT_TLS.finding(
                key,
                certificate_arn,
                "must be an ACM certificate ARN (arn:aws:acm:<region>:<account>:certificate/<id>)",
            )
        ]
    if region is not None and not is_unresolved(region) and match.group(1) != region:
        return [
            ENDPOINT_TLS.finding(
                key,
                certificate_arn,
                f"must be a certificate of the endpoint's Region {region} (a load balancer "
                f"uses certificates of its own Region only), not {match.group(1)}",
            )
        ]
    return []


# ------------------------------------------------------------------ the model server's fields

#: A Kubernetes DNS label (names of namespaces, workloads and services).
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SERVED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$")
_IMAGE = re.compile(r"^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$")


MODEL_SERVER_FIELDS = define(
    "FM514",
    "The model server's served model name or container image is malformed (a name clients "
    "send as 'model', an image reference pinned to a version).",
    "Use letters, digits and . _ / : - for the served model name; give the image as "
    "registry/repository:tag or @sha256:digest, never 'latest'.",
)


def served_model_name(name: str, *, key: str = "served_model_name") -> list[Finding]:
    """The name clients send as ``model`` and the metrics' ``model_name`` label."""
    if _SERVED_NAME.match(name):
        return []
    return [
        MODEL_SERVER_FIELDS.finding(
            key,
            name,
            "must be 1-128 characters of letters, digits and . _ / : - (it is the 'model' of "
            "API requests and the model_name label of the metrics)",
        )
    ]


def model_image(image: str, *, key: str = "image") -> list[Finding]:
    """A container image reference pinned to a tag or digest (a node pulls what it names)."""
    if _IMAGE.match(image) and not image.endswith(":latest"):
        return []
    return [
        MODEL_SERVER_FIELDS.finding(
            key,
            image,
            "must be a registry/repository reference pinned to a version tag or sha256 digest "
            f"(not 'latest'), e.g. {VLLM_IMAGE!r}",
        )
    ]


def _add(out: list[Finding], key: str, value: object, allowed: str) -> None:
    out.append(Finding(MODEL_SERVER, Severity.ERROR, key, value, allowed))


def model_server_spec(spec: ModelServerSpec) -> list[Finding]:
    """Every problem of a model server spec that does not depend on the instance type
    (FM863, with the shared serving rules' own codes)."""
    out: list[Finding] = []
    prefix = spec.model_s3_prefix
    if not prefix or prefix.startswith(("/", "s3://")) or not prefix.endswith("/"):
        _add(
            out,
            "model_s3_prefix",
            prefix,
            "must be a key prefix inside the data bucket ending with '/', without 's3://' or a "
            "leading '/', e.g. 'models/llama-3.1-70b-instruct/'",
        )
    out += served_model_name(spec.served_model_name)
    if not DNS_LABEL.match(spec.kubernetes_name) or len(spec.kubernetes_name) > 40:
        _add(
            out,
            "name",
            spec.kubernetes_name,
            "must be a DNS label of at most 40 characters (lowercase letters, digits, '-'); "
            "pod names of a LeaderWorkerSet append group and worker indexes to it",
        )
    for name, value in (
        ("tensor_parallel_size", spec.tensor_parallel_size),
        ("pipeline_parallel_size", spec.pipeline_parallel_size),
        ("replicas", spec.replicas),
    ):
        if not is_whole_number(value, 1):
            _add(out, name, value, "must be a whole number >= 1")
    if not is_whole_number(spec.max_replicas):
        _add(
            out,
            "max_replicas",
            spec.max_replicas,
            f"must be a whole number >= replicas ({spec.replicas})",
        )
    elif isinstance(spec.replicas, int):
        # The profile's rule, on the spec's own fields.
        out += max_replicas_cover_replicas(spec.replicas, spec.max_replicas)
    out += model_image(spec.image)
    out += gpu_memory_utilization(spec.gpu_memory_utilization)
    if spec.max_model_len is not None and spec.max_model_len < 1:
        _add(out, "max_model_len", spec.max_model_len, "must be >= 1 or None (model default)")
    if not 1024 <= spec.port <= 65535 or spec.port in NODE_EXPORTER_PORTS:
        exporters = ", ".join(str(p) for p in sorted(NODE_EXPORTER_PORTS))
        _add(
            out,
            "port",
            spec.port,
            f"must be 1024-65535 and not an exporter port ({exporters})",
        )
    if spec.model_cache_size_gib is not None and spec.model_cache_size_gib < 1:
        _add(out, "model_cache_size_gib", spec.model_cache_size_gib, "must be >= 1 or None")
    if spec.startup_timeout_s < 60:
        _add(out, "startup_timeout_s", spec.startup_timeout_s, "must be >= 60")
    for index, arg in enumerate(spec.extra_args):
        flag = arg.split("=", 1)[0]
        if flag in _MANAGED_FLAGS:
            _add(
                out,
                f"extra_args[{index}]",
                arg,
                f"is set from the spec; use the matching field instead of {flag}",
            )
    return out


_MANAGED_FLAGS = frozenset(
    {
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--served-model-name",
        "--port",
        "--gpu-memory-utilization",
        "--max-model-len",
        "--distributed-executor-backend",
        "--nnodes",
        "--node-rank",
        "--master-addr",
        "--master-port",
        "--headless",
    }
)


def autoscaling_policy(
    target: float, polling_interval_s: int, scale_down_stabilization_s: int, spec: ModelServerSpec
) -> list[Finding]:
    """Every problem of an autoscaling policy (its target, polling interval and scale-down
    stabilization) for ``spec`` (FM863)."""
    out: list[Finding] = []
    if target <= 0:
        _add(out, "autoscaling.target", target, "must be > 0")
    if polling_interval_s < 15:
        _add(
            out,
            "autoscaling.polling_interval_s",
            polling_interval_s,
            "must be >= 15 (metrics arrive every 30 s from the managed scraper)",
        )
    if scale_down_stabilization_s < 0:
        _add(
            out,
            "autoscaling.scale_down_stabilization_s",
            scale_down_stabilization_s,
            "must be >= 0",
        )
    if spec.max_replicas <= spec.replicas:
        _add(
            out,
            "max_replicas",
            spec.max_replicas,
            f"must be greater than replicas ({spec.replicas}) for autoscaling to have room; "
            "raise max_replicas or pass autoscaling=None",
        )
    return out


def _service(key: str, value: object, allowed: str) -> Finding:
    return Finding(INFERENCE_SERVICE, Severity.ERROR, key, value, allowed)


def service_namespace(namespace: str) -> list[Finding]:
    """An inference service's namespace is a DNS label of its own (not kube-system or keda)."""
    if DNS_LABEL.match(namespace) and namespace not in ("kube-system", "keda"):
        return []
    return [
        _service(
            "namespace",
            namespace,
            "must be a Kubernetes DNS label other than kube-system and keda",
        )
    ]


def autoscaling_workspace(*, autoscaling: bool, workspace_given: bool) -> list[Finding]:
    """Autoscaling reads the serving metrics from the workspace the cluster is scraped into."""
    if not autoscaling or workspace_given:
        return []
    return [
        _service(
            "workspace",
            None,
            "must be the Prometheus workspace the cluster is scraped into when "
            "autoscaling is set (KEDA queries the serving metrics there)",
        )
    ]


def leader_worker_set(
    *, nodes_per_replica: int, multi_node: bool, cluster_runs_it: bool, cluster_path: str
) -> list[Finding]:
    """A replica spanning nodes runs as a LeaderWorkerSet: the cluster must run its operator."""
    if not multi_node or cluster_runs_it:
        return []
    return [
        _service(
            "cluster",
            cluster_path,
            f"must run LeaderWorkerSet for {nodes_per_replica}-node replicas; "
            "create it with operators=WorkloadOperators(leader_worker_set=True)",
        )
    ]
