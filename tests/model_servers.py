"""The model servers and render context the inference tests share: an 8B model on one node
and a 405B model across two (tensor parallel 8, pipeline parallel 2). Tests that need other
values derive them with ``dataclasses.replace``."""

from __future__ import annotations

from fm_constructs.kubernetes.model_server import RenderContext
from fm_constructs.planning.serving_layout import ModelServerSpec

SINGLE_NODE = ModelServerSpec(
    model_s3_prefix="models/llama-3.1-8b/",
    served_model_name="llama-8b",
    tensor_parallel_size=2,
    replicas=1,
    max_replicas=3,
)
MULTI_NODE = ModelServerSpec(
    model_s3_prefix="models/llama-3.1-405b/",
    served_model_name="llama-405b",
    tensor_parallel_size=8,
    pipeline_parallel_size=2,
    replicas=1,
    max_replicas=2,
)


def render_context(service_account: str = "inference-workload") -> RenderContext:
    """Where the inference objects render: namespace ``inference``, one data bucket."""
    return RenderContext(
        namespace="inference",
        service_account=service_account,
        bucket_name="data-bucket",
        region="us-east-1",
        node_labels={"fm-constructs/workload": "gpu"},
    )
