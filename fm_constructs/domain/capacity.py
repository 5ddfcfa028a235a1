# ruff: noqa: E501 (each field carries its documentation string, rendered verbatim into docs/configuration.md)
"""The capacity a workload's accelerated nodes come from, as plain data.

``[<workload>.capacity]`` of a profile loads into :class:`CapacityConfig`; the compute block
(:meth:`fm_constructs.compute.CapacitySource.from_config`) turns it into launch-template and
node-group settings. It lives on floor 1 so the profile and the block share one type without the
block importing the profile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fm_constructs.domain.kinds import CapacityKind


@dataclass(frozen=True, kw_only=True)
class ReservationConfig:
    """``[[<workload>.capacity.node_groups]]``: the ODCR of one managed node group."""

    reservation_id: str | None = field(
        default=None,
        metadata={"doc": "Capacity reservation id ('cr-' and 17 hex digits) of this node group."},
    )
    resource_group_arn: str | None = field(
        default=None,
        metadata={
            "doc": "ARN of a capacity-reservation resource group, instead of reservation_id."
        },
    )
    placement_group_arn: str | None = field(
        default=None,
        metadata={
            "doc": "The cluster placement group this reservation was created in; the node group launches into it."
        },
    )
    instance_count: int | None = field(
        default=None,
        metadata={
            "doc": "Instances the reservation holds, when known; the node group's nodes may not exceed it."
        },
    )


@dataclass(frozen=True, kw_only=True)
class CapacityConfig:
    """``[<workload>.capacity]``: on-demand, an ODCR, a Capacity Block or a training plan."""

    kind: CapacityKind = field(
        default=CapacityKind.ON_DEMAND,
        metadata={
            "doc": "Where instances come from: 'on-demand', 'odcr' (On-Demand Capacity Reservation), 'capacity-block' (EC2 Capacity Block for ML) or 'training-plan' (SageMaker HyperPod)."
        },
    )
    reservation_id: str | None = field(
        default=None,
        metadata={
            "doc": "Capacity reservation id ('cr-' and 17 hex digits), for 'odcr' or 'capacity-block'."
        },
    )
    resource_group_arn: str | None = field(
        default=None,
        metadata={
            "doc": "ARN of a capacity-reservation resource group, for 'odcr' instead of reservation_id."
        },
    )
    training_plan_arn: str | None = field(
        default=None,
        metadata={"doc": "SageMaker training plan ARN, for 'training-plan' (HyperPod only)."},
    )
    reserved_instance_count: int | None = field(
        default=None,
        metadata={
            "doc": "Instances the reservation holds, when known; instance_count may not exceed it."
        },
    )
    placement_group_arn: str | None = field(
        default=None,
        metadata={
            "doc": "'odcr': the cluster placement group the reservation was created in; nodes launch into it and no second group is created."
        },
    )
    fall_back_to_on_demand: bool = field(
        default=False,
        metadata={
            "doc": "'odcr': launch On-Demand instances when the reservation is full (default: never, the launch fails instead)."
        },
    )
    create_placement_group: bool = field(
        default=False,
        metadata={
            "doc": "'odcr': add a new cluster placement group over the reservation (default: none; reserved hosts are already placed, and a new group can fail with InsufficientInstanceCapacity)."
        },
    )
    node_groups: tuple[ReservationConfig, ...] = field(
        default=(),
        metadata={
            "doc": "'odcr': a fleet bought as several reservations, one [[<workload>.capacity.node_groups]] table per managed node group of the pool (EKS: 450 nodes a group), in order; instead of reservation_id / resource_group_arn / placement_group_arn."
        },
    )
    start_time: str | None = field(
        default=None,
        metadata={
            "doc": "'capacity-block': the block's start (ISO 8601 UTC, e.g. 2026-06-01T11:30:00Z); the node group scales to instance_count then."
        },
    )
    end_time: str | None = field(
        default=None,
        metadata={
            "doc": "'capacity-block': the block's end (ISO 8601 UTC); the node group scales to zero 40 minutes before it."
        },
    )
