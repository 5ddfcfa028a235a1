"""``fmc``: argument parsing, dispatch, and the one place errors become exit codes.

Subcommands:
  fmc init        write a profile: offline from flags, or for your account (zone, role)
  fmc plan        what the profile builds and costs (offline)
  fmc preflight   read-only AWS checks that would otherwise fail an hour into a deploy
  fmc capacity    search and purchase EC2 Capacity Blocks for ML
  fmc validate    nccl-tests across nodes: render or submit the job, or judge a saved log
  fmc status      each stack of the profile: status and outputs
  fmc connect     kubectl to the private EKS endpoint through Session Manager
  fmc teardown    what a teardown keeps and every command, in order (--dry-run)
  fmc health      the DCGM diagnostics job for a workload's GPU nodes
  fmc completion  print a bash completion script

Conventions shared with eksctl and pcluster: ``--version``; every command has a description
and ``--json`` where it says so; one ``fmc: error:`` prefix; output piped into ``head`` ends
quietly (exit 141, as for SIGPIPE).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from fm_constructs import __version__
from fm_constructs.cli.arg_types import non_negative_int, positive_int
from fm_constructs.cli.exit_codes import EPILOG, CliError, ExitCode
from fm_constructs.cli.goal import TrainingGoal, parse_goal_quantity
from fm_constructs.cli.init_args import INIT_DESCRIPTION, INIT_EPILOG, add_init_arguments
from fm_constructs.cli.output import Reporter
from fm_constructs.cli.profiles import default_profile, describe_default
from fm_constructs.cli.validate import add_arguments as add_validate_arguments
from fm_constructs.config import Profile, TrainingWorkloadConfig, load_profile
from fm_constructs.domain.defaults import TARGET_MFU
from fm_constructs.domain.names import WORKLOAD_KINDS
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.ip_budget import DEFAULT_POD_COUNT
from fm_constructs.rules import workloads as workload_rules

if TYPE_CHECKING:
    from fm_constructs.cli.aws import AwsSession

WORKLOADS = WORKLOAD_KINDS
#: Exit status of a command whose output pipe closed early (``fmc plan | head``): 128 + SIGPIPE.
BROKEN_PIPE = 141


def _goal_quantity(what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            return parse_goal_quantity(text, what)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number such as 0.4, got {text!r}") from None
    for finding in workload_rules.target_mfu(value, key="--mfu"):
        raise argparse.ArgumentTypeError(finding.message())
    return value


class _Parser(argparse.ArgumentParser):
    """Raises instead of exiting, so ``main`` returns the exit code (testable in-process)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        # "fmc: error: plan: ..." (the reporter adds "fmc: error:"), never "fmc ... fmc plan:".
        command = self.prog.partition(" ")[2]
        where = f"{command}: " if command else ""
        raise CliError(f"{where}{message} (see {self.prog} --help)", ExitCode.USAGE)


def _common(parser: argparse.ArgumentParser, *, aws: bool) -> None:
    parser.add_argument(
        "--config",
        "-c",
        default=None,
        help=f"profile TOML file (default: {describe_default()})",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    if aws:
        parser.add_argument("--region", help="AWS region (default: platform.region of the profile)")
        parser.add_argument(
            "--aws-profile", help="named AWS profile (default: AWS_PROFILE / default)"
        )


def _workload_choice(parser: argparse.ArgumentParser, flag: str, help: str) -> None:
    """Option ``flag``: one of the workload kinds, pretraining by default."""
    parser.add_argument(flag, choices=WORKLOADS, default="pretraining", help=help)


def _subcommand(
    commands: argparse._SubParsersAction[_Parser],
    name: str,
    *,
    help: str,
    description: str,
    epilog: str = EPILOG,
    aws: bool | None = None,
) -> argparse.ArgumentParser:
    """Subcommand ``name``: its one-line ``help`` in the command list, its ``description``
    and ``epilog`` (the exit codes by default) kept as written on its ``--help``; with
    ``aws`` given, the options every profile command shares (:func:`_common`)."""
    parser = commands.add_parser(
        name,
        help=help,
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    if aws is not None:
        _common(parser, aws=aws)
    return parser


def build_parser() -> argparse.ArgumentParser:
    """The full ``fmc`` argument parser."""
    parser = _Parser(
        prog="fmc",
        description="Plan, check and reserve capacity for fm-constructs deployments.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"fmc {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    init = _subcommand(
        commands,
        "init",
        help="write a profile: offline from flags, or for your account (read-only AWS calls)",
        description=INIT_DESCRIPTION,
        epilog=INIT_EPILOG,
    )
    add_init_arguments(init)

    plan = _subcommand(
        commands,
        "plan",
        help="nodes, accelerators, EFA, FSx, IP budget and cost of a profile (offline)",
        description="What the profile builds and what it costs. Figures come from the same "
        "functions the constructs use. With --params/--tokens it also estimates training time.",
        aws=False,
    )
    plan.add_argument("--prices", help="JSON price file merged over the built-in list prices")
    plan.add_argument(
        "--params",
        type=_goal_quantity("parameters"),
        help="training goal: model parameters, with a suffix (70B, 7e10; a bare 70 is refused)",
    )
    plan.add_argument(
        "--tokens",
        type=_goal_quantity("tokens"),
        help="training goal: training tokens, with a suffix (15T, 1.5e13)",
    )
    plan.add_argument(
        "--mfu",
        type=_fraction,
        default=None,
        help=f"training goal: expected MFU (default: the profile's target_mfu, else {TARGET_MFU})",
    )
    _workload_choice(
        plan,
        "--goal-workload",
        "workload whose cluster runs the training goal (default: pretraining)",
    )
    plan.add_argument(
        "--pod-ips-per-node",
        type=non_negative_int,
        default=None,
        help="pods per Kubernetes node that need a VPC address (default: "
        f"{DEFAULT_POD_COUNT}, the largest the node can get, as the profile check counts)",
    )

    preflight = _subcommand(
        commands,
        "preflight",
        help="read-only AWS checks: offerings, reservations, quotas, EKS, HyperPod",
        description="Checks that would otherwise fail an hour into a deploy. Read-only.",
        aws=True,
    )
    preflight.add_argument(
        "--expiry-warning-hours",
        type=positive_int,
        default=48,
        help="warn when a reservation or training plan ends within this many hours (default 48)",
    )
    preflight.add_argument(
        "--kubernetes-version",
        help="EKS Kubernetes version to check instead of the profile's platform.kubernetes_version",
    )

    capacity = _subcommand(
        commands,
        "capacity",
        help="search and purchase EC2 Capacity Blocks for ML",
        description="Search EC2 Capacity Block offerings for a workload of the profile, and buy "
        "one (paid up front, no refund). The purchase prints the [<workload>.capacity] table "
        "to put into the profile.",
    )
    capacity_commands = capacity.add_subparsers(
        dest="capacity_command", metavar="ACTION", parser_class=_Parser
    )
    search = _subcommand(
        capacity_commands,
        "search",
        help="list Capacity Block offerings with their price",
        description="List the Capacity Block offerings (ec2:DescribeCapacityBlockOfferings) for "
        "the instance type and count of a workload, with the upfront price. Read-only.",
        aws=True,
    )
    _workload_choice(
        search,
        "--workload",
        "take instance type and count from this workload (default: pretraining)",
    )
    search.add_argument("--instance-type", help="instance type (default: the workload's)")
    search.add_argument(
        "--count", type=positive_int, help="instances (default: the workload's instance_count)"
    )
    duration = search.add_mutually_exclusive_group(required=True)
    duration.add_argument("--days", type=positive_int, help="block length in days")
    duration.add_argument("--duration-hours", type=positive_int, help="block length in hours")
    search.add_argument("--start", help="earliest start date, YYYY-MM-DD (UTC)")
    search.add_argument("--end", help="latest end date, YYYY-MM-DD (UTC)")

    purchase = _subcommand(
        capacity_commands,
        "purchase",
        help="buy one Capacity Block offering (needs --yes)",
        description="Buy the Capacity Block offering --offering-id from fmc capacity search "
        "(ec2:PurchaseCapacityBlock), and print the profile table that uses it. Refused "
        "without --yes: the block is paid up front and cannot be cancelled.",
        aws=True,
    )
    purchase.add_argument("--offering-id", required=True, help="from fmc capacity search")
    _workload_choice(
        purchase,
        "--workload",
        "workload whose profile table the printed TOML is for (default: pretraining)",
    )
    purchase.add_argument(
        "--yes", action="store_true", help="confirm the purchase (it is paid up front, no refund)"
    )
    validate = _subcommand(
        commands,
        "validate",
        help="prove EFA bandwidth: render/submit nccl-tests, or judge a saved log",
        description=VALIDATE_DESCRIPTION,
        epilog=VALIDATE_EPILOG,
    )
    add_validate_arguments(validate)

    _subcommand(
        commands,
        "status",
        help="each stack of the profile: CloudFormation status and outputs (read-only)",
        description="What of the profile is deployed: every stack the profile builds, its "
        "CloudFormation status and its outputs (cluster names, bucket, endpoints). Exit 1 when "
        "a stack failed or rolled back. Read-only (cloudformation:DescribeStacks).",
        aws=True,
    )

    connect = _subcommand(
        commands,
        "connect",
        help="kubectl to a private EKS endpoint through a Session Manager port forward",
        description="Resolve the Session Manager port forward to the cluster's private API "
        "endpoint (its host from eks:DescribeCluster, a running node from "
        "ec2:DescribeInstances) and print the tunnel and kubeconfig commands; with --start, "
        "set the kubeconfig and run the tunnel in the foreground. Needs the AWS CLI v2 and "
        "its Session Manager plugin (docs/operations/cluster-access.md).",
        aws=True,
    )
    connect.add_argument("--workload", help="the workload whose cluster (default: the first)")
    connect.add_argument(
        "--start", action="store_true", help="run the commands instead of printing them"
    )

    teardown = _subcommand(
        commands,
        "teardown",
        help="what a teardown keeps and every command, in order (--dry-run; deletes nothing)",
        description="The teardown of the deployment, filled in from CloudFormation: what is "
        "retained (buckets, keys, file systems, workspaces, log groups, by id) and each command "
        "in order: workload stacks, file systems and their security groups, termination "
        "protection, the platform stack. Only --dry-run is offered: fmc prints, you run.",
        aws=True,
    )
    teardown.add_argument(
        "--dry-run", action="store_true", help="print the plan (required: nothing is deleted)"
    )

    health = _subcommand(
        commands,
        "health",
        help="the DCGM diagnostics job for a workload's GPU nodes (offline)",
        description="Render the DCGM diagnostics (level 2) Kubernetes Job for the GPU nodes of "
        "a workload of the profile: its instance type, GPUs per node, node count, namespace "
        "and queue. Apply it with kubectl (docs/first-job/eks.md). EKS and HyperPod EKS.",
        aws=False,
    )
    health.add_argument("--workload", help="workload whose nodes (default: the first enabled)")
    health.add_argument(
        "--nodes", type=positive_int, help="nodes to check (default: the workload's count)"
    )

    pcs_ami = _subcommand(
        commands,
        "pcs-ami",
        help="pin the AMI of a workload's AWS PCS nodes in its profile (read-only AWS call)",
        description="Find the newest available image of the pinned name pattern and owner "
        "(DescribeImages in the profile's region, read-only) and print its "
        "[<workload>.pcs_ami] table; with --write, write it into the profile. The profile then "
        "pins that image until you run this again.",
        aws=True,
    )
    pcs_ami.add_argument(
        "--workload",
        choices=("pretraining", "post_training"),
        default="pretraining",
        help="the 'pcs' workload whose nodes (default: pretraining)",
    )
    pcs_ami.add_argument("--name-pattern", help="image name pattern (default: the pinned one)")
    pcs_ami.add_argument("--owner", help="image owner: account id or 'self' (default: pinned)")
    pcs_ami.add_argument("--write", action="store_true", help="write the table into the profile")

    completion = _subcommand(
        commands,
        "completion",
        help="print a shell completion script (bash)",
        description="Print a bash completion script for fmc, generated from its own options: "
        "source <(fmc completion bash), or save it under "
        "~/.local/share/bash-completion/completions/fmc.",
    )
    completion.add_argument("shell", choices=["bash"], help="the shell (bash)")
    return parser


def _load(path: str | None) -> Profile:
    """The profile at ``path``, else the default one (:mod:`fm_constructs.cli.profiles`)."""
    chosen = path or default_profile()
    if chosen is None:
        raise CliError(
            "no profile given: pass --config FILE (or set FMC_CONFIG); "
            "fmc init profiles/mine.toml --offline writes one",
            ExitCode.USAGE,
        )
    return load_profile(chosen)


def _profile_goal(
    profile: Profile, goal_workload: str, mfu: float | None
) -> tuple[TrainingGoal | None, str]:
    """The ``[<workload>.training_goal]`` of the profile: ``goal_workload``'s when it has one,
    else the first enabled workload's that has one."""
    candidates = sorted(
        (
            w
            for w in profile.enabled_workloads
            if isinstance(w, TrainingWorkloadConfig) and w.training_goal.is_set
        ),
        key=lambda w: w.name != goal_workload,
    )
    if not candidates:
        return None, goal_workload
    workload = candidates[0]
    table = workload.training_goal
    return (
        TrainingGoal(
            parameters=(table.model_parameters_billion or 0.0) * 1e9,
            tokens=(table.training_tokens_billion or 0.0) * 1e9,
            mfu=mfu if mfu is not None else table.target_mfu,
        ),
        workload.name,
    )


def _profile_mfu(profile: Profile, goal_workload: str) -> float:
    """The MFU a goal from the command line uses: the goal workload's ``target_mfu``."""
    for workload in profile.enabled_workloads:
        if workload.name == goal_workload and isinstance(workload, TrainingWorkloadConfig):
            return workload.training_goal.target_mfu
    return TARGET_MFU


def _run_init(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.init import run_init
    from fm_constructs.cli.init_args import init_request

    return run_init(init_request(args), reporter=reporter)


def _session(args: argparse.Namespace, profile: Profile) -> AwsSession:
    """The AWS session of a command: ``--region`` (else the profile's) and ``--aws-profile``."""
    from fm_constructs.cli.aws import AwsSession

    return AwsSession(region=args.region or profile.platform.region, profile_name=args.aws_profile)


def _deployment_session(args: argparse.Namespace) -> tuple[Profile, AwsSession]:
    """The profile of ``--config`` and the session its AWS commands use."""
    profile = _load(args.config)
    return profile, _session(args, profile)


def _run_status(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.deployment import run_status

    profile, session = _deployment_session(args)
    return run_status(profile, session, reporter)


def _run_connect(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.deployment import run_connect

    profile, session = _deployment_session(args)
    return run_connect(profile, session, reporter, workload=args.workload, start=args.start)


def _run_teardown(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.deployment import run_teardown

    if not args.dry_run:
        raise CliError(
            "teardown: only --dry-run is offered: it prints the retained resources and each "
            "command in order, for you to run; fmc deletes nothing itself",
            ExitCode.USAGE,
        )
    profile, session = _deployment_session(args)
    return run_teardown(profile, session, reporter, dry_run=True)


def _run_health(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.health import run_health

    return run_health(_load(args.config), reporter, workload=args.workload, nodes=args.nodes)


def _run_completion(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.completion import bash_script

    reporter.print(bash_script(build_parser()).rstrip("\n"))
    return ExitCode.OK


def _run_plan(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.plan import build_plan, render_plan
    from fm_constructs.cli.pricing import load_prices

    if (args.params is None) != (args.tokens is None):
        raise CliError(
            "plan: give --params and --tokens together (a training goal needs both)",
            ExitCode.USAGE,
        )
    profile = _load(args.config)
    goal_workload = args.goal_workload
    if args.params is not None:
        goal: TrainingGoal | None = TrainingGoal(
            parameters=args.params,
            tokens=args.tokens,
            mfu=args.mfu if args.mfu is not None else _profile_mfu(profile, goal_workload),
        )
    else:
        goal, goal_workload = _profile_goal(profile, goal_workload, args.mfu)
    prices = load_prices(args.prices)
    plan = build_plan(
        profile,
        prices,
        goal=goal,
        goal_workload=goal_workload,
        pod_ips_per_node=args.pod_ips_per_node,
    )
    if args.json:
        reporter.emit_json(plan.to_json())
    else:
        reporter.print(render_plan(plan))
    return ExitCode.CHECK_FAILED if plan.problems else ExitCode.OK


def _run_preflight(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.preflight import Preflight, run_preflight

    profile, session = _deployment_session(args)
    return run_preflight(
        Preflight(
            profile,
            session,
            reporter,
            expiry_warning_hours=args.expiry_warning_hours,
            kubernetes_version=args.kubernetes_version,
        )
    )


def _run_capacity(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli import capacity

    if args.capacity_command is None:
        raise CliError("capacity: choose an action: search or purchase", ExitCode.USAGE)
    profile = _load(args.config)
    if args.capacity_command == "purchase":
        if not args.yes:
            raise CliError(
                f"capacity purchase: refusing to buy offering {args.offering_id!r} without --yes "
                "(a Capacity Block is paid up front and cannot be cancelled); nothing was bought",
                ExitCode.USAGE,
            )
        return capacity.purchase(args, profile, _session(args, profile), reporter)
    request = capacity.search_request(args, profile)
    return capacity.search(request, profile, _session(args, profile), reporter)


def _run_validate(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli.validate import run_validate

    return ExitCode(run_validate(args, reporter, _load))


VALIDATE_DESCRIPTION = """\
Prove that the cluster reaches its EFA bandwidth with nccl-tests all_reduce_perf.

1. --config PROFILE --workload NAME [--nodes N] [--submit]
   Render the nccl-tests job of the workload: on EKS the MPI TrainingRuntime and the
   TrainJob (YAML on stdout); on HyperPod Slurm the exact sbatch command for the login node.
   With --submit on EKS: apply it with the current kubectl context, wait, collect the
   launcher's log (saved as nccl-tests-<namespace>.log) and judge it.

2. --from-log FILE [--instance-type TYPE] [--nodes N]
   Judge a saved all_reduce_perf log (mpirun or srun output, with or without NCCL INFO
   lines and rank prefixes). The node count and the GPU type are read from the log's
   device list when not given; a log that contradicts what is given is refused.

A run passes when the out-of-place bus bandwidth at the largest message size reaches 90% of
the expected figure and no row reports #wrong. The expected figure is a published
measurement for the instance type and node count when one exists (its source is printed);
otherwise "no reference figure" is stated and a model is used: 89% of the node's EFA line
rate up to 16 nodes, 9 points less per doubling beyond. A log that ends before the summary
line fails as truncated.
"""


VALIDATE_EPILOG = """\
examples:
  fmc validate --config config/default.toml --workload pretraining > nccl-tests.yaml
  fmc validate --config config/default.toml --workload pretraining --nodes 2 --submit
  fmc validate --from-log nccl-tests.log --instance-type p5.48xlarge --nodes 2

exit codes:
  0  the run passed (or the job was rendered)
  1  the run failed: bandwidth below the threshold, #wrong > 0, truncated log, job failed
  2  usage or profile error
"""


def _run_pcs_ami(args: argparse.Namespace, reporter: Reporter) -> ExitCode:
    from fm_constructs.cli import pcs_ami
    from fm_constructs.cli.aws import AwsSession

    chosen = args.config or default_profile()
    if chosen is None:
        raise CliError("pcs-ami: no profile given: pass --config FILE", ExitCode.USAGE)
    request = pcs_ami.request_for(
        Path(chosen),
        args.workload,
        region=args.region,
        name_pattern=args.name_pattern,
        owner=args.owner,
    )
    session = AwsSession(region=request.region, profile_name=args.aws_profile)
    image = pcs_ami.newest_image(session.client("ec2"), request)
    if args.write:
        pcs_ami.write_table(request, image)
        load_profile(chosen)  # the profile now loads, or every remaining problem is shown
    if reporter.json_mode:
        reporter.emit_json(
            {
                "workload": request.workload,
                "id": image.image_id,
                "region": request.region,
                "name": image.name,
                "creation_date": image.creation_date,
                "written": bool(args.write),
            }
        )
    else:
        reporter.print(pcs_ami.table_text(request.workload, request.region, image).rstrip())
        if args.write:
            reporter.print(f"written to {chosen}")
    return ExitCode.OK


_COMMANDS: dict[str, Callable[[argparse.Namespace, Reporter], ExitCode]] = {
    "init": _run_init,
    "plan": _run_plan,
    "preflight": _run_preflight,
    "capacity": _run_capacity,
    "validate": _run_validate,
    "status": _run_status,
    "connect": _run_connect,
    "teardown": _run_teardown,
    "health": _run_health,
    "pcs-ami": _run_pcs_ami,
    "completion": _run_completion,
}


def main(
    argv: Sequence[str] | None = None, *, stdout: TextIO | None = None, stderr: TextIO | None = None
) -> int:
    """Run ``fmc`` with ``argv`` (default: sys.argv[1:]); return the exit code."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    parser = build_parser()
    reporter = Reporter(out=out, err=err)
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_:  # --help and --version print and exit 0
            return int(exit_.code or 0)
        if args.command is None:
            parser.print_help(file=err)
            return ExitCode.USAGE
        reporter.json_mode = bool(getattr(args, "json", False))
        code = int(_COMMANDS[args.command](args, reporter))
        out.flush()  # a closed pipe shows here, inside the handler below
        return code
    except BrokenPipeError:
        _silence_stdout(out)
        return BROKEN_PIPE
    except CliError as error:
        reporter.error(error.message)
        return int(error.exit_code)
    except FmValidationError as error:
        reporter.error(str(error))
        return int(ExitCode.USAGE)
    except KeyboardInterrupt:
        reporter.error("interrupted")
        return 130


def _silence_stdout(out: TextIO) -> None:
    """After the reader of ``out`` went away (``fmc plan | head``): point the process's stdout
    at /dev/null, so the interpreter's last flush at exit raises no second BrokenPipeError
    (the recipe of the Python ``signal`` documentation)."""
    if out is not sys.stdout:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    raise SystemExit(main())
