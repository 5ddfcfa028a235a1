"""Rules of reserved capacity: the forms of the identifiers that name it (reservation id,
resource group, training plan, placement group) and a Capacity Block's times, checked the
same way by the profile loader and by :class:`fm_constructs.compute.CapacitySource` (which
reports them under its own code).
"""

from __future__ import annotations

from fm_constructs.planning.capacity_block import (
    ISO_FORMAT_HELP,
    SCALE_DOWN_LEAD,
    CapacityBlockSchedule,
    parse_utc,
)
from fm_constructs.planning.capacity_ids import (
    PLACEMENT_GROUP_ARN_PATTERN,
    RESERVATION_ID_PATTERN,
    RESOURCE_GROUP_ARN_PATTERN,
    TRAINING_PLAN_ARN_LENGTH,
    TRAINING_PLAN_ARN_PATTERN,
)
from fm_constructs.rules.findings import Finding, define

CAPACITY_ID = define(
    "FM311",
    "A capacity identifier (reservation id, resource group ARN, training plan ARN) is malformed.",
    "Copy the identifier from the purchase or the console; the message shows its form.",
)


_LOW, _HIGH = TRAINING_PLAN_ARN_LENGTH
#: Each identifier's form and what a malformed one is told.
_FORMS = {
    "reservation_id": (
        RESERVATION_ID_PATTERN,
        "must be a capacity reservation id: cr- followed by 17 lowercase hex digits "
        "(e.g. cr-0123456789abcdef0)",
    ),
    "resource_group_arn": (
        RESOURCE_GROUP_ARN_PATTERN,
        "must be a resource group ARN (arn:aws:resource-groups:<region>:<account>:group/<name>)",
    ),
    "training_plan_arn": (
        TRAINING_PLAN_ARN_PATTERN,
        f"must be a SageMaker training plan ARN "
        f"(arn:aws:sagemaker:<region>:<account>:training-plan/<name>, {_LOW}-{_HIGH} characters)",
    ),
    "placement_group_arn": (
        PLACEMENT_GROUP_ARN_PATTERN,
        "must be a placement group ARN (arn:aws:ec2:<region>:<account>:placement-group/<name>)",
    ),
}


def identifier(key: str, value: str) -> list[Finding]:
    """``value`` of the identifier ``key`` (``reservation_id``, ``resource_group_arn``,
    ``training_plan_arn`` or ``placement_group_arn``) has its form."""
    pattern, allowed = _FORMS[key]
    well_formed = bool(pattern.match(value))
    if key == "training_plan_arn":
        well_formed = well_formed and _LOW <= len(value) <= _HIGH
    return [] if well_formed else [CAPACITY_ID.finding(key, value, allowed)]


def capacity_block_times(start_time: str | None, end_time: str | None) -> list[Finding]:
    """Malformed or inconsistent times of a Capacity Block (none when both are absent, or both
    valid UTC with the block outlasting the scale-down lead)."""
    out: list[Finding] = []
    parsed = {}
    for key, value in (("start_time", start_time), ("end_time", end_time)):
        if value is None:
            continue
        moment = parse_utc(value)
        if moment is None:
            out.append(CAPACITY_ID.finding(key, value, f"must be {ISO_FORMAT_HELP}"))
        else:
            parsed[key] = moment
    if (start_time is None) != (end_time is None):
        out.append(
            CAPACITY_ID.finding(
                "",
                None,
                "start_time / end_time: give both times of the Capacity Block (from "
                "describe-capacity-reservations: StartDate, EndDate), or neither",
            )
        )
        return out
    if len(parsed) < 2:
        return out
    schedule = CapacityBlockSchedule(parsed["start_time"], parsed["end_time"])
    if schedule.scale_down_at <= schedule.start:
        out.append(
            CAPACITY_ID.finding(
                "end_time",
                end_time,
                f"must be more than {int(SCALE_DOWN_LEAD.total_seconds() // 60)} minutes after "
                f"start_time ({start_time})",
            )
        )
    return out
