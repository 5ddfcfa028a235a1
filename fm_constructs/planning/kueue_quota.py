"""Kueue nominal quota of a node pool, from the instance catalog.

The workload patterns write it into the ClusterQueues and ``fmc plan`` prints it, so the quota
a plan shows is the quota a queue admits.
"""

from __future__ import annotations

from fm_constructs.catalog import get_instance_type
from fm_constructs.domain import names


def capacity_quota(instance_type: str, nodes: int) -> dict[str, int | str]:
    """Kueue nominal quota of a node pool of ``nodes`` ``instance_type`` nodes: accelerators,
    EFA interfaces, vCPUs, memory, and on EFA nodes the huge pages of one training pod each.
    Kubernetes keeps a little CPU and memory of each node for itself, so pods never get all of
    it: the quota bounds admission, the nodes' allocatable bounds placement."""
    spec = get_instance_type(instance_type)
    quota: dict[str, int | str] = {
        "cpu": spec.vcpus * nodes,
        "memory": f"{spec.memory_gib * nodes}Gi",
        names.accelerator_resource(spec.eks_ami_family): spec.accelerator_count * nodes,
    }
    if spec.efa_supported:
        quota[names.EFA_RESOURCE] = spec.max_efa_interfaces * nodes
        quota[names.HUGEPAGES_2MI_RESOURCE] = f"{names.EFA_HUGEPAGES_2MI_MI * nodes}Mi"
    return quota
