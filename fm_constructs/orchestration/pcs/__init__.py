"""AWS Parallel Computing Service (managed Slurm) as an orchestrator: the cluster, its login
and accelerated compute node groups, queues and the node role PCS requires. Nodes run the
Slurm node scripts HyperPod runs too (:mod:`fm_constructs.orchestration.slurm`: FSx for
Lustre, containers, metrics), through a PCS wrapper."""

from fm_constructs.orchestration.pcs.cluster import IPcsCluster, PcsCluster
from fm_constructs.orchestration.pcs.node_group import (
    IPcsComputeNodeGroup,
    PcsComputeNodeGroup,
    purchase_option,
)
from fm_constructs.orchestration.pcs.queue import IPcsQueue, PcsQueue
from fm_constructs.orchestration.pcs.role import IPcsInstanceProfile, PcsInstanceRole
from fm_constructs.planning.pcs_limits import PcsClusterSize

__all__ = [
    "IPcsCluster",
    "IPcsComputeNodeGroup",
    "IPcsInstanceProfile",
    "IPcsQueue",
    "PcsCluster",
    "PcsClusterSize",
    "PcsComputeNodeGroup",
    "PcsInstanceRole",
    "PcsQueue",
    "purchase_option",
]
