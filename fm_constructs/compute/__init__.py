"""Compute building blocks for accelerated nodes: placement, capacity, GPU launch template."""

from fm_constructs.compute.capacity import CapacitySource
from fm_constructs.compute.capacity_reservation import OnDemandCapacityReservation
from fm_constructs.compute.launch_template import GpuLaunchTemplate
from fm_constructs.compute.placement import ClusterPlacementGroup
from fm_constructs.compute.user_data import NodeadmCluster, UserDataMode
from fm_constructs.domain.kinds import CapacityKind

__all__ = [
    "CapacityKind",
    "CapacitySource",
    "ClusterPlacementGroup",
    "GpuLaunchTemplate",
    "NodeadmCluster",
    "OnDemandCapacityReservation",
    "UserDataMode",
]
