"""Scheduled scaling of a Capacity Block node group: to the block's size when it starts, to
zero 40 minutes before it ends.

An EKS managed node group's Auto Scaling group is created by EKS, so the template cannot attach
Auto Scaling scheduled actions to it; two one-time EventBridge Scheduler schedules call the EKS
API instead (``UpdateNodegroupConfig``, a Scheduler universal target), with a role that may
update this one node group only. The timing is
:class:`fm_constructs.planning.capacity_block.CapacityBlockSchedule`: EC2 begins terminating
the block's instances 30 minutes before its end; the scale-down 10 minutes earlier lets
Kubernetes drain the nodes first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aws_cdk import Annotations, Stack
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.planning.capacity_block import (
    SYNTH_TIME_CONTEXT,
    BlockPhase,
    CapacityBlockSchedule,
    block_phase,
    schedule_expression,
    synth_time,
)

if TYPE_CHECKING:
    from fm_constructs.compute.capacity import CapacitySource

#: EventBridge Scheduler universal target for the EKS UpdateNodegroupConfig API.
UPDATE_NODEGROUP_TARGET = "arn:aws:scheduler:::aws-sdk:eks:updateNodegroupConfig"


@dataclass(frozen=True)
class ScaledNodeGroup:
    """The EKS managed node group a Capacity Block's schedules scale: ``node_count`` nodes
    while the block runs, the group's ``min_size`` (capped at ``node_count``) and ``max_size``
    (at least ``node_count``) kept around it."""

    cluster_name: str
    nodegroup_name: str
    nodegroup_arn: str
    node_count: int
    min_size: int = 0
    max_size: int | None = None


class CapacityBlockScaling(Construct):
    """Two schedules (``ScaleUp``, ``ScaleDown``) and their role (``Role``); ``ScaleDown``
    alone when ``scale_up`` is False (the block has started: the group is created at its
    size)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        node_group: ScaledNodeGroup,
        schedule: CapacityBlockSchedule,
        scale_up: bool = True,
    ) -> None:
        # Imported where used: a profile without a Capacity Block does not load the module
        # (~70 ms of every synthesis).
        from aws_cdk import aws_scheduler as scheduler

        super().__init__(scope, construct_id)
        node_count = node_group.node_count
        self.schedule = schedule
        self.role = iam.Role(
            self,
            "Role",
            description="Scales a Capacity Block node group at the block's start and end",
            assumed_by=iam.ServicePrincipal(
                "scheduler.amazonaws.com",
                conditions={"StringEquals": {"aws:SourceAccount": Stack.of(self).account}},
            ),
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                sid="UpdateThisNodegroup",
                actions=["eks:UpdateNodegroupConfig"],
                resources=[node_group.nodegroup_arn],
            )
        )
        maximum = max(node_group.max_size or node_count, node_count, 1)
        sizes = {
            "ScaleUp": (schedule.scale_up_at, node_count, min(node_group.min_size, node_count)),
            "ScaleDown": (schedule.scale_down_at, 0, 0),
        }
        if not scale_up:
            del sizes["ScaleUp"]
        self.schedules: dict[str, scheduler.CfnSchedule] = {}
        for name, (moment, desired, minimum) in sizes.items():
            self.schedules[name] = scheduler.CfnSchedule(
                self,
                name,
                description=f"{name} of a Capacity Block node group to {desired} nodes",
                schedule_expression=schedule_expression(moment),
                schedule_expression_timezone="UTC",
                flexible_time_window=scheduler.CfnSchedule.FlexibleTimeWindowProperty(mode="OFF"),
                target=scheduler.CfnSchedule.TargetProperty(
                    arn=UPDATE_NODEGROUP_TARGET,
                    role_arn=self.role.role_arn,
                    input=Stack.of(self).to_json_string(
                        {
                            "clusterName": node_group.cluster_name,
                            "nodegroupName": node_group.nodegroup_name,
                            "scalingConfig": {
                                "minSize": minimum,
                                "maxSize": maximum,
                                "desiredSize": desired,
                            },
                        }
                    ),
                    retry_policy=scheduler.CfnSchedule.RetryPolicyProperty(
                        maximum_retry_attempts=10, maximum_event_age_in_seconds=900
                    ),
                ),
            )


def capacity_block_phase(scope: Construct, capacity: CapacitySource) -> BlockPhase | None:
    """Where the block of ``capacity`` stands at synthesis (the context key
    ``fm-constructs:synth-time`` fixes the moment); None when its times are unknown."""
    schedule = capacity.capacity_block_schedule
    if schedule is None:
        return None
    return block_phase(schedule, synth_time(scope.node.try_get_context(SYNTH_TIME_CONTEXT)))


def add_capacity_block_scaling(
    scope: Construct,
    capacity: CapacitySource,
    node_group: ScaledNodeGroup,
) -> CapacityBlockScaling | None:
    """For a node group of a Capacity Block: the schedules when the block's times are known,
    else a warning that says how to scale by hand. A block that has started (the group was
    created at its size, see :func:`capacity_block_phase`) gets the scale-down alone; one past
    its scale-down gets none."""
    schedule = capacity.capacity_block_schedule
    node_count = node_group.node_count
    if schedule is None:
        Annotations.of(scope).add_warning_v2(
            "fm:capacity-block-unscheduled",
            f"The Capacity Block node group is created with 0 nodes. Give the block's "
            f"start_time and end_time to scale it automatically, or scale it to {node_count} "
            f"when the block is active (aws eks update-nodegroup-config --scaling-config "
            f"minSize=0,maxSize={node_count},desiredSize={node_count}) and to 0 at least 40 "
            f"minutes before its end: EC2 begins terminating the instances 30 minutes before.",
        )
        return None
    phase = capacity_block_phase(scope, capacity)
    if phase is BlockPhase.OVER:
        Annotations.of(scope).add_warning_v2(
            "fm:capacity-block-over",
            f"The Capacity Block's scale-down time {schedule.scale_down_at:%Y-%m-%d %H:%M} UTC "
            f"has passed: the node group is created with 0 nodes and no schedule (EC2 "
            f"terminates the block's instances from {schedule.ec2_terminates_at:%H:%M} UTC). "
            f"Give the times of a new block, or remove the workload.",
        )
        return None
    if phase is BlockPhase.RUNNING:
        Annotations.of(scope).add_warning_v2(
            "fm:capacity-block-started",
            f"The Capacity Block started at {schedule.start:%Y-%m-%d %H:%M} UTC, before this "
            f"synthesis: the node group is created with {node_count} nodes at once and only "
            f"the scale-down to 0 at {schedule.scale_down_at:%Y-%m-%d %H:%M} UTC is scheduled; "
            f"write the last checkpoint before then.",
        )
    else:
        Annotations.of(scope).add_info(
            f"Capacity Block node group: 0 nodes until {schedule.scale_up_at:%Y-%m-%d %H:%M} "
            f"UTC, {node_count} until {schedule.scale_down_at:%Y-%m-%d %H:%M} UTC, then 0 (EC2 "
            f"terminates at {schedule.ec2_terminates_at:%H:%M}); write the last checkpoint "
            f"before {schedule.last_checkpoint_by:%Y-%m-%d %H:%M} UTC."
        )
    return CapacityBlockScaling(
        scope,
        "CapacityBlockScaling",
        node_group=node_group,
        schedule=schedule,
        scale_up=phase is not BlockPhase.RUNNING,
    )
