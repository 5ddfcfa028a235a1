"""Checks of a model server's spec and autoscaling policy, and the layout check that runs them.

The value types live in :mod:`fm_constructs.planning.serving_layout` and
:mod:`fm_constructs.planning.autoscaling` (re-exported here and from
:mod:`fm_constructs.patterns`), their Kubernetes objects in
:mod:`fm_constructs.kubernetes.model_server`. :func:`plan_layout` maps a replica onto nodes:

* A replica needs ``tensor_parallel_size x pipeline_parallel_size`` GPUs: one ``Deployment``
  pod when they fit on one node, else a ``LeaderWorkerSet`` group of whole nodes.
* Tensor parallelism stays inside a node: a tensor-parallel size larger than the GPUs
  of one node is rejected with the pipeline-parallel split that fixes it.
"""

from __future__ import annotations

import re

from fm_constructs.catalog import InstanceSpec
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning import serving_layout
from fm_constructs.planning.autoscaling import AutoscalingPolicy as AutoscalingPolicy
from fm_constructs.planning.serving_layout import DEFAULT_PORT as DEFAULT_PORT
from fm_constructs.planning.serving_layout import VLLM_IMAGE, ServingLayout
from fm_constructs.planning.serving_layout import ModelServerSpec as ModelServerSpec
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import inference as inference_rules

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_SERVED_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$")
_IMAGE = re.compile(r"^[a-z0-9.-]+(:\d+)?/[a-z0-9._/-]+(:[A-Za-z0-9._-]+|@sha256:[0-9a-f]{64})$")


def validate_spec(spec: ModelServerSpec, problems: Problems) -> None:
    """Record every problem of ``spec`` that does not depend on the instance type."""
    prefix = spec.model_s3_prefix
    if not prefix or prefix.startswith(("/", "s3://")) or not prefix.endswith("/"):
        problems.add(
            "model_s3_prefix",
            prefix,
            "must be a key prefix inside the data bucket ending with '/', without 's3://' or a "
            "leading '/', e.g. 'models/llama-3.1-70b-instruct/'",
        )
    if not _SERVED_NAME.match(spec.served_model_name):
        problems.add(
            "served_model_name",
            spec.served_model_name,
            "must be 1-128 characters of letters, digits and . _ / : - (it is the 'model' of "
            "API requests and the model_name label of the metrics)",
        )
    if not DNS_LABEL.match(spec.kubernetes_name) or len(spec.kubernetes_name) > 40:
        problems.add(
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
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            problems.add(name, value, "must be a whole number >= 1")
    if isinstance(spec.max_replicas, bool) or not isinstance(spec.max_replicas, int):
        problems.add(
            "max_replicas",
            spec.max_replicas,
            f"must be a whole number >= replicas ({spec.replicas})",
        )
    elif isinstance(spec.replicas, int):
        # The profile's rule, on the spec's own fields.
        problems.add_findings(
            inference_rules.max_replicas_cover_replicas(spec.replicas, spec.max_replicas)
        )
    if not _IMAGE.match(spec.image) or spec.image.endswith(":latest"):
        problems.add(
            "image",
            spec.image,
            "must be a registry/repository reference pinned to a version tag or sha256 digest "
            f"(not 'latest'), e.g. {VLLM_IMAGE!r}",
        )
    problems.add_findings(inference_rules.gpu_memory_utilization(spec.gpu_memory_utilization))
    if spec.max_model_len is not None and spec.max_model_len < 1:
        problems.add("max_model_len", spec.max_model_len, "must be >= 1 or None (model default)")
    if not 1024 <= spec.port <= 65535 or spec.port in (9100, 9109, 9400):
        problems.add(
            "port",
            spec.port,
            "must be 1024-65535 and not an exporter port (9100, 9109, 9400)",
        )
    if spec.model_cache_size_gib is not None and spec.model_cache_size_gib < 1:
        problems.add("model_cache_size_gib", spec.model_cache_size_gib, "must be >= 1 or None")
    if spec.startup_timeout_s < 60:
        problems.add("startup_timeout_s", spec.startup_timeout_s, "must be >= 60")
    for index, arg in enumerate(spec.extra_args):
        flag = arg.split("=", 1)[0]
        if flag in _MANAGED_FLAGS:
            problems.add(
                f"extra_args[{index}]",
                arg,
                f"is set from the spec; use the matching field instead of {flag}",
            )


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


def plan_layout(spec: ModelServerSpec, instance: InstanceSpec) -> ServingLayout:
    """Map a replica onto ``instance`` nodes (:func:`fm_constructs.planning.serving_layout.
    plan_layout`, the function the profile loader runs); raise FmValidationError listing every
    problem of the spec and the layout."""
    problems = Problems(context="ModelServerSpec", code=codes.MODEL_SERVER)
    validate_spec(spec, problems)
    if any(f.key in ("tensor_parallel_size", "pipeline_parallel_size") for f in problems.findings):
        problems.raise_if_any()  # no layout without whole, positive sizes
    try:
        layout = serving_layout.plan_layout(
            instance,
            tensor_parallel_size=spec.tensor_parallel_size,
            pipeline_parallel_size=spec.pipeline_parallel_size,
            model_cache_size_gib=spec.model_cache_size_gib,
            efa_image=spec.efa_image,
        )
    except FmValidationError as error:
        problems.extend(error.findings)
        layout = None
    problems.raise_if_any()
    assert layout is not None
    return layout


def validate_policy(policy: AutoscalingPolicy, spec: ModelServerSpec, problems: Problems) -> None:
    if policy.target <= 0:
        problems.add("autoscaling.target", policy.target, "must be > 0")
    if policy.polling_interval_s < 15:
        problems.add(
            "autoscaling.polling_interval_s",
            policy.polling_interval_s,
            "must be >= 15 (metrics arrive every 30 s from the managed scraper)",
        )
    if policy.scale_down_stabilization_s < 0:
        problems.add(
            "autoscaling.scale_down_stabilization_s",
            policy.scale_down_stabilization_s,
            "must be >= 0",
        )
    if spec.max_replicas <= spec.replicas:
        problems.add(
            "max_replicas",
            spec.max_replicas,
            f"must be greater than replicas ({spec.replicas}) for autoscaling to have room; "
            "raise max_replicas or pass autoscaling=None",
        )
