"""AWS PCS limits: cluster size tiers and what one account may create at a time (pure data).

Sizes, from the PCS API reference (``CreateCluster`` ``size``; ``Cluster``): SMALL runs up to
32 compute nodes and 256 jobs, MEDIUM 512 and 8,192, LARGE 2,048 and 16,384. The size is
create-only (``AWS::PCS::Cluster`` ``Size`` requires replacement), so the smallest tier the
workload's largest node count fits is chosen once. Only one cluster per region and account may
be in ``Creating`` at a time (``CreateCluster`` fails with ``ServiceQuotaExceededException``
otherwise), so the stacks never create two PCS clusters side by side.
"""

from __future__ import annotations

import re
from enum import StrEnum


class PcsClusterSize(StrEnum):
    """The size tier of a PCS cluster (``AWS::PCS::Cluster`` ``Size``)."""

    SMALL = "SMALL"
    MEDIUM = "MEDIUM"
    LARGE = "LARGE"


#: Compute nodes and jobs (running and queued) of each tier.
MAX_NODES = {PcsClusterSize.SMALL: 32, PcsClusterSize.MEDIUM: 512, PcsClusterSize.LARGE: 2048}
MAX_JOBS = {PcsClusterSize.SMALL: 256, PcsClusterSize.MEDIUM: 8192, PcsClusterSize.LARGE: 16384}
#: The login node's default instance type (general purpose, 16 vCPUs: builds and job
#: submission, not training).
LOGIN_INSTANCE_TYPE = "m7i.4xlarge"
#: PCS clusters one account may have in Creating per region.
CLUSTERS_CREATING_PER_REGION = 1


#: Names PCS accepts (API model: ``clusterName`` 3-40 characters, ``computeNodeGroupName`` and
#: ``queueName`` 3-25; a letter first, then letters, digits and '-'; never ``pcs_...``).
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9-]+")
CLUSTER_NAME_MAX = 40
GROUP_NAME_MAX = 25


def name_problem(name: str, most: int) -> str | None:
    """Why PCS refuses ``name`` (at most ``most`` characters), or None."""
    if not 3 <= len(name) <= most or not _NAME.fullmatch(name):
        return f"must be 3 to {most} characters, a letter first, then letters, digits and '-'"
    return None


def cluster_size_for(node_count: int) -> PcsClusterSize | None:
    """The smallest tier that runs ``node_count`` compute nodes (login nodes included: PCS
    counts every instance of its node groups), or None above the largest."""
    for size, most in MAX_NODES.items():
        if node_count <= most:
            return size
    return None
