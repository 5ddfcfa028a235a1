"""``fmc init``: write a profile for the caller's account, from a shipped profile.

Read-only AWS calls decide what the template cannot know:

- account and admin role: STS GetCallerIdentity (an assumed-role session names its role; an
  IAM user is no role, so the template's ``admin_role_arns`` is left for the user to fill);
- region: ``--region``, else the AWS configuration's region, else the template's;
- GPU zone: EC2 DescribeInstanceTypeOfferings (zones): a zone that offers every instance type
  the template's enabled workloads use, the template's own zone when it qualifies;
- VPC zones: the GPU zone and the next available zone of the region (DescribeAvailabilityZones).

Every choice is printed with its reason. The file is written only when it does not exist (or
with ``--force``), and only after the result loads as a valid profile.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from fm_constructs.cli.aws import AwsSession, call_required
from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.output import Reporter
from fm_constructs.config import Profile, load_profile
from fm_constructs.errors import FmValidationError

_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/"
)
_IAM_ROLE = re.compile(r"^arn:[^:]+:iam::\d{12}:role/")


@dataclass(frozen=True)
class Choice:
    """One value written into the profile and why."""

    key: str
    value: str
    reason: str


def role_arn_of_caller(arn: str) -> str | None:
    """The IAM role ARN behind a caller ARN (assumed-role session or role), else None.

    An assumed-role ARN drops the role's path; roles created with a path (``role/team/x``)
    need their full ARN written by hand.
    """
    match = _ASSUMED_ROLE.match(arn)
    if match:
        return f"arn:{match['partition']}:iam::{match['account']}:role/{match['role']}"
    if _IAM_ROLE.match(arn):
        return arn
    return None


def configured_region(profile_name: str | None) -> str | None:
    """The region of the AWS configuration (AWS_REGION, AWS_DEFAULT_REGION, the profile)."""
    try:
        region = boto3.session.Session(profile_name=profile_name).region_name
    except Exception:  # a missing profile is reported by AwsSession with its fix
        return None
    return str(region) if region else None


def _instance_types(profile: Profile) -> list[str]:
    types: list[str] = []
    for workload in profile.enabled_workloads:
        names = [workload.instance_type]
        if workload.rollout_group is not None:
            names.append(workload.rollout_group.instance_type)
        types += [name for name in names if name and name not in types]
    return types


def _offering_zones(ec2: Any, instance_types: list[str]) -> dict[str, set[str]]:
    """Instance type -> zones of the region that offer it."""
    zones: dict[str, set[str]] = {name: set() for name in instance_types}
    token: str | None = None
    while True:
        params: dict[str, Any] = {
            "LocationType": "availability-zone",
            "Filters": [{"Name": "instance-type", "Values": instance_types}],
        }
        if token:
            params["NextToken"] = token
        page = call_required(
            ec2, "describe_instance_type_offerings", "ec2:DescribeInstanceTypeOfferings", **params
        )
        for offering in page.get("InstanceTypeOfferings", []):
            zones.setdefault(offering["InstanceType"], set()).add(offering["Location"])
        token = page.get("NextToken")
        if not token:
            return zones


def _available_zones(ec2: Any) -> list[str]:
    page = call_required(
        ec2,
        "describe_availability_zones",
        "ec2:DescribeAvailabilityZones",
        Filters=[
            {"Name": "state", "Values": ["available"]},
            {"Name": "zone-type", "Values": ["availability-zone"]},
        ],
    )
    return sorted(z["ZoneName"] for z in page.get("AvailabilityZones", []))


def choose_gpu_zone(
    offered: dict[str, set[str]], primary: str, template_zone: str
) -> tuple[str, str]:
    """The GPU zone and why: a zone offering every type, else one offering ``primary``."""
    every = set.intersection(*offered.values()) if offered else set()
    if every:
        zone = template_zone if template_zone in every else sorted(every)[0]
        kept = "the template's zone" if zone == template_zone else "the first such zone"
        return zone, (
            f"offers {', '.join(sorted(offered))} (zones offering all: "
            f"{', '.join(sorted(every))}; {kept})"
        )
    if not offered.get(primary):
        raise CliError(
            f"init: {primary} is not offered in any availability zone of this region; choose "
            "another region (--region) or instance type (--instance-type)",
            ExitCode.CHECK_FAILED,
        )
    zones = offered[primary]
    zone = template_zone if template_zone in zones else sorted(zones)[0]
    missing = sorted(name for name, found in offered.items() if zone not in found)
    return zone, (
        f"offers {primary} (zones: {', '.join(sorted(zones))}); NOT offered there: "
        f"{', '.join(missing)}: change those workloads' instance_type or disable them"
    )


def _replace_key(text: str, table: str, key: str, value: str) -> str:
    """Set ``key = value`` in ``[table]`` of TOML ``text``, keeping comments and layout."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == f"[{table}]"), None)
    if start is None:
        raise CliError(f"init: the template has no [{table}] table", ExitCode.USAGE)
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    pattern = re.compile(
        rf"^(?P<indent>\s*){re.escape(key)}\s*=\s*(\[[^\]]*\]|\"[^\"]*\"|[^#\s]+)\s*(?P<comment>#.*)?$"
    )
    for index in range(start + 1, end):
        match = pattern.match(lines[index].rstrip("\n"))
        if match:
            comment = match["comment"] or ""
            # A comment asking to replace the value is answered by the new value.
            keep = f"   {comment}" if comment and "replace" not in comment else ""
            lines[index] = f"{match['indent']}{key} = {value}{keep}\n"
            return "".join(lines)
    insert = end
    while insert > start + 1 and not lines[insert - 1].strip():
        insert -= 1
    lines.insert(insert, f"{key} = {value}\n")
    return "".join(lines)


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_list(values: list[str]) -> str:
    return "[" + ", ".join(_toml_string(v) for v in values) + "]"


def render_profile(template_text: str, choices: dict[str, str | list[str]]) -> str:
    """``template_text`` with the ``[platform]`` keys of ``choices`` set."""
    text = template_text
    for key, value in choices.items():
        rendered = _toml_list(value) if isinstance(value, list) else _toml_string(value)
        text = _replace_key(text, "platform", key, rendered)
    return text


def run_init(
    *,
    template: str,
    output: str,
    force: bool,
    region: str | None,
    instance_type: str | None,
    aws_profile: str | None,
    reporter: Reporter,
) -> ExitCode:
    """Choose, print, validate and write; see the module docstring."""
    target = Path(output)
    if target.exists() and not force:
        raise CliError(
            f"init: {output} exists; nothing was written (pass --force to overwrite it)",
            ExitCode.USAGE,
        )
    base = load_profile(template)
    template_text = Path(template).read_text(encoding="utf-8")
    if region:
        chosen_region, region_reason = region, "from --region"
    elif configured := configured_region(aws_profile):
        chosen_region, region_reason = configured, "from the AWS configuration"
    else:
        chosen_region, region_reason = base.platform.region, f"from {template}"
    session = AwsSession(region=chosen_region, profile_name=aws_profile)
    identity = call_required(session.client("sts"), "get_caller_identity", "sts:GetCallerIdentity")
    account, caller = str(identity["Account"]), str(identity["Arn"])

    choices: list[Choice] = [
        Choice("account", account, "from sts:GetCallerIdentity"),
        Choice("region", chosen_region, region_reason),
    ]
    values: dict[str, str | list[str]] = {"account": account, "region": chosen_region}
    role = role_arn_of_caller(caller)
    if role is not None:
        values["admin_role_arns"] = [role]
        choices.append(
            Choice(
                "admin_role_arns",
                role,
                f"the role you are signed in with ({caller}); add your operators' roles",
            )
        )
    else:
        reporter.print(
            f"warning: the caller {caller} is not a role: admin_role_arns is left as in "
            f"{template}; list your operators' IAM roles there"
        )

    types = _instance_types(base)
    if instance_type:
        types = [instance_type, *[t for t in types if t != instance_type]]
    if not types:
        raise CliError(f"init: {template} enables no workload; pick another --from", ExitCode.USAGE)
    ec2 = session.client("ec2")
    offered = _offering_zones(ec2, types)
    template_zone = base.platform.availability_zone if chosen_region == base.platform.region else ""
    zone, zone_reason = choose_gpu_zone(offered, types[0], template_zone)
    values["availability_zone"] = zone
    choices.append(Choice("availability_zone", zone, zone_reason))
    others = [z for z in _available_zones(ec2) if z != zone]
    if not others:
        raise CliError(
            f"init: {chosen_region} has no second available zone; the VPC needs two",
            ExitCode.CHECK_FAILED,
        )
    following = [z for z in others if z > zone] or others
    vpc_zones = [zone, following[0]]
    values["availability_zones"] = vpc_zones
    choices.append(
        Choice(
            "availability_zones", ", ".join(vpc_zones), "the GPU zone and the next available zone"
        )
    )
    if instance_type and instance_type != base.enabled_workloads[0].instance_type:
        reporter.print(
            f"warning: --instance-type {instance_type} chose the zone only; set instance_type "
            "in the workload tables of the written profile"
        )

    text = render_profile(template_text, values)
    _validate(text, output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    width = max(len(c.key) for c in choices)
    for choice in choices:
        reporter.print(f"{choice.key:<{width}}  {choice.value}  ({choice.reason})")
    reporter.print(
        f"wrote {output} (from {template}); next: fmc plan --config {output}, then "
        f"fmc preflight --config {output}"
    )
    return ExitCode.OK


def _validate(text: str, output: str) -> None:
    """The written profile must load, with the loader's own errors when it does not."""
    with tempfile.TemporaryDirectory(prefix="fmc-init-") as folder:
        candidate = Path(folder) / Path(output).name
        candidate.write_text(text, encoding="utf-8")
        try:
            load_profile(candidate)
        except FmValidationError as error:
            raise CliError(
                f"init: the profile for {output} does not validate, nothing was written: {error}",
                ExitCode.CHECK_FAILED,
            ) from None
