"""Replica autoscaling of a model server: the serving metric KEDA follows and its target
(the value type the profile's options, the inference pattern and the KEDA renderer share; no
aws_cdk import). Its checks are rules; its objects are rendered by
:func:`fm_constructs.kubernetes.model_server.scaled_object_manifest`."""

from __future__ import annotations

from dataclasses import dataclass

from fm_constructs.domain.kinds import ServingMetric
from fm_constructs.planning.serving_layout import AUTOSCALING_TARGET


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
