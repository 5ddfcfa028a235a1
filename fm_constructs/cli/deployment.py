"""``fmc status``, ``fmc connect`` and ``fmc teardown --dry-run``: a deployed profile, read back
from CloudFormation, EKS and EC2 (read-only calls only).

- status: each stack the profile builds, its CloudFormation status and outputs;
- connect: the Session Manager port forward to a cluster's private API endpoint, resolved for
  this deployment (endpoint host, a running node), and the kubeconfig commands that use it
  (docs/operations/cluster-access.md, the recipe it automates);
- teardown --dry-run: the teardown sequence of docs/getting-started.md with this deployment's
  names filled in: what is retained (with its id), and each command in order. Nothing is
  deleted: the commands are printed for you to run.

The stack names come from the profile as ``stacks/app_builder.py`` forms them
(``<name>-platform``, ``<name>-cluster``, ``<name>-<workload>``...), without aws_cdk.
"""

from __future__ import annotations

import shlex
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import botocore.exceptions

from fm_constructs.cli.aws import (
    AwsSession,
    call,
    call_required,
    describe_aws_error,
    error_code,
)
from fm_constructs.cli.document import document
from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.output import Reporter, render_table
from fm_constructs.config import Profile
from fm_constructs.config.options import deployment_options

STATUS_SCHEMA = "fmc.status/v1"
TEARDOWN_SCHEMA = "fmc.teardown/v1"
CONNECT_SCHEMA = "fmc.connect/v1"

#: Resource types a stack's deletion leaves behind (DeletionPolicy Retain), as the teardown
#: guide lists them.
RETAINED_TYPES = (
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::FSx::FileSystem",
    "AWS::APS::Workspace",
    "AWS::Grafana::Workspace",
    "AWS::Logs::LogGroup",
)
LOCAL_PORT = 8443


@dataclass(frozen=True)
class StackNames:
    """The stacks of a profile, by role."""

    platform: str
    grafana: str | None
    clusters: tuple[str, ...]
    cluster_addons: tuple[str, ...]
    monitoring: tuple[str, ...]
    workloads: tuple[str, ...]
    computes: tuple[str, ...]

    @property
    def all(self) -> tuple[str, ...]:
        return (
            self.platform,
            *((self.grafana,) if self.grafana else ()),
            *self.clusters,
            *self.cluster_addons,
            *self.monitoring,
            *self.workloads,
            *self.computes,
        )


def stack_names(profile: Profile) -> StackNames:
    """The names ``build_stacks`` gives the stacks of ``profile`` (its naming rule)."""
    from fm_constructs.config import Orchestrator

    name = profile.platform.name
    options = deployment_options(profile)

    def named(suffix: str) -> str:
        return f"{name}-{suffix.replace('_', '-')}"

    suffixes = [c.stack_suffix for c in options.clusters.values()]
    workloads: list[str] = []
    computes: list[str] = []
    for w in profile.enabled_workloads:
        on_eks = w.orchestrator is Orchestrator.EKS
        owns_storage = w.storage.enabled and not w.reuses_pretraining_storage
        if not on_eks or owns_storage:
            workloads.append(named(w.name))
        if on_eks:
            computes.append(named(f"{w.name}-compute"))
    observability = profile.platform.observability
    return StackNames(
        platform=named("platform"),
        grafana=named("grafana") if observability and profile.platform.grafana else None,
        clusters=tuple(named(s) for s in suffixes),
        cluster_addons=tuple(named(f"{s}-addons") for s in suffixes),
        monitoring=tuple(named(f"{s}-monitoring") for s in suffixes) if observability else (),
        workloads=tuple(workloads),
        computes=tuple(computes),
    )


@dataclass
class StackState:
    """One stack as CloudFormation describes it (``status`` None: not deployed)."""

    name: str
    status: str | None = None
    updated: str | None = None
    termination_protection: bool = False
    outputs: dict[str, str] = field(default_factory=dict)


def describe_stack(cloudformation: Any, name: str) -> StackState:
    """cloudformation:DescribeStacks of one stack; a stack that does not exist is not an error."""
    try:
        answer = cloudformation.describe_stacks(StackName=name)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        # CloudFormation answers a missing stack with ValidationError "... does not exist".
        if error_code(error) == "ValidationError" and "does not exist" in str(error):
            return StackState(name)
        action = "cloudformation:DescribeStacks"
        raise CliError(describe_aws_error(error, action), ExitCode.AWS_ERROR) from None
    stack = answer["Stacks"][0]
    updated = stack.get("LastUpdatedTime") or stack.get("CreationTime")
    return StackState(
        name=name,
        status=str(stack.get("StackStatus")),
        updated=updated.strftime("%Y-%m-%d %H:%M UTC") if updated is not None else None,
        termination_protection=bool(stack.get("EnableTerminationProtection", False)),
        outputs={str(o["OutputKey"]): str(o["OutputValue"]) for o in stack.get("Outputs", [])},
    )


def deployment_states(profile: Profile, session: AwsSession) -> list[StackState]:
    cloudformation = session.client("cloudformation")
    return [describe_stack(cloudformation, name) for name in stack_names(profile).all]


def run_status(profile: Profile, session: AwsSession, reporter: Reporter) -> ExitCode:
    """Print every stack of the profile with its status and outputs."""
    states = deployment_states(profile, session)
    failed = [s for s in states if s.status and ("FAILED" in s.status or "ROLLBACK" in s.status)]
    code = ExitCode.CHECK_FAILED if failed else ExitCode.OK
    if reporter.json_mode:
        reporter.emit_json(
            {
                "schema": STATUS_SCHEMA,
                "profile": profile.source,
                "region": session.region,
                "stacks": document(states),
                "exit_code": int(code),
            }
        )
        return code
    reporter.print(f"deployment {profile.platform.name} of {profile.source} ({session.region})\n")
    rows = [[s.name, s.status or "not deployed", s.updated or "-"] for s in states]
    reporter.print(render_table(["stack", "status", "updated"], rows))
    for state in states:
        if state.outputs:
            reporter.print(f"\n{state.name}:")
            width = max(len(k) for k in state.outputs)
            for key, value in sorted(state.outputs.items()):
                reporter.print(f"  {key:<{width}}  {value}")
    deployed = sum(1 for s in states if s.status)
    reporter.print(f"\n{deployed} of {len(states)} stacks deployed")
    return code


# ------------------------------------------------------------------------------ connect


@dataclass(frozen=True)
class Connection:
    cluster: str
    host: str
    cluster_arn: str
    node: str
    region: str

    def tunnel(self) -> list[str]:
        parameters = (
            f'{{"host":["{self.host}"],"portNumber":["443"],"localPortNumber":["{LOCAL_PORT}"]}}'
        )
        return [
            "aws",
            "ssm",
            "start-session",
            "--region",
            self.region,
            "--target",
            self.node,
            "--document-name",
            "AWS-StartPortForwardingSessionToRemoteHost",
            "--parameters",
            parameters,
        ]

    def kubeconfig(self) -> list[list[str]]:
        return [
            ["aws", "eks", "update-kubeconfig", "--region", self.region, "--name", self.cluster],
            [
                "kubectl",
                "config",
                "set-cluster",
                self.cluster_arn,
                f"--server=https://127.0.0.1:{LOCAL_PORT}",
                f"--tls-server-name={self.host}",
            ],
        ]


def _cluster_stack(profile: Profile, workload: str | None) -> str:
    names = stack_names(profile)
    options = deployment_options(profile)
    if not names.clusters:
        raise CliError(
            f"connect: {profile.source} has no EKS cluster (HyperPod Slurm is reached with "
            "aws ssm start-session to its login node)",
            ExitCode.USAGE,
        )
    if workload is None:
        return names.clusters[0]
    key = options.workloads.get(workload.replace("-", "_"))
    if key is None or key.cluster is None:
        raise CliError(f"connect: {workload} is not an EKS workload of the profile", ExitCode.USAGE)
    suffix = options.clusters[key.cluster].stack_suffix
    return f"{profile.platform.name}-{suffix}"


def resolve_connection(profile: Profile, session: AwsSession, workload: str | None) -> Connection:
    """The cluster of ``workload`` (default: the first), its endpoint and a running node."""
    stack = _cluster_stack(profile, workload)
    state = describe_stack(session.client("cloudformation"), stack)
    cluster = state.outputs.get("EksClusterName")
    if cluster is None:
        raise CliError(
            f"connect: {stack} is {state.status or 'not deployed'}: no EksClusterName output "
            f"(deploy it: cdk deploy {stack} -c config={profile.source})",
            ExitCode.CHECK_FAILED,
        )
    described = call_required(
        session.client("eks"), "describe_cluster", "eks:DescribeCluster", name=cluster
    )["cluster"]
    host = str(described["endpoint"]).removeprefix("https://")
    reservations = call_required(
        session.client("ec2"),
        "describe_instances",
        "ec2:DescribeInstances",
        Filters=[
            {"Name": "tag:eks:cluster-name", "Values": [cluster]},
            {"Name": "instance-state-name", "Values": ["running"]},
        ],
    ).get("Reservations", [])
    nodes = sorted(i["InstanceId"] for r in reservations for i in r.get("Instances", []))
    if not nodes:
        raise CliError(
            f"connect: no running node in {cluster} to forward through (the system node group "
            "keeps at least one; check it in the EKS console)",
            ExitCode.CHECK_FAILED,
        )
    return Connection(cluster, host, str(described["arn"]), nodes[0], session.region)


def run_connect(
    profile: Profile,
    session: AwsSession,
    reporter: Reporter,
    *,
    workload: str | None,
    start: bool,
    runner: Any = subprocess.run,
) -> ExitCode:
    """Print the tunnel and kubeconfig commands; with ``start``, set kubeconfig and run the
    tunnel in the foreground (until Ctrl-C)."""
    connection = resolve_connection(profile, session, workload)
    tunnel = connection.tunnel()
    kubeconfig = connection.kubeconfig()
    if reporter.json_mode and not start:
        reporter.emit_json(
            {
                "schema": CONNECT_SCHEMA,
                "cluster": connection.cluster,
                "endpoint_host": connection.host,
                "node": connection.node,
                "tunnel": tunnel,
                "kubeconfig": kubeconfig,
            }
        )
        return ExitCode.OK
    if not start:
        reporter.print(
            f"# 1. forward 127.0.0.1:{LOCAL_PORT} to {connection.cluster}'s API "
            f"through {connection.node} (leave it running):"
        )
        reporter.print(shlex.join(tunnel))
        reporter.print("# 2. in a second terminal, point kubectl at the tunnel:")
        for command in kubeconfig:
            reporter.print(shlex.join(command))
        reporter.print("kubectl get nodes -L node.kubernetes.io/instance-type")
        reporter.print("# (fmc connect --start does both: kubeconfig first, then the tunnel)")
        return ExitCode.OK
    for command in kubeconfig:
        reporter.progress(shlex.join(command))
        if runner(command, check=False).returncode != 0:
            raise CliError(f"connect: {shlex.join(command)} failed", ExitCode.CHECK_FAILED)
    reporter.progress(f"tunnel to {connection.cluster} through {connection.node}; Ctrl-C ends it")
    return ExitCode(0 if runner(tunnel, check=False).returncode == 0 else 1)


# ------------------------------------------------------------------------------ teardown


@dataclass(frozen=True)
class Retained:
    stack: str
    resource_type: str
    physical_id: str


def retained_resources(session: AwsSession, stacks: Sequence[StackState]) -> list[Retained]:
    client = session.client("cloudformation")
    found: list[Retained] = []
    for state in stacks:
        if state.status is None:
            continue
        token: str | None = None
        while True:
            params: dict[str, Any] = {"StackName": state.name}
            if token:
                params["NextToken"] = token
            page = (
                call(
                    client,
                    "list_stack_resources",
                    "cloudformation:ListStackResources",
                    **params,
                )
                or {}
            )
            for resource in page.get("StackResourceSummaries", []):
                if resource.get("ResourceType") in RETAINED_TYPES:
                    found.append(
                        Retained(
                            state.name,
                            str(resource["ResourceType"]),
                            str(resource.get("PhysicalResourceId", "")),
                        )
                    )
            token = page.get("NextToken")
            if not token:
                break
    return found


def teardown_steps(
    profile: Profile, states: Sequence[StackState], retained: Sequence[Retained], region: str
) -> list[tuple[str, list[str]]]:
    """The teardown of docs/getting-started.md for this deployment: (what, commands)."""
    names = stack_names(profile)
    config = f"-c config={profile.source}"
    deployed = {s.name for s in states if s.status}
    by_name = {s.name: s for s in states}
    bucket = by_name[names.platform].outputs.get("DataBucketName", "<DataBucketName>")
    steps: list[tuple[str, list[str]]] = [
        (
            "let running jobs checkpoint; check the checkpoints reached S3",
            [f"aws s3 ls s3://{bucket}/checkpoints/ --region {region}"],
        )
    ]
    workload_stacks = [n for n in (*names.computes, *names.workloads) if n in deployed]
    if workload_stacks:
        steps.append(
            (
                "delete the workload stacks (compute before file system; retained: file "
                "systems, their security groups and keys)",
                [f"cdk destroy {' '.join(workload_stacks)} --force {config}"],
            )
        )
    file_systems = [r for r in retained if r.resource_type == "AWS::FSx::FileSystem"]
    if file_systems:
        steps.append(
            (
                "delete each retained file system you no longer need (S3 is the durable copy), "
                "then its security group",
                [
                    command
                    for r in file_systems
                    for command in (
                        f"aws fsx delete-file-system --file-system-id {r.physical_id} "
                        f"--region {region}",
                        f"aws ec2 describe-security-groups --region {region} --query "
                        f"'SecurityGroups[].GroupId' --filters "
                        f"Name=tag:aws:cloudformation:stack-name,Values={r.stack}",
                    )
                ],
            )
        )
    rest = [n for n in (*names.monitoring, *names.cluster_addons, *names.clusters) if n in deployed]
    platform_commands: list[str] = []
    platform = by_name[names.platform]
    if platform.status and platform.termination_protection:
        platform_commands.append(
            "aws cloudformation update-termination-protection "
            f"--no-enable-termination-protection --stack-name {names.platform} --region {region}"
        )
    if platform.status or rest:
        others = " ".join([*rest, *([names.grafana] if names.grafana in deployed else [])])
        platform_commands.append(
            f"cdk destroy {names.platform} {others} --force {config}".replace("  ", " ")
        )
        steps.append(
            (
                "lift the platform stack's termination protection, then delete it with the "
                "cluster stacks (its teardown guard stops it while a file system is in the VPC)",
                platform_commands,
            )
        )
    return steps


def run_teardown(
    profile: Profile, session: AwsSession, reporter: Reporter, *, dry_run: bool
) -> ExitCode:
    """Print what a teardown keeps and the commands, in order; delete nothing."""
    if not dry_run:
        raise CliError(
            "teardown: only --dry-run is offered: it prints the retained resources and each "
            "command in order, for you to run; fmc deletes nothing itself",
            ExitCode.USAGE,
        )
    states = deployment_states(profile, session)
    retained = retained_resources(session, states)
    steps = teardown_steps(profile, states, retained, session.region)
    if reporter.json_mode:
        reporter.emit_json(
            {
                "schema": TEARDOWN_SCHEMA,
                "profile": profile.source,
                "region": session.region,
                "retained": [
                    {"stack": r.stack, "type": r.resource_type, "id": r.physical_id}
                    for r in retained
                ],
                "steps": [{"what": what, "commands": commands} for what, commands in steps],
            }
        )
        return ExitCode.OK
    deployed = [s.name for s in states if s.status]
    if not deployed:
        reporter.print(
            f"nothing of deployment {profile.platform.name} is deployed in {session.region}"
        )
        return ExitCode.OK
    reporter.print(
        f"teardown of {profile.platform.name} ({session.region}), dry run: nothing was deleted\n"
    )
    reporter.print("retained after every stack is deleted (delete by hand when no longer needed):")
    if retained:
        reporter.print(
            render_table(
                ["stack", "type", "id"],
                [[r.stack, r.resource_type, r.physical_id] for r in retained],
            )
        )
    else:
        reporter.print("  (none found)")
    for index, (what, commands) in enumerate(steps, start=1):
        reporter.print(f"\n{index}. {what}")
        for command in commands:
            reporter.print(f"   {command}")
    return ExitCode.OK
