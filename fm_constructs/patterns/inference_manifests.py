"""The model server's layout check, and the names its callers import from here.

The value types live in :mod:`fm_constructs.planning.serving_layout` and
:mod:`fm_constructs.planning.autoscaling` (re-exported here and from
:mod:`fm_constructs.patterns`), their checks in :mod:`fm_constructs.rules.inference`, their
Kubernetes objects in :mod:`fm_constructs.kubernetes.model_server`. :func:`plan_layout` maps a
replica onto nodes:

* A replica needs ``tensor_parallel_size x pipeline_parallel_size`` GPUs: one ``Deployment``
  pod when they fit on one node, else a ``LeaderWorkerSet`` group of whole nodes.
* Tensor parallelism stays inside a node: a tensor-parallel size larger than the GPUs
  of one node is rejected with the pipeline-parallel split that fixes it.
"""

from __future__ import annotations

from fm_constructs.catalog import InstanceSpec
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning.autoscaling import AutoscalingPolicy as AutoscalingPolicy
from fm_constructs.planning.serving_layout import DEFAULT_PORT as DEFAULT_PORT
from fm_constructs.planning.serving_layout import VLLM_IMAGE as VLLM_IMAGE
from fm_constructs.planning.serving_layout import ModelServerSpec as ModelServerSpec
from fm_constructs.planning.serving_layout import ServingLayout
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import inference as inference_rules


def plan_layout(spec: ModelServerSpec, instance: InstanceSpec) -> ServingLayout:
    """Map a replica onto ``instance`` nodes (:func:`fm_constructs.rules.inference.
    plan_layout`, the function the profile loader runs); raise FmValidationError listing every
    problem of the spec and the layout."""
    problems = Problems(context="ModelServerSpec", code=codes.MODEL_SERVER)
    problems.add_findings(inference_rules.model_server_spec(spec))
    if any(f.key in ("tensor_parallel_size", "pipeline_parallel_size") for f in problems.findings):
        problems.raise_if_any()  # no layout without whole, positive sizes
    try:
        layout = inference_rules.plan_layout(
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
