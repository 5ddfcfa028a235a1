"""Online rule: EC2 offers the instance type in the GPU zone
(ec2:DescribeInstanceTypeOfferings)."""

from __future__ import annotations

from typing import Any

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.rules.findings import define
from fm_constructs.rules.online.aws import ask_required

OFFERED = define(
    "FM701",
    "The instance type is not offered in the profile's GPU zone (or region).",
    "Pick the zone the type is offered in (platform.availability_zone), or another type.",
    severity=None,
)


def instance_type_offered(
    ec2: Any, instance_type: str, zone: str, region: str, *, workload: str
) -> list[Finding]:
    """``instance_type`` is offered in ``zone`` (an info), else an error naming the zones of
    ``region`` that offer it; ``workload`` names the profile table the fix points to."""
    answer = ask_required(
        ec2,
        "describe_instance_type_offerings",
        "ec2:DescribeInstanceTypeOfferings",
        LocationType="availability-zone",
        Filters=[{"Name": "instance-type", "Values": [instance_type]}],
    )
    zones = sorted({o["Location"] for o in answer.get("InstanceTypeOfferings", [])})
    if zone in zones:
        detail, severity, fix = f"{instance_type} is offered in {zone}", Severity.INFO, ""
    elif not zones:
        detail, severity = f"{instance_type} is not offered in any zone of {region}", Severity.ERROR
        fix = f"choose another region (platform.region) or another {workload}.instance_type"
    else:
        listed = ", ".join(zones)
        detail = f"{instance_type} is not offered in {zone}; it is offered in {listed}"
        severity = Severity.ERROR
        fix = f"set platform.availability_zone to one of {listed} (and list it in "
        fix += "platform.availability_zones)"
    return [Finding(OFFERED.code, severity, "", None, detail, fix)]
