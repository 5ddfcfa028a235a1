"""Online rules of reserved capacity: an ODCR resource group, a capacity reservation or
Capacity Block, a SageMaker training plan, each against the workload that launches into it
(ec2:DescribeCapacityReservations, resource-groups:ListGroupResources,
sagemaker:DescribeTrainingPlan).

Each rule returns one finding: an ``INFO`` with what AWS holds when it matches, a warning
(waiting, ending soon, starting later) or an error naming every mismatch with its fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from fm_constructs.catalog import get_instance_type
from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.planning.aws_limits import node_groups_for, split_sizes
from fm_constructs.planning.capacity_block import parse_utc
from fm_constructs.profile.model import CapacityKind, WorkloadConfig
from fm_constructs.rules.findings import define
from fm_constructs.rules.online.aws import ask, ask_required

RESERVATION_GROUP = define(
    "FM702",
    "The ODCR resource group is missing, empty, or holds reservations that do not match "
    "the workload (type, zone, platform, tenancy, count).",
    "Add matching reservations to the group, or name the right group.",
    severity=None,
)
RESERVATION = define(
    "FM703",
    "The capacity reservation or Capacity Block is missing, not active or scheduled, ends "
    "soon, or does not match the workload (type, zone, count, platform, tenancy).",
    "Reserve matching capacity (fmc capacity search) and update the profile.",
    severity=None,
)
TRAINING_PLAN = define(
    "FM704",
    "The training plan is missing, not active or scheduled, for another target, zone or "
    "type, or too small for the workload.",
    "Buy or pick a matching training plan for target resource hyperpod-cluster.",
    severity=None,
)


@dataclass(frozen=True)
class Where:
    """Where and when the capacity is checked: the GPU zone and region of the profile, the
    time now, and how many hours before its end a reservation or plan warns."""

    zone: str
    region: str
    now: datetime
    expiry_warning_hours: int = 48


_GOOD_RESERVATION_STATES = {"active", "scheduled"}
_WAITING_RESERVATION_STATES = {"pending", "payment-pending", "assessing", "delayed"}
_GOOD_PLAN_STATES = {"Active", "Scheduled"}
#: Reserved-capacity segments of a plan that hold no instances any more (botocore
#: ``ReservedCapacityStatus``).
_ENDED_CAPACITY_STATES = {"Expired", "Failed"}


@dataclass(frozen=True)
class ReservationTarget:
    """One reservation target of a workload: the capacity table's own, or one entry of
    ``capacity.node_groups`` with the nodes of its managed node group; ``key`` is its
    profile key path."""

    key: str
    wanted: int
    reservation_id: str | None
    resource_group_arn: str | None
    placement_group_arn: str | None


def reservation_targets(w: WorkloadConfig) -> list[ReservationTarget]:
    """The reservations the workload's node groups launch into, each with the nodes it must
    hold (one per managed node group when the profile lists ``capacity.node_groups``)."""
    cap = w.capacity
    wanted = w.largest_size
    if not cap.node_groups:
        return [
            ReservationTarget(
                f"{w.name}.capacity",
                wanted,
                cap.reservation_id,
                cap.resource_group_arn,
                cap.placement_group_arn,
            )
        ]
    sizes = [s[2] for s in split_sizes(wanted, wanted, wanted, node_groups_for(wanted))]
    return [
        ReservationTarget(
            f"{w.name}.capacity.node_groups[{i}]",
            sizes[i] if i < len(sizes) else 0,
            group.reservation_id,
            group.resource_group_arn,
            group.placement_group_arn,
        )
        for i, group in enumerate(cap.node_groups)
    ]


def _result(code: str, severity: Severity, detail: str, fix: str = "") -> list[Finding]:
    """The one finding of a capacity rule: ``detail`` is the line printed, ``fix`` the fix."""
    return [Finding(code, severity, "", None, detail, fix)]


def _hours_left(end: datetime | None, now: datetime) -> float | None:
    if end is None:
        return None
    if end.tzinfo is None:
        end = end.replace(tzinfo=UTC)
    return (end - now).total_seconds() / 3600


def _verdict(
    code: str, summary: str, failures: list[tuple[str, str]], warnings: list[tuple[str, str]]
) -> list[Finding]:
    """An error listing every failure (and warning), else a warning, else the summary."""
    if failures:
        return _result(
            code,
            Severity.ERROR,
            f"{summary}; " + "; ".join(f for f, _ in failures + warnings),
            "; ".join(fix for _, fix in failures + warnings),
        )
    if warnings:
        return _result(
            code,
            Severity.WARNING,
            f"{summary}; " + "; ".join(w for w, _ in warnings),
            "; ".join(fix for _, fix in warnings),
        )
    return _result(code, Severity.INFO, summary)


def reservation_group(
    resource_groups: Any,
    ec2: Any,
    w: WorkloadConfig,
    target: ReservationTarget,
    where: Where,
) -> list[Finding]:
    """The group's reservations that match the nodes (type, zone, Linux/UNIX, usable state)
    hold the largest node group; the launch template never falls back to On-Demand."""
    code = RESERVATION_GROUP.code
    group_arn = target.resource_group_arn or ""
    ids: list[str] = []
    token: str | None = None
    while True:
        params: dict[str, Any] = {"Group": group_arn}
        if token:
            params["NextToken"] = token
        answer = ask(
            resource_groups,
            "list_group_resources",
            "resource-groups:ListGroupResources",
            missing_codes=frozenset({"NotFoundException", "BadRequestException"}),
            **params,
        )
        if answer is None:
            return _result(
                code,
                Severity.ERROR,
                f"resource group {group_arn} does not exist in {where.region}",
                f"fix {target.key}.resource_group_arn",
            )
        for item in answer.get("Resources", []):
            identifier = item.get("Identifier", {})
            if identifier.get("ResourceType") == "AWS::EC2::CapacityReservation":
                ids.append(str(identifier["ResourceArn"]).rsplit("/", 1)[-1])
        token = answer.get("NextToken")
        if not token:
            break
    if not ids:
        return _result(
            code,
            Severity.ERROR,
            f"resource group {group_arn} holds no capacity reservations",
            "add the reservations to the group (aws resource-groups group-resources)",
        )
    described = ask_required(
        ec2,
        "describe_capacity_reservations",
        "ec2:DescribeCapacityReservations",
        CapacityReservationIds=ids,
    ).get("CapacityReservations", [])
    usable = [
        r
        for r in described
        if r.get("InstanceType") == w.instance_type
        and r.get("AvailabilityZone") == where.zone
        and r.get("InstancePlatform", "Linux/UNIX") == "Linux/UNIX"
        and r.get("State") in _GOOD_RESERVATION_STATES
    ]
    total = sum(int(r.get("TotalInstanceCount", 0)) for r in usable)
    wanted = target.wanted
    detail = (
        f"{group_arn}: {len(described)} reservations, {len(usable)} usable for "
        f"{w.instance_type} in {where.zone} holding {total} instances; the profile wants "
        f"{wanted}"
    )
    if total >= wanted:
        return _result(code, Severity.INFO, detail)
    return _result(
        code,
        Severity.ERROR,
        detail + " (launches beyond that fail: the template never falls back to On-Demand)",
        f"add reservations of {w.instance_type} in {where.zone} to the group, lower "
        f"{w.name}.instance_count, or set {w.name}.capacity.fall_back_to_on_demand = true",
    )


def reservation(
    ec2: Any,
    w: WorkloadConfig,
    target: ReservationTarget,
    where: Where,
) -> list[Finding]:
    """The reservation exists, is active or scheduled, and matches type, zone and count."""
    code = RESERVATION.code
    reservation_id = target.reservation_id or ""
    answer = ask(
        ec2,
        "describe_capacity_reservations",
        "ec2:DescribeCapacityReservations",
        missing_codes=frozenset(
            {"InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"}
        ),
        CapacityReservationIds=[reservation_id],
    )
    found = (answer or {}).get("CapacityReservations", [])
    if not found:
        return _result(
            code,
            Severity.ERROR,
            f"{reservation_id} does not exist in {where.region} for this account",
            f"fix {target.key}.reservation_id, or the region / account (--region, --aws-profile)",
        )
    r = found[0]
    failures: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = []
    state = str(r.get("State", "unknown"))
    if state in _WAITING_RESERVATION_STATES:
        warnings.append((f"state is {state!r}", "wait until it is 'scheduled' or 'active'"))
    elif state not in _GOOD_RESERVATION_STATES:
        failures.append(
            (
                f"state is {state!r}",
                "reserve new capacity (fmc capacity search) and update the profile",
            )
        )
    if r.get("InstanceType") != w.instance_type:
        failures.append(
            (
                f"it holds {r.get('InstanceType')}, the profile wants {w.instance_type}",
                f"set {w.name}.instance_type = {r.get('InstanceType')!r} or use a "
                "matching reservation",
            )
        )
    if r.get("AvailabilityZone") != where.zone:
        failures.append(
            (
                f"it is in {r.get('AvailabilityZone')}, the GPU zone is {where.zone}",
                f"set platform.availability_zone = {r.get('AvailabilityZone')!r}",
            )
        )
    total = int(r.get("TotalInstanceCount", 0))
    wanted = target.wanted
    if total < wanted:
        failures.append(
            (
                f"it holds {total} instances, the profile wants {wanted}",
                f"set {w.name}.instance_count (and max_instance_count) <= {total} or reserve more",
            )
        )
    failures += _reservation_details(w, r, target)
    reservation_type = r.get("ReservationType", "default")
    if w.capacity.kind is CapacityKind.CAPACITY_BLOCK and reservation_type != "capacity-block":
        failures.append(
            (
                f"it is not a Capacity Block (type {reservation_type!r})",
                f"set {w.name}.capacity.kind = 'odcr'",
            )
        )
    if w.capacity.kind is CapacityKind.ODCR and reservation_type == "capacity-block":
        failures.append(
            (
                "it is a Capacity Block",
                f"set {w.name}.capacity.kind = 'capacity-block' (launches need market type "
                "capacity-block)",
            )
        )
    hours = _hours_left(r.get("EndDate"), where.now)
    end_text = f"ends {r['EndDate']:%Y-%m-%d %H:%M} UTC" if r.get("EndDate") else "no end date"
    if hours is not None and hours <= 0:
        failures.append(("it has ended", "reserve new capacity and update the profile"))
    elif hours is not None and hours < where.expiry_warning_hours:
        warnings.append(
            (
                f"it ends in {hours:.0f} h",
                "finish or checkpoint before then; Capacity Block instances are terminated at "
                "the end (scale EKS node groups to zero first)",
            )
        )
    summary = (
        f"{reservation_id}: {state}, {total} x {r.get('InstanceType')} in "
        f"{r.get('AvailabilityZone')}, {end_text}"
    )
    return _verdict(code, summary, failures, warnings)


def _reservation_details(
    w: WorkloadConfig, r: dict[str, Any], target: ReservationTarget
) -> list[tuple[str, str]]:
    """Platform, tenancy, placement group and (for a block) start and end against what
    the launch template and the profile expect."""
    out: list[tuple[str, str]] = []
    platform = r.get("InstancePlatform", "Linux/UNIX")
    if platform != "Linux/UNIX":
        out.append(
            (
                f"its platform is {platform!r}, the nodes run Linux/UNIX",
                "use a Linux/UNIX reservation",
            )
        )
    tenancy = r.get("Tenancy", "default")
    if tenancy != "default":
        out.append(
            (
                f"its tenancy is {tenancy!r}, the launch template uses default tenancy",
                "use a default-tenancy reservation",
            )
        )
    cap = w.capacity
    group = r.get("PlacementGroupArn")
    if group != target.placement_group_arn and cap.kind is CapacityKind.ODCR:
        if group:
            out.append(
                (
                    f"it was made in placement group {group}, which the profile does not "
                    "name (instances launched outside it do not use it)",
                    f"set {target.key}.placement_group_arn = {group!r}",
                )
            )
        else:
            out.append(
                (
                    f"it has no placement group, the profile names {target.placement_group_arn}",
                    f"remove {target.key}.placement_group_arn",
                )
            )
    if cap.kind is CapacityKind.CAPACITY_BLOCK:
        for key, field in (("start_time", "StartDate"), ("end_time", "EndDate")):
            given = getattr(cap, key)
            actual = r.get(field)
            if given is None or actual is None:
                continue
            if actual.tzinfo is None:
                actual = actual.replace(tzinfo=UTC)
            if parse_utc(given) != actual:
                actual_text = f"{actual:%Y-%m-%dT%H:%M:%SZ}"
                out.append(
                    (
                        f"its {field} is {actual_text}, the profile's {key} is {given}",
                        f"set {w.name}.capacity.{key} = {actual_text!r} (the node group "
                        "scales on these times)",
                    )
                )
    return out


def training_plan(
    sagemaker: Any,
    w: WorkloadConfig,
    where: Where,
) -> list[Finding]:
    """The SageMaker training plan exists, is usable, and covers the HyperPod instances."""
    code = TRAINING_PLAN.code
    arn = w.capacity.training_plan_arn or ""
    answer = ask(
        sagemaker,
        "describe_training_plan",
        "sagemaker:DescribeTrainingPlan",
        missing_codes=frozenset({"ResourceNotFound", "ValidationException"}),
        TrainingPlanName=arn,
    )
    if answer is None:
        return _result(
            code,
            Severity.ERROR,
            f"{arn} does not exist in {where.region} for this account",
            f"fix {w.name}.capacity.training_plan_arn (aws sagemaker list-training-plans)",
        )
    failures: list[tuple[str, str]] = []
    warnings: list[tuple[str, str]] = []
    status = str(answer.get("Status", "unknown"))
    if status == "Pending":
        warnings.append(("status is 'Pending'", "wait until it is 'Scheduled' or 'Active'"))
    elif status not in _GOOD_PLAN_STATES:
        failures.append((f"status is {status!r}", "buy a new training plan and update the profile"))
    total = int(answer.get("TotalInstanceCount", 0))
    if total < w.instance_count:
        failures.append(
            (
                f"it holds {total} instances, the profile wants {w.instance_count}",
                f"set {w.name}.instance_count <= {total} or extend the plan",
            )
        )
    available = answer.get("AvailableInstanceCount")
    if available is not None and total >= w.instance_count and available < w.instance_count:
        failures.append(
            (
                f"only {available} of its {total} instances are still available "
                f"({answer.get('InUseInstanceCount', 0)} in use), the profile wants "
                f"{w.instance_count}",
                f"set {w.name}.instance_count <= {available}, or free the plan's instances "
                "used by another cluster",
            )
        )
    summaries = answer.get("ReservedCapacitySummaries", [])
    zones = sorted({str(s["AvailabilityZone"]) for s in summaries if s.get("AvailabilityZone")})
    if zones and where.zone not in zones:
        failures.append(
            (
                f"it reserves capacity in {', '.join(zones)}, the GPU zone is {where.zone}",
                f"set platform.availability_zone = {zones[0]!r} (HyperPod nodes run in "
                "the plan's zone)",
            )
        )
    # HyperPod nodes run in the GPU zone: only the plan's capacity of the profile's type
    # there counts (a plan split 4 + 4 over two zones does not hold 8 nodes in one).
    hyperpod_name = get_instance_type(w.instance_type).hyperpod_name
    in_zone = sum(
        int(s.get("TotalInstanceCount", 0))
        for s in summaries
        if s.get("AvailabilityZone") == where.zone
        and s.get("InstanceType") == hyperpod_name
        and s.get("Status") not in _ENDED_CAPACITY_STATES
    )
    types = {s.get("InstanceType") for s in summaries}
    if (
        where.zone in zones
        and hyperpod_name in types
        and total >= w.instance_count
        and in_zone < w.instance_count
    ):
        failures.append(
            (
                f"it reserves {in_zone} {hyperpod_name} in {where.zone} (of {total} in all), "
                f"the profile wants {w.instance_count} there",
                f"set {w.name}.instance_count <= {in_zone}, or use a plan with "
                f"{w.instance_count} in {where.zone}",
            )
        )
    start = answer.get("StartTime")
    until_start = _hours_left(start, where.now)
    if until_start is not None and until_start > 0:
        warnings.append(
            (
                f"it starts {start:%Y-%m-%d %H:%M} UTC, in {until_start:.0f} h",
                "deploy the HyperPod stack after the start: nodes cannot launch before it",
            )
        )
    if types and hyperpod_name not in types:
        failures.append(
            (
                f"it reserves {', '.join(sorted(t for t in types if t))}, not {hyperpod_name}",
                f"set {w.name}.instance_type to the plan's type or use a matching plan",
            )
        )
    targets = answer.get("TargetResources", [])
    if targets and "hyperpod-cluster" not in targets:
        failures.append(
            (
                f"it targets {', '.join(targets)}, not hyperpod-cluster",
                "buy a training plan for target resource hyperpod-cluster",
            )
        )
    hours = _hours_left(answer.get("EndTime"), where.now)
    if hours is not None and hours <= 0:
        failures.append(("it has ended", "buy a new training plan"))
    elif hours is not None and hours < where.expiry_warning_hours:
        warnings.append((f"it ends in {hours:.0f} h", "finish or checkpoint before then"))
    summary = (
        f"{answer.get('TrainingPlanName', arn)}: {status}, {total} instances"
        + (f" ({available} available)" if available is not None else "")
        + (f" in {', '.join(zones)}" if zones else "")
    )
    return _verdict(code, summary, failures, warnings)
