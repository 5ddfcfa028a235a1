"""``fmc capacity search|purchase``: EC2 Capacity Blocks for ML.

Durations follow the EC2 API (DescribeCapacityBlockOfferings ``CapacityDurationHours``): whole
days from 1 to 14, then whole weeks up to 182 days. A purchase is paid up front and cannot be
cancelled, so ``purchase`` refuses to run without ``--yes``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from fm_constructs.catalog import get_instance_type
from fm_constructs.cli.aws import AwsSession, call_required
from fm_constructs.cli.document import document, json_field
from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.output import Reporter, render_table
from fm_constructs.cli.pricing import load_prices
from fm_constructs.config import Profile, WorkloadConfig
from fm_constructs.errors import FmValidationError

DAY_HOURS = 24
WEEK_HOURS = 7 * DAY_HOURS
MAX_DAILY_HOURS = 14 * DAY_HOURS
MAX_HOURS = 182 * DAY_HOURS
INSTANCE_PLATFORM = "Linux/UNIX"


def is_valid_duration_hours(hours: int) -> bool:
    """1-14 days in whole days, or up to 182 days in whole weeks."""
    if hours <= 0 or hours % DAY_HOURS:
        return False
    if hours <= MAX_DAILY_HOURS:
        return True
    return hours <= MAX_HOURS and hours % WEEK_HOURS == 0


def duration_rule() -> str:
    return (
        "must be whole days from 1 to 14 (24-336 hours in steps of 24), then whole weeks up to "
        "182 days (504-4368 hours in steps of 168)"
    )


@dataclass(frozen=True)
class SearchRequest:
    """A validated Capacity Block search."""

    workload: str
    instance_type: str
    instance_count: int
    duration_hours: int
    start: datetime | None
    end: datetime | None


def _date(text: str | None, flag: str) -> datetime | None:
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        raise CliError(
            f"{flag}: must be a date YYYY-MM-DD (UTC), got {text!r}", ExitCode.USAGE
        ) from None


def _workload(profile: Profile, name: str) -> WorkloadConfig:
    workload: WorkloadConfig = getattr(profile, name)
    return workload


def search_request(args: argparse.Namespace, profile: Profile) -> SearchRequest:
    """Validate the search flags against the profile (no AWS call); CliError on bad input."""
    workload = _workload(profile, args.workload)
    instance_type = args.instance_type or workload.instance_type
    if not instance_type:
        raise CliError(
            f"capacity search: {args.workload} has no instance_type; pass --instance-type",
            ExitCode.USAGE,
        )
    hours = args.days * DAY_HOURS if args.days is not None else args.duration_hours
    if not is_valid_duration_hours(hours):
        raise CliError(
            f"capacity search: duration {duration_rule()}, got {hours} hours", ExitCode.USAGE
        )
    start, end = _date(args.start, "--start"), _date(args.end, "--end")
    if start is not None and end is not None and end <= start:
        raise CliError(
            f"capacity search: --end must be after --start, got {args.start} .. {args.end}",
            ExitCode.USAGE,
        )
    return SearchRequest(
        workload=args.workload,
        instance_type=instance_type,
        instance_count=args.count or workload.instance_count,
        duration_hours=hours,
        start=start,
        end=end,
    )


@dataclass(frozen=True)
class Offering:
    """One Capacity Block offering with its price per instance-hour."""

    offering_id: str
    instance_type: str
    availability_zone: str
    instance_count: int
    start: datetime = field(metadata=json_field(encode=datetime.isoformat))
    end: datetime = field(metadata=json_field(encode=datetime.isoformat))
    duration_hours: int
    upfront_fee: float
    currency: str

    JSON_PROPERTIES = ("price_per_instance_hour",)

    @property
    def price_per_instance_hour(self) -> float:
        """The upfront fee spread over every instance-hour of the block, in ``currency``."""
        return self.upfront_fee / (self.instance_count * self.duration_hours)


def _offering(raw: dict[str, Any]) -> Offering:
    return Offering(
        offering_id=raw["CapacityBlockOfferingId"],
        instance_type=raw["InstanceType"],
        availability_zone=raw["AvailabilityZone"],
        instance_count=int(raw["InstanceCount"]),
        start=raw["StartDate"],
        end=raw["EndDate"],
        duration_hours=int(raw["CapacityBlockDurationHours"]),
        upfront_fee=float(raw["UpfrontFee"]),
        currency=str(raw.get("CurrencyCode", "USD")),
    )


def search(
    request: SearchRequest, profile: Profile, session: AwsSession, reporter: Reporter
) -> ExitCode:
    """Print the offerings (cheapest per instance-hour first); exit 1 when there are none."""
    client = session.client("ec2")
    params: dict[str, Any] = {
        "InstanceType": request.instance_type,
        "InstanceCount": request.instance_count,
        "CapacityDurationHours": request.duration_hours,
    }
    if request.start is not None:
        params["StartDateRange"] = request.start
    if request.end is not None:
        params["EndDateRange"] = request.end
    reporter.progress(
        f"searching {request.instance_count} x {request.instance_type} for "
        f"{request.duration_hours} h in {session.region}"
    )
    offerings: list[Offering] = []
    while True:
        answer = call_required(
            client,
            "describe_capacity_block_offerings",
            "ec2:DescribeCapacityBlockOfferings",
            **params,
        )
        offerings.extend(_offering(raw) for raw in answer.get("CapacityBlockOfferings", []))
        token = answer.get("NextToken")
        if not token:
            break
        params["NextToken"] = token
    offerings.sort(key=lambda o: (o.price_per_instance_hour, o.start))
    zone = profile.platform.availability_zone
    on_demand = load_prices().on_demand_usd_per_hour(session.region, request.instance_type)
    try:
        accelerators = get_instance_type(request.instance_type).accelerator_count
    except FmValidationError:
        accelerators = 0
    if reporter.json_mode:
        reporter.emit_json(
            {
                "schema": "fmc.capacity.search/v1",
                "region": session.region,
                "request": {
                    "instance_type": request.instance_type,
                    "instance_count": request.instance_count,
                    "duration_hours": request.duration_hours,
                    "start": request.start.isoformat() if request.start else None,
                    "end": request.end.isoformat() if request.end else None,
                },
                "offerings": document(offerings),
            }
        )
    elif not offerings:
        reporter.print(
            f"no Capacity Block offering for {request.instance_count} x {request.instance_type}, "
            f"{request.duration_hours} h, in {session.region}; try other dates, a shorter block "
            "or fewer instances"
        )
    else:
        rows = [
            [
                o.offering_id,
                o.availability_zone + ("" if o.availability_zone == zone else " (not GPU zone)"),
                f"{o.start:%Y-%m-%d %H:%M}",
                f"{o.end:%Y-%m-%d %H:%M}",
                o.duration_hours,
                o.instance_count,
                f"{o.upfront_fee:,.2f} {o.currency}",
                round(o.price_per_instance_hour, 3),
                round(o.price_per_instance_hour / accelerators, 3) if accelerators else None,
            ]
            for o in offerings
        ]
        reporter.print(
            render_table(
                [
                    "offering",
                    "zone",
                    "start (UTC)",
                    "end (UTC)",
                    "hours",
                    "count",
                    "upfront fee",
                    "per instance-hour",
                    "per accelerator-hour",
                ],
                rows,
            )
        )
        if on_demand is not None:
            reporter.print(
                f"\nOn-Demand list price for comparison: ${on_demand:,.3f} per instance-hour"
            )
        reporter.print(
            "buy one with: fmc capacity purchase --offering-id <offering> --yes "
            f"--workload {request.workload}"
        )
    return ExitCode.OK if offerings else ExitCode.CHECK_FAILED


def profile_lines(workload: str, reservation: dict[str, Any], profile: Profile) -> list[str]:
    """The TOML to put into the profile for a purchased block."""
    current = _workload(profile, workload)
    lines = [
        f"[{workload}.capacity]",
        'kind = "capacity-block"',
        f'reservation_id = "{reservation["CapacityReservationId"]}"',
        f"reserved_instance_count = {int(reservation.get('TotalInstanceCount', 0))}",
    ]
    zone = reservation.get("AvailabilityZone")
    if zone and zone != profile.platform.availability_zone:
        lines.append(
            f'# the block is in {zone}: also set platform.availability_zone = "{zone}" '
            "(and list it in platform.availability_zones)"
        )
    instance_type = reservation.get("InstanceType")
    if instance_type and instance_type != current.instance_type:
        lines.append(f'# also set {workload}.instance_type = "{instance_type}"')
    return lines


def purchase(
    args: argparse.Namespace, profile: Profile, session: AwsSession, reporter: Reporter
) -> ExitCode:
    """Buy the offering and print the reservation id and the profile lines."""
    reporter.progress(f"purchasing Capacity Block offering {args.offering_id} in {session.region}")
    answer = call_required(
        session.client("ec2"),
        "purchase_capacity_block",
        "ec2:PurchaseCapacityBlock",
        CapacityBlockOfferingId=args.offering_id,
        InstancePlatform=INSTANCE_PLATFORM,
    )
    reservation = answer.get("CapacityReservation", {})
    lines = profile_lines(args.workload, reservation, profile)
    if reporter.json_mode:
        reporter.emit_json(
            {
                "schema": "fmc.capacity.purchase/v1",
                "region": session.region,
                "reservation": {
                    "reservation_id": reservation.get("CapacityReservationId"),
                    "instance_type": reservation.get("InstanceType"),
                    "availability_zone": reservation.get("AvailabilityZone"),
                    "instance_count": reservation.get("TotalInstanceCount"),
                    "start": reservation.get("StartDate"),
                    "end": reservation.get("EndDate"),
                    "state": reservation.get("State"),
                },
                "profile_toml": "\n".join(lines),
            }
        )
        return ExitCode.OK
    reporter.print(
        f"purchased {reservation.get('CapacityReservationId')}: "
        f"{reservation.get('TotalInstanceCount')} x {reservation.get('InstanceType')} in "
        f"{reservation.get('AvailabilityZone')}, state {reservation.get('State')}"
    )
    reporter.print(f"\nput this into {profile.source}:\n")
    reporter.print("\n".join(lines))
    return ExitCode.OK
