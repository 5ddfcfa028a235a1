"""``fmc init``'s command line: every choice of the written profile as a flag, and the request
it becomes (:class:`InitRequest`). The writing itself is :mod:`fm_constructs.cli.init`."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field

from fm_constructs.cli.arg_types import positive_int
from fm_constructs.cli.exit_codes import EPILOG, CliError, ExitCode
from fm_constructs.cli.profiles import SHIPPED_DEFAULT
from fm_constructs.config import CapacityKind
from fm_constructs.domain.names import WORKLOAD_KINDS

INIT_DESCRIPTION = """\
Write a profile from a shipped one (--from), with every choice from a flag, an answer at the
terminal, or read-only AWS calls, then check that it loads before writing it.

Offline (--offline): no AWS call and no credentials. The account and admin roles come from
--account and --admin-role-arn (or stay as in the template), the zones from
--availability-zone/--availability-zones (or the template's, in its region).

Online (default): the account from sts:GetCallerIdentity; the admin role is the role you are
signed in with, its full ARN (path included, e.g. an IAM Identity Center role under
aws-reserved/sso.amazonaws.com/) from iam:GetRole; a GPU zone that offers the workloads'
instance types (ec2:DescribeInstanceTypeOfferings) and a second zone
(ec2:DescribeAvailabilityZones), unless given as flags.

At a terminal, init asks for the workloads, capacity and node counts no flag gave (--no-input
never asks). Reservation, training-plan and resource-group identifiers of a template from
another region are dropped, with a warning. Prints each choice and why; never overwrites a file
without --force.
"""

INIT_EPILOG = f"""\
examples:
  fmc init profiles/mine.toml --offline --region us-west-2 \\
      --availability-zones us-west-2b,us-west-2c --workloads inference --instance-count 2
  fmc init profiles/train.toml --workloads pretraining --capacity-kind capacity-block \\
      --reservation-id cr-0123456789abcdef0 --instance-count 8
  fmc init profiles/mine.toml          # online, asks at a terminal

{EPILOG}"""


@dataclass(frozen=True)
class InitRequest:
    """What ``fmc init`` was asked for; None means "the template's" (or ask, or AWS)."""

    output: str
    template: str
    force: bool = False
    offline: bool = False
    interactive: bool = False
    region: str | None = None
    availability_zone: str | None = None
    availability_zones: tuple[str, ...] | None = None
    account: str | None = None
    admin_role_arns: tuple[str, ...] = ()
    name: str | None = None
    workloads: tuple[str, ...] | None = None
    instance_type: str | None = None
    #: Workload name -> instance_count; the key "*" is every selected workload.
    instance_counts: dict[str, int] = field(default_factory=dict)
    capacity_workload: str | None = None
    capacity_kind: str | None = None
    reservation_id: str | None = None
    training_plan_arn: str | None = None
    resource_group_arn: str | None = None
    aws_profile: str | None = None
    json: bool = False


def _workload_list(text: str) -> tuple[str, ...]:
    names = tuple(n.strip().replace("-", "_") for n in text.split(",") if n.strip())
    unknown = [n for n in names if n not in WORKLOAD_KINDS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"must be a comma-separated list of {', '.join(WORKLOAD_KINDS)}, got {text!r}"
        )
    return names


def _zone_list(text: str) -> tuple[str, ...]:
    zones = tuple(z.strip() for z in text.split(",") if z.strip())
    if not zones:
        raise argparse.ArgumentTypeError("must list zones, e.g. us-east-1a,us-east-1b")
    return zones


def _count(text: str) -> tuple[str, int]:
    """``N`` (every selected workload) or ``WORKLOAD=N``."""
    workload, _, number = text.rpartition("=")
    workload = workload.strip().replace("-", "_") or "*"
    if workload != "*" and workload not in WORKLOAD_KINDS:
        raise argparse.ArgumentTypeError(
            f"the workload must be one of {', '.join(WORKLOAD_KINDS)}, got {workload!r}"
        )
    return workload, positive_int(number)


def add_init_arguments(init: argparse.ArgumentParser) -> None:
    """The ``init`` options."""
    init.add_argument("output", help="profile to write, e.g. profiles/mine.toml")
    init.add_argument(
        "--from",
        dest="template",
        default=None,
        help=f"shipped profile to start from (default: {SHIPPED_DEFAULT.name} of the "
        "repository's config/)",
    )
    init.add_argument(
        "--offline", action="store_true", help="make no AWS call: every value from flags"
    )
    init.add_argument("--name", help="platform.name, the prefix of every stack name")
    init.add_argument(
        "--region",
        help="AWS region (default: the AWS configuration's when online, else the template's)",
    )
    init.add_argument(
        "--availability-zone", help="the GPU zone (default: one offering the instance types)"
    )
    init.add_argument(
        "--availability-zones",
        type=_zone_list,
        help="the VPC's zones, comma-separated, the GPU zone among them",
    )
    init.add_argument("--account", help="platform.account (default online: the caller's)")
    init.add_argument(
        "--admin-role-arn",
        action="append",
        default=[],
        help="an IAM role given cluster-admin access (repeat for more; default online: yours)",
    )
    init.add_argument(
        "--workloads",
        type=_workload_list,
        help=f"workloads to enable, comma-separated ({', '.join(WORKLOAD_KINDS)}); the "
        "template's other workloads are disabled (default: the template's)",
    )
    init.add_argument(
        "--instance-type",
        help="instance type the GPU zone must offer first (default: the template's workloads')",
    )
    init.add_argument(
        "--instance-count",
        type=_count,
        action="append",
        default=[],
        metavar="[WORKLOAD=]N",
        help="nodes of every selected workload, or of one (repeat per workload)",
    )
    init.add_argument(
        "--capacity-workload",
        choices=WORKLOAD_KINDS,
        help="workload the capacity flags are for (default: the first of --workloads)",
    )
    init.add_argument(
        "--capacity-kind",
        choices=[kind.value for kind in CapacityKind],
        help="where that workload's instances come from",
    )
    init.add_argument("--reservation-id", help="ODCR or Capacity Block id (cr-...)")
    init.add_argument("--training-plan-arn", help="SageMaker training plan ARN (HyperPod)")
    init.add_argument("--resource-group-arn", help="ODCR resource group ARN")
    init.add_argument("--aws-profile", help="named AWS profile (default: AWS_PROFILE / default)")
    init.add_argument("--force", action="store_true", help="overwrite an existing output file")
    init.add_argument(
        "--no-input", action="store_true", help="never ask, even at a terminal (for scripts)"
    )
    init.add_argument("--json", action="store_true", help="machine-readable output on stdout")


def init_request(args: argparse.Namespace) -> InitRequest:
    """The request of a parsed ``fmc init`` command line."""
    template = args.template
    if template is None:
        if not SHIPPED_DEFAULT.is_file():
            raise CliError(
                "init: no shipped profile to start from here; pass --from FILE (one of the "
                "repository's config/*.toml)",
                ExitCode.USAGE,
            )
        template = str(SHIPPED_DEFAULT)
    interactive = not args.no_input and not args.json and sys.stdin.isatty() and sys.stderr.isatty()
    return InitRequest(
        output=args.output,
        template=template,
        force=args.force,
        offline=args.offline,
        interactive=interactive,
        region=args.region,
        availability_zone=args.availability_zone,
        availability_zones=args.availability_zones,
        account=args.account,
        admin_role_arns=tuple(args.admin_role_arn),
        name=args.name,
        workloads=args.workloads,
        instance_type=args.instance_type,
        instance_counts=dict(args.instance_count),
        capacity_workload=args.capacity_workload,
        capacity_kind=args.capacity_kind,
        reservation_id=args.reservation_id,
        training_plan_arn=args.training_plan_arn,
        resource_group_arn=args.resource_group_arn,
        aws_profile=args.aws_profile,
        json=args.json,
    )
