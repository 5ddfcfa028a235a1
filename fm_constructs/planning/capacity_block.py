"""When a Capacity Block's node group scales, and when the last checkpoint must be written.

EC2 starts terminating a Capacity Block's instances 30 minutes before the block ends (EC2 User
Guide, Capacity Blocks; Auto Scaling User Guide: "scale in your Auto Scaling group to zero more
than 30 minutes before the Capacity Block reservation end time"). The node group is therefore
created with no nodes (the EKS guide: a node group created before the reservation is active
starts at desired size 0), scaled to the block's size at its start, and scaled to zero 40
minutes before its end, which leaves Kubernetes 10 minutes to drain the nodes before EC2
reclaims them. Training must have written, and exported to S3, its last checkpoint before the
scale-down. A block that has already started when the stack is deployed (bought for "now", or
a redeploy mid-block) gets its full size at creation and only the scale-down: a one-time
schedule in the past would never scale it up (:func:`block_phase`). Floor 1: no aws_cdk
import.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

#: EC2 begins terminating instances this long before the block's end.
EC2_TERMINATION_LEAD = timedelta(minutes=30)
#: The node group scales to zero this long before the block's end (drain before EC2 acts).
SCALE_DOWN_LEAD = timedelta(minutes=40)
ISO_FORMAT_HELP = "ISO 8601 UTC such as 2026-06-01T11:30:00Z"


@dataclass(frozen=True)
class CapacityBlockSchedule:
    """The moments that matter for one block (all UTC)."""

    start: datetime
    end: datetime

    @property
    def scale_up_at(self) -> datetime:
        return self.start

    @property
    def scale_down_at(self) -> datetime:
        return self.end - SCALE_DOWN_LEAD

    @property
    def ec2_terminates_at(self) -> datetime:
        return self.end - EC2_TERMINATION_LEAD

    @property
    def last_checkpoint_by(self) -> datetime:
        """The last checkpoint must be on Lustre and exported to S3 by the scale-down."""
        return self.scale_down_at


def parse_utc(value: str) -> datetime | None:
    """``2026-06-01T11:30:00Z`` (or ``+00:00``) as an aware UTC datetime; None if malformed or
    not in UTC."""
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None or parsed.utcoffset() != timedelta(0):
        return None
    return parsed.astimezone(UTC)


def capacity_block_schedule(
    start_time: str | None, end_time: str | None
) -> CapacityBlockSchedule | None:
    """The block's schedule when both times are well-formed UTC and the block outlasts the
    scale-down lead; None otherwise (:func:`fm_constructs.rules.capacity.capacity_block_times`
    says why)."""
    start = parse_utc(start_time) if start_time is not None else None
    end = parse_utc(end_time) if end_time is not None else None
    if start is None or end is None:
        return None
    schedule = CapacityBlockSchedule(start, end)
    return schedule if schedule.scale_down_at > schedule.start else None


class BlockPhase(StrEnum):
    """Where a block stands at deploy time: before its start, running (started, before the
    scale-down), or past the scale-down (its nodes are gone or going)."""

    AHEAD = "ahead"
    RUNNING = "running"
    OVER = "over"


def block_phase(schedule: CapacityBlockSchedule, now: datetime) -> BlockPhase:
    """The phase of the block at ``now`` (UTC)."""
    if now < schedule.scale_up_at:
        return BlockPhase.AHEAD
    if now < schedule.scale_down_at:
        return BlockPhase.RUNNING
    return BlockPhase.OVER


#: CDK context key that fixes the synthesis time (ISO 8601 UTC), so a synthesized template
#: does not depend on the clock (tests, reproducible builds). Absent: the clock.
SYNTH_TIME_CONTEXT = "fm-constructs:synth-time"


def synth_time(context_value: object = None) -> datetime:
    """The moment a synthesis takes as now: ``context_value`` (the context key above) when
    given, else the clock. A malformed value raises ValueError naming the key."""
    if context_value is None:
        return datetime.now(UTC)
    parsed = parse_utc(str(context_value))
    if parsed is None:
        raise ValueError(f"context {SYNTH_TIME_CONTEXT}: must be {ISO_FORMAT_HELP}")
    return parsed


def schedule_expression(moment: datetime) -> str:
    """EventBridge Scheduler one-time expression (``at(yyyy-mm-ddThh:mm:ss)``, UTC)."""
    return f"at({moment.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S')})"
