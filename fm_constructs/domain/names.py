"""Kubernetes names a workload owns on a shared cluster.

One function per name so that the constructs that create these objects, the job templates that
reference them and `fmc validate` that submits jobs agree by construction.
"""

from __future__ import annotations

import re

#: Every workload's ClusterQueue joins this Kueue cohort, so idle GPUs can be borrowed.
KUEUE_COHORT = "fm-accelerators"

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def workload_namespace(workload: str) -> str:
    """Namespace of a workload (profile key ``post_training`` -> ``post-training``)."""
    name = workload.replace("_", "-").lower()
    if not _DNS_LABEL.match(name):
        raise ValueError(f"workload name {workload!r} does not map to a DNS label ({name!r})")
    return name


def service_account_name(workload: str) -> str:
    """Service account a workload's pods run as (bound to the workload's Pod Identity role)."""
    return f"{workload_namespace(workload)}-workload"


def cluster_queue_name(workload: str) -> str:
    """Kueue ClusterQueue holding the workload's nominal accelerator quota."""
    return workload_namespace(workload)


def local_queue_name(workload: str) -> str:
    """Kueue LocalQueue in the workload namespace; jobs name it in ``kueue.x-k8s.io/queue-name``."""
    return f"{workload_namespace(workload)}-jobs"


def fsx_claim_name(workload: str) -> str:
    """PersistentVolumeClaim of the workload's FSx for Lustre file system, mounted at ``/fsx``."""
    return "fsx-lustre"
