"""``fmc init``: write a profile from a shipped one, offline from flags or for the caller's
account.

Each value of the written profile comes from, in order: a flag; an answer at the terminal
(interactive mode, only when stdin and stderr are terminals and --no-input is not given); a
read-only AWS call (not with ``--offline``); the template.

- account: ``--account``, else STS GetCallerIdentity;
- admin role: ``--admin-role-arn``, else the role the caller is signed in with, by its real
  ARN from IAM GetRole (a role's path, such as IAM Identity Center's
  ``aws-reserved/sso.amazonaws.com/<region>/``, is not in the session ARN); an IAM user, or a
  role GetRole may not read, leaves the template's ``admin_role_arns`` with a warning;
- region: ``--region``, else the AWS configuration's (online), else the template's;
- GPU zone: ``--availability-zone``, else a zone that offers every instance type the enabled
  workloads use (EC2 DescribeInstanceTypeOfferings), else the template's (offline, its region);
- VPC zones: ``--availability-zones``, else the GPU zone and the next available zone;
- workloads, node counts and capacity: ``--workloads``, ``--instance-count``,
  ``--capacity-kind`` and its identifiers. Identifiers of reservations, training plans and
  resource groups of a template in another region (or account) are dropped, with a warning.

Every choice is printed with its reason (or given as JSON). The file is written only when it
does not exist (or with ``--force``), and only after the result loads as a valid profile.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import boto3

from fm_constructs.cli.aws import AwsSession, call_required
from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.init_args import InitRequest
from fm_constructs.cli.output import Reporter
from fm_constructs.config import CapacityKind, Profile, load_profile
from fm_constructs.domain.names import WORKLOAD_KINDS
from fm_constructs.errors import FmValidationError

_ASSUMED_ROLE = re.compile(
    r"^arn:(?P<partition>[^:]+):sts::(?P<account>\d{12}):assumed-role/(?P<role>[^/]+)/"
)
_IAM_ROLE = re.compile(r"^arn:[^:]+:iam::\d{12}:role/")
SCHEMA = "fmc.init/v1"


@dataclass(frozen=True)
class Choice:
    """One value written into the profile and why."""

    key: str
    value: str
    reason: str


def role_arn_of_caller(arn: str) -> str | None:
    """The IAM role ARN a caller ARN names without asking IAM, else None (an IAM user).

    An assumed-role session ARN drops the role's path, so for one this is a guess that is
    right only for a role without a path; :func:`run_init` asks iam:GetRole instead.
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


#: Capacity keys that name a resource of one region and account: a template's are dropped
#: when the written profile is for another region (or account).
_REGIONAL_CAPACITY_KEYS = (
    "reservation_id",
    "resource_group_arn",
    "training_plan_arn",
    "placement_group_arn",
    "reserved_instance_count",
    "start_time",
    "end_time",
)
_ARN_PLACE = re.compile(r"^arn:[^:]+:[^:]+:(?P<region>[^:]*):(?P<account>\d*):")


def _remove_key(text: str, table: str, key: str) -> str:
    """``text`` without ``key = ...`` in ``[table]`` (and the comment lines just above it that
    ask to replace it)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == f"[{table}]"), None)
    if start is None:
        return text
    pattern = re.compile(rf"^\s*{re.escape(key)}\s*=")
    for index in range(start + 1, len(lines)):
        if lines[index].lstrip().startswith("["):
            break
        if pattern.match(lines[index]):
            first = index
            while first > start + 1 and lines[first - 1].lstrip().startswith("# replace"):
                first -= 1
            del lines[first : index + 1]
            return "".join(lines)
    return text


def _ensure_table(text: str, table: str) -> str:
    """``text`` with a ``[table]`` header (appended at the end when missing)."""
    if any(line.strip() == f"[{table}]" for line in text.splitlines()):
        return text
    return text.rstrip("\n") + f"\n\n[{table}]\n"


def _set(text: str, table: str, key: str, value: str | int | bool | list[str]) -> str:
    if isinstance(value, bool):
        rendered = "true" if value else "false"
    elif isinstance(value, int):
        rendered = str(value)
    elif isinstance(value, list):
        rendered = _toml_list(value)
    else:
        rendered = _toml_string(value)
    return _replace_key(_ensure_table(text, table), table, key, rendered)


def _tables(text: str) -> set[str]:
    return {
        line.strip()[1:-1].strip()
        for line in text.splitlines()
        if line.strip().startswith("[") and line.strip().endswith("]")
    }


@dataclass
class _Draft:
    """The profile text being written, and the choices printed with it."""

    text: str
    choices: list[Choice]
    warnings: list[str]

    def set(self, table: str, key: str, value: str | int | bool | list[str], why: str) -> None:
        self.text = _set(self.text, table, key, value)
        if isinstance(value, list):
            shown = ", ".join(value)
        elif isinstance(value, bool):
            shown = "true" if value else "false"
        else:
            shown = str(value)
        name = key if table == "platform" else f"{table}.{key}"
        self.choices.append(Choice(name, shown, why))


def _ask(reporter: Reporter, question: str, default: str) -> str:
    """One question on stderr, the answer from stdin; an empty answer keeps ``default``."""
    print(f"{question} [{default}]: ", end="", file=reporter.err, flush=True)
    answer = sys.stdin.readline().strip()
    return answer or default


def _interactive(request: InitRequest, base: Profile, reporter: Reporter) -> InitRequest:
    """``request`` with what no flag gave asked at the terminal."""
    changes: dict[str, Any] = {}
    workloads = request.workloads
    if workloads is None:
        default = ",".join(w.name for w in base.enabled_workloads)
        answer = _ask(reporter, f"workloads ({', '.join(WORKLOAD_KINDS)})", default)
        workloads = tuple(n.strip().replace("-", "_") for n in answer.split(",") if n.strip())
        unknown = [n for n in workloads if n not in WORKLOAD_KINDS]
        if unknown or not workloads:
            raise CliError(
                f"init: workloads must be a comma-separated list of {', '.join(WORKLOAD_KINDS)}, "
                f"got {answer!r}",
                ExitCode.USAGE,
            )
        changes["workloads"] = workloads
    counts = dict(request.instance_counts)
    if "*" not in counts:
        by_name = base.workloads_by_name
        for name in workloads:
            if name in counts or name not in by_name:
                continue
            answer = _ask(reporter, f"{name}: nodes", str(by_name[name].instance_count))
            if not answer.isdigit() or int(answer) < 1:
                raise CliError(
                    f"init: {name} nodes must be 1 or more, got {answer!r}", ExitCode.USAGE
                )
            counts[name] = int(answer)
        changes["instance_counts"] = counts
    if request.capacity_kind is None and workloads:
        target = request.capacity_workload or workloads[0]
        current = base.workloads_by_name.get(target)
        default = current.capacity.kind.value if current is not None else "on-demand"
        kinds = ", ".join(k.value for k in CapacityKind)
        kind = _ask(reporter, f"{target}: capacity ({kinds})", default)
        if kind != default:  # the template's kind keeps the template's identifiers
            changes["capacity_kind"] = kind
            reserved = kind in ("odcr", "capacity-block")
            if reserved and request.reservation_id is None and request.resource_group_arn is None:
                changes["reservation_id"] = _ask(reporter, f"{target}: reservation id (cr-...)", "")
            if kind == "training-plan" and request.training_plan_arn is None:
                changes["training_plan_arn"] = _ask(reporter, f"{target}: training plan ARN", "")
    return dataclasses.replace(request, **changes)


def _select_workloads(draft: _Draft, request: InitRequest, base: Profile) -> tuple[str, ...]:
    """Enable the asked workloads, disable the template's others; the enabled names."""
    if request.workloads is None:
        return tuple(w.name for w in base.enabled_workloads)
    tables = _tables(draft.text)
    missing = [name for name in request.workloads if name not in tables]
    if missing:
        raise CliError(
            f"init: {request.template} has no [{missing[0]}] table to enable; start from a "
            "profile that has it (--from config/default.toml has every workload)",
            ExitCode.USAGE,
        )
    for name in WORKLOAD_KINDS:
        if name in tables:
            enabled = name in request.workloads
            draft.text = _set(draft.text, name, "enabled", enabled)
        draft.choices.append(
            Choice(f"{name}.enabled", str(name in request.workloads).lower(), "from --workloads")
        )
    return request.workloads


def _drop_foreign_capacity(draft: _Draft, base: Profile, region: str, account: str | None) -> None:
    """Remove the template's reservation, plan and group identifiers of another region or
    account: they name resources the written profile's deployment cannot use."""
    for workload in base.workloads:
        table = f"{workload.name}.capacity"
        capacity = workload.capacity
        for key in _REGIONAL_CAPACITY_KEYS:
            value = getattr(capacity, key, None)
            if value is None:
                continue
            foreign = region != base.platform.region
            place = _ARN_PLACE.match(str(value))
            if place is not None:
                foreign = foreign or (place["region"] not in ("", region))
                foreign = foreign or bool(
                    account and place["account"] and place["account"] != account
                )
            if not foreign:
                continue
            draft.text = _remove_key(draft.text, table, key)
            if key in ("reservation_id", "resource_group_arn", "training_plan_arn"):
                draft.warnings.append(
                    f"{table}.{key} {value} of {_foreign_note(base, region)} was dropped; "
                    f"give yours with --{key.replace('_', '-')} (or --capacity-kind on-demand)"
                )


def _foreign_note(base: Profile, region: str) -> str:
    """Why a template's identifier is foreign: its region, else its account."""
    return (
        f"the template's region {base.platform.region}"
        if base.platform.region != region
        else "another account"
    )


def _apply_capacity(draft: _Draft, request: InitRequest, enabled: tuple[str, ...]) -> None:
    given = {
        "kind": request.capacity_kind,
        "reservation_id": request.reservation_id,
        "training_plan_arn": request.training_plan_arn,
        "resource_group_arn": request.resource_group_arn,
    }
    if all(value in (None, "") for value in given.values()):
        return
    target = request.capacity_workload or (enabled[0] if enabled else None)
    if target is None:
        raise CliError("init: the capacity flags need an enabled workload", ExitCode.USAGE)
    table = f"{target}.capacity"
    if request.capacity_kind is not None:
        for key in _REGIONAL_CAPACITY_KEYS:  # the template's identifiers were for its kind
            draft.text = _remove_key(draft.text, table, key)
    for key, value in given.items():
        if value:
            flag = "--capacity-kind" if key == "kind" else f"--{key.replace('_', '-')}"
            draft.set(table, key, value, f"from {flag}")


def _apply_counts(
    draft: _Draft, request: InitRequest, base: Profile, enabled: tuple[str, ...]
) -> None:
    by_name = base.workloads_by_name
    for name in enabled:
        count = request.instance_counts.get(name, request.instance_counts.get("*"))
        if count is None:
            continue
        draft.set(name, "instance_count", count, "from --instance-count")
        workload = by_name.get(name)
        largest = getattr(workload, "max_instance_count", None)
        if largest is not None and largest < count:
            draft.set(name, "max_instance_count", count, "at least instance_count")


def _instance_types_of(base: Profile, enabled: tuple[str, ...]) -> list[str]:
    """Instance types of the ``enabled`` workloads (and their rollout groups), in order."""
    types: list[str] = []
    for workload in base.workloads:
        if workload.name not in enabled:
            continue
        names = [workload.instance_type]
        if workload.rollout_group is not None:
            names.append(workload.rollout_group.instance_type)
        types += [name for name in names if name and name not in types]
    return types


def _vpc_zones(zone: str, base: Profile, region: str) -> list[str] | None:
    """Offline: the template's zones around ``zone`` in the template's region, else None."""
    if region != base.platform.region:
        return None
    others = [z for z in base.platform.availability_zones if z != zone]
    return [zone, *others] if others else None


def _admin_role(
    session: AwsSession, caller: str, reporter: Reporter, template: str
) -> tuple[str | None, str]:
    """The caller's role ARN as IAM names it (path included) and why, or None and why not."""
    match = _ASSUMED_ROLE.match(caller)
    if match is None:
        role = role_arn_of_caller(caller)
        if role is None:
            return None, (
                f"the caller {caller} is not a role: admin_role_arns is left as in {template}; "
                "list your operators' IAM roles there"
            )
        return role, f"the role you are signed in with ({caller})"
    try:
        answer = call_required(
            session.client("iam"), "get_role", "iam:GetRole", RoleName=match["role"]
        )
    except CliError as error:
        hint = (
            " (an IAM Identity Center role's ARN has the path "
            "aws-reserved/sso.amazonaws.com/<region>/)"
            if match["role"].startswith("AWSReservedSSO_")
            else ""
        )
        return None, (
            f"could not read the ARN of your role {match['role']} ({error.message}): "
            f"admin_role_arns is left as in {template}; find it with aws iam get-role "
            f"--role-name {match['role']} --query Role.Arn{hint}, or pass --admin-role-arn"
        )
    arn = str(answer["Role"]["Arn"])
    return arn, f"the role you are signed in with ({caller}), by iam:GetRole"


def _session(region: str, aws_profile: str | None) -> AwsSession:
    """The AWS session of an online init; without credentials, the offline way is named."""
    try:
        return AwsSession(region=region, profile_name=aws_profile)
    except CliError as error:
        raise CliError(
            f"init: {error.message}; or write the profile with no AWS call: fmc init ... "
            "--offline (account, roles and zones from flags)",
            error.exit_code,
        ) from None


def run_init(request: InitRequest, *, reporter: Reporter) -> ExitCode:
    """Choose, print, validate and write; see the module docstring."""
    target = Path(request.output)
    if target.exists() and not request.force:
        raise CliError(
            f"init: {request.output} exists; nothing was written (pass --force to overwrite it)",
            ExitCode.USAGE,
        )
    template = request.template
    base = load_profile(template)
    if request.interactive:
        request = _interactive(request, base, reporter)
    draft = _Draft(Path(template).read_text(encoding="utf-8"), [], [])

    if request.name:
        draft.set("platform", "name", request.name, "from --name")
    if request.region:
        region, region_reason = request.region, "from --region"
    elif not request.offline and (configured := configured_region(request.aws_profile)):
        region, region_reason = configured, "from the AWS configuration"
    else:
        region, region_reason = base.platform.region, f"from {template}"
    session = None if request.offline else _session(region, request.aws_profile)

    account = request.account
    caller: str | None = None
    if session is not None:
        identity = call_required(
            session.client("sts"), "get_caller_identity", "sts:GetCallerIdentity"
        )
        caller = str(identity["Arn"])
        if account is None:
            account = str(identity["Account"])
            draft.set("platform", "account", account, "from sts:GetCallerIdentity")
    if request.account is not None:
        draft.set("platform", "account", request.account, "from --account")
    draft.set("platform", "region", region, region_reason)

    if request.admin_role_arns:
        draft.set(
            "platform", "admin_role_arns", list(request.admin_role_arns), "from --admin-role-arn"
        )
    elif session is not None and caller is not None:
        role, why = _admin_role(session, caller, reporter, template)
        if role is not None:
            draft.set("platform", "admin_role_arns", [role], f"{why}; add your operators' roles")
        else:
            draft.warnings.append(why)

    enabled = _select_workloads(draft, request, base)
    if not enabled:
        raise CliError(f"init: {template} enables no workload; pick another --from", ExitCode.USAGE)
    _drop_foreign_capacity(draft, base, region, account)
    _apply_capacity(draft, request, enabled)
    _apply_counts(draft, request, base, enabled)

    types = _instance_types_of(base, enabled)
    if request.instance_type:
        types = [request.instance_type, *[t for t in types if t != request.instance_type]]
    zone = request.availability_zone
    zones = list(request.availability_zones) if request.availability_zones else None
    if zone is None and zones:
        zone = zones[0]
    if zone is not None:
        draft.set("platform", "availability_zone", zone, "from --availability-zone(s)")
    elif session is None:
        if region != base.platform.region:
            raise CliError(
                f"init: offline in {region} (the template is for {base.platform.region}): give "
                f"--availability-zones {region}a,{region}b (the GPU zone first: one that offers "
                f"{', '.join(types)})",
                ExitCode.USAGE,
            )
        zone = base.platform.availability_zone
        draft.choices.append(Choice("availability_zone", zone, f"from {template} (offline)"))
    else:
        ec2 = session.client("ec2")
        offered = _offering_zones(ec2, types)
        template_zone = base.platform.availability_zone if region == base.platform.region else ""
        zone, zone_reason = choose_gpu_zone(offered, types[0], template_zone)
        draft.set("platform", "availability_zone", zone, zone_reason)
    if zones is not None:
        if zone not in zones:
            zones = [zone, *zones]
        draft.set("platform", "availability_zones", zones, "from --availability-zones")
    elif session is None:
        offline_zones = _vpc_zones(zone, base, region)
        if offline_zones is None:
            raise CliError(
                f"init: offline, give --availability-zones {zone},<a second zone of {region}>",
                ExitCode.USAGE,
            )
        draft.set("platform", "availability_zones", offline_zones, f"from {template} (offline)")
    else:
        others = [z for z in _available_zones(session.client("ec2")) if z != zone]
        if not others:
            raise CliError(
                f"init: {region} has no second available zone; the VPC needs two",
                ExitCode.CHECK_FAILED,
            )
        following = [z for z in others if z > zone] or others
        draft.set(
            "platform",
            "availability_zones",
            [zone, following[0]],
            "the GPU zone and the next available zone",
        )
    if (
        request.instance_type
        and base.enabled_workloads
        and (request.instance_type != base.enabled_workloads[0].instance_type)
    ):
        draft.warnings.append(
            f"--instance-type {request.instance_type} chose the zone only; set instance_type "
            "in the workload tables of the written profile"
        )

    _validate(draft.text, request.output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(draft.text, encoding="utf-8")
    next_steps = (
        f"fmc plan --config {request.output}, then fmc preflight --config {request.output}, "
        f"then cdk deploy --all -c config={request.output}"
    )
    if request.json:
        reporter.emit_json(
            {
                "schema": SCHEMA,
                "output": request.output,
                "template": template,
                "offline": request.offline,
                "choices": [
                    {"key": c.key, "value": c.value, "reason": c.reason} for c in draft.choices
                ],
                "warnings": draft.warnings,
                "next": next_steps,
            }
        )
        return ExitCode.OK
    for warning in draft.warnings:
        reporter.print(f"warning: {warning}")
    width = max(len(c.key) for c in draft.choices)
    for choice in draft.choices:
        reporter.print(f"{choice.key:<{width}}  {choice.value}  ({choice.reason})")
    reporter.print(f"wrote {request.output} (from {template}); next: {next_steps}")
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
