"""The nodes a command's job runs on, from a workload of the profile."""

from __future__ import annotations

from fm_constructs.config import Orchestrator, WorkloadConfig
from fm_constructs.kubernetes.node_shape import WorkloadTarget


def job_target(workload: WorkloadConfig) -> WorkloadTarget:
    """``workload``'s nodes: its name and instance type, and whether they are HyperPod EKS
    nodes (labelled with the ``ml.`` type name)."""
    return WorkloadTarget(
        workload.name,
        workload.instance_type,
        hyperpod=workload.orchestrator is Orchestrator.HYPERPOD_EKS,
    )
