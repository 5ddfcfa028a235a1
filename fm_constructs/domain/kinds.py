"""The kinds a profile and the constructs choose between: one enum per choice, defined once.

The profile (``config/``), the building blocks (``compute/``, ``orchestration/``) and the
patterns all read these, so a value a profile names is the value a construct takes.
"""

from __future__ import annotations

from enum import StrEnum


class Orchestrator(StrEnum):
    """Who schedules work on the accelerated nodes.

    The HyperPod blocks take the two HyperPod members; there ``SLURM`` names
    ``HYPERPOD_SLURM`` and ``EKS`` means a HyperPod cluster orchestrated by EKS
    (:class:`~fm_constructs.orchestration.hyperpod.HyperPodCluster` reads it as
    ``HYPERPOD_EKS``).
    """

    EKS = "eks"
    HYPERPOD_EKS = "hyperpod-eks"
    HYPERPOD_SLURM = "hyperpod-slurm"
    #: AWS Parallel Computing Service: managed Slurm on the library's own launch templates.
    PCS = "pcs"
    #: The same member as ``HYPERPOD_SLURM`` (the HyperPod blocks' name for it).
    SLURM = "hyperpod-slurm"

    @property
    def is_slurm(self) -> bool:
        """Slurm schedules the nodes (HyperPod Slurm, PCS): no EKS cluster, no pods."""
        return self in (Orchestrator.HYPERPOD_SLURM, Orchestrator.PCS)

    @property
    def is_hyperpod(self) -> bool:
        """SageMaker HyperPod runs the nodes (Slurm or EKS orchestrated)."""
        return self in HYPERPOD


#: The orchestrators that run on SageMaker HyperPod.
HYPERPOD = (Orchestrator.HYPERPOD_EKS, Orchestrator.HYPERPOD_SLURM)


class CapacityKind(StrEnum):
    """Where the accelerated instances come from."""

    ON_DEMAND = "on-demand"
    ODCR = "odcr"
    CAPACITY_BLOCK = "capacity-block"
    TRAINING_PLAN = "training-plan"


class LoadBalancer(StrEnum):
    """How the inference endpoint is exposed: an internal NLB (default), an internet-facing
    NLB (TLS with a certificate; requests carry the endpoint's API key), or no load balancer."""

    INTERNAL = "internal"
    INTERNET_FACING = "internet-facing"
    NONE = "none"


class ServingMetric(StrEnum):
    """What inference autoscaling follows: waiting requests per replica, or p90 time to
    first token."""

    QUEUE_DEPTH = "queue-depth"
    TTFT_P90 = "ttft-p90"
