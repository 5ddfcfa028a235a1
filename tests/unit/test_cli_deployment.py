"""fmc status, connect and teardown --dry-run against botocore's Stubber: the calls they make,
what they print, and that teardown deletes nothing."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime
from typing import Any

import pytest

from fm_constructs.cli.aws import AwsSession
from fm_constructs.cli.deployment import run_connect
from fm_constructs.cli.output import Reporter
from fm_constructs.config import load_profile
from tests.unit.cli_stubs import REPO, Stubs, run, stubs

__all__ = ["stubs"]  # the fixture

SERVE = str(REPO / "config" / "inference-g6e.toml")  # fm-serve, us-west-2, one EKS cluster
CREATED = datetime(2026, 11, 30, 9, 15, tzinfo=UTC)
CLUSTER = "fm-serve-cluster-Eks1234"
HOST = "ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com"


def _stack(
    s: Stubs, name: str, status: str, outputs: dict[str, str] | None = None, protected: bool = False
) -> None:
    s["cloudformation"].add_response(
        "describe_stacks",
        {
            "Stacks": [
                {
                    "StackName": name,
                    "CreationTime": CREATED,
                    "StackStatus": status,
                    "EnableTerminationProtection": protected,
                    "Outputs": [
                        {"OutputKey": k, "OutputValue": v} for k, v in (outputs or {}).items()
                    ],
                }
            ]
        },
        {"StackName": name},
    )


def _missing(s: Stubs, name: str) -> None:
    s["cloudformation"].add_client_error(
        "describe_stacks",
        "ValidationError",
        f"Stack with id {name} does not exist",
        expected_params={"StackName": name},
    )


def _deployed(s: Stubs, compute_status: str = "CREATE_COMPLETE") -> None:
    """The platform, Grafana and cluster stacks, no add-ons or monitoring yet, the compute."""
    _stack(
        s,
        "fm-serve-platform",
        "CREATE_COMPLETE",
        {"DataBucketName": "fm-serve-data-abc", "VpcId": "vpc-0123456789abcdef0"},
        protected=True,
    )
    _stack(s, "fm-serve-grafana", "CREATE_COMPLETE", {"GrafanaUrl": "https://g.example"})
    _stack(s, "fm-serve-cluster", "CREATE_COMPLETE", {"EksClusterName": CLUSTER})
    _missing(s, "fm-serve-cluster-addons")
    _missing(s, "fm-serve-cluster-monitoring")
    _stack(s, "fm-serve-inference-compute", compute_status)


def test_status_lists_every_stack_with_its_outputs(stubs: Stubs) -> None:
    _deployed(stubs)
    result = run("status", "--config", SERVE)
    assert result.code == 0, result.err
    stubs.assert_done()
    assert "deployment fm-serve of" in result.out
    lines = result.out.splitlines()
    assert any(ln.startswith("fm-serve-cluster-addons") and "not deployed" in ln for ln in lines)
    assert any(
        ln.startswith("fm-serve-platform") and "CREATE_COMPLETE" in ln and "2026-11-30 09:15" in ln
        for ln in lines
    )
    assert f"  EksClusterName  {CLUSTER}" in lines
    assert "4 of 6 stacks deployed" in result.out


def test_status_json_and_a_failed_stack(stubs: Stubs) -> None:
    _deployed(stubs, compute_status="UPDATE_ROLLBACK_COMPLETE")
    result = run("status", "--config", SERVE, "--json")
    assert result.code == 1
    document = json.loads(result.out)
    assert document["schema"] == "fmc.status/v1"
    assert [s["status"] for s in document["stacks"]] == [
        "CREATE_COMPLETE",
        "CREATE_COMPLETE",
        "CREATE_COMPLETE",
        None,
        None,
        "UPDATE_ROLLBACK_COMPLETE",
    ]


def test_status_access_denied_is_an_aws_error(stubs: Stubs) -> None:
    stubs["cloudformation"].add_client_error("describe_stacks", "AccessDenied", "no")
    result = run("status", "--config", SERVE)
    assert result.code == 3
    assert "cloudformation:DescribeStacks: access denied" in result.err


def _connection(s: Stubs) -> None:
    _stack(s, "fm-serve-cluster", "CREATE_COMPLETE", {"EksClusterName": CLUSTER})
    s["eks"].add_response(
        "describe_cluster",
        {
            "cluster": {
                "name": CLUSTER,
                "arn": f"arn:aws:eks:us-west-2:444455556666:cluster/{CLUSTER}",
                "endpoint": f"https://{HOST}",
            }
        },
        {"name": CLUSTER},
    )
    s["ec2"].add_response(
        "describe_instances",
        {
            "Reservations": [
                {"Instances": [{"InstanceId": "i-0bbbbbbbbbbbbbbbb"}]},
                {"Instances": [{"InstanceId": "i-0aaaaaaaaaaaaaaaa"}]},
            ]
        },
        {
            "Filters": [
                {"Name": "tag:eks:cluster-name", "Values": [CLUSTER]},
                {"Name": "instance-state-name", "Values": ["running"]},
            ]
        },
    )


def test_connect_prints_the_resolved_tunnel_and_kubeconfig(stubs: Stubs) -> None:
    _connection(stubs)
    result = run("connect", "--config", SERVE)
    assert result.code == 0, result.err
    stubs.assert_done()
    assert (
        "aws ssm start-session --region us-west-2 --target i-0aaaaaaaaaaaaaaaa "
        "--document-name AWS-StartPortForwardingSessionToRemoteHost --parameters "
        f'\'{{"host":["{HOST}"],"portNumber":["443"],"localPortNumber":["8443"]}}\''
    ) in result.out
    assert f"aws eks update-kubeconfig --region us-west-2 --name {CLUSTER}" in result.out
    assert (
        f"kubectl config set-cluster arn:aws:eks:us-west-2:444455556666:cluster/{CLUSTER} "
        f"--server=https://127.0.0.1:8443 --tls-server-name={HOST}"
    ) in result.out


def test_connect_start_runs_kubeconfig_then_the_tunnel(stubs: Stubs) -> None:
    _connection(stubs)
    ran: list[list[str]] = []

    def runner(argv: list[str], check: bool) -> subprocess.CompletedProcess[str]:
        ran.append(argv)
        return subprocess.CompletedProcess(argv, 0)

    profile = load_profile(SERVE)
    session = AwsSession(region="us-west-2")
    code = run_connect(
        profile, session, Reporter(json_mode=True), workload=None, start=True, runner=runner
    )
    assert code == 0
    assert [argv[:3] for argv in ran] == [
        ["aws", "eks", "update-kubeconfig"],
        ["kubectl", "config", "set-cluster"],
        ["aws", "ssm", "start-session"],
    ]


def test_connect_before_the_cluster_is_deployed(stubs: Stubs) -> None:
    _missing(stubs, "fm-serve-cluster")
    result = run("connect", "--config", SERVE)
    assert result.code == 1
    assert "fm-serve-cluster is not deployed" in result.err
    assert "cdk deploy fm-serve-cluster -c config=" in result.err


def _resources(s: Stubs, stack: str, resources: list[tuple[str, str]]) -> None:
    s["cloudformation"].add_response(
        "list_stack_resources",
        {
            "StackResourceSummaries": [
                {
                    "LogicalResourceId": f"R{i}",
                    "PhysicalResourceId": physical,
                    "ResourceType": kind,
                    "LastUpdatedTimestamp": CREATED,
                    "ResourceStatus": "CREATE_COMPLETE",
                }
                for i, (kind, physical) in enumerate(resources)
            ]
        },
        {"StackName": stack},
    )


def test_teardown_dry_run_lists_what_is_kept_and_each_command_in_order(stubs: Stubs) -> None:
    _deployed(stubs)
    _resources(
        stubs,
        "fm-serve-platform",
        [
            ("AWS::S3::Bucket", "fm-serve-data-abc"),
            ("AWS::KMS::Key", "1234abcd-12ab-34cd-56ef-1234567890ab"),
            ("AWS::EC2::VPC", "vpc-0123456789abcdef0"),
        ],
    )
    _resources(stubs, "fm-serve-grafana", [("AWS::Grafana::Workspace", "g-0123456789")])
    _resources(stubs, "fm-serve-cluster", [("AWS::Logs::LogGroup", "/aws/eks/x")])
    _resources(stubs, "fm-serve-inference-compute", [("AWS::EKS::Nodegroup", "ng")])
    result = run("teardown", "--config", SERVE, "--dry-run")
    assert result.code == 0, result.err
    stubs.assert_done()  # read-only: no delete call was queued, none was made
    out = result.out
    assert "dry run: nothing was deleted" in out
    assert "fm-serve-data-abc" in out and "g-0123456789" in out
    assert "vpc-0123456789abcdef0" not in out.split("1. ")[0]  # the VPC is not retained
    order = [
        "aws s3 ls s3://fm-serve-data-abc/checkpoints/",
        f"cdk destroy fm-serve-inference-compute --force -c config={SERVE}",
        "aws cloudformation update-termination-protection --no-enable-termination-protection "
        "--stack-name fm-serve-platform --region us-west-2",
        "cdk destroy fm-serve-platform fm-serve-cluster fm-serve-grafana --force "
        f"-c config={SERVE}",
    ]
    positions = [out.index(command) for command in order]
    assert positions == sorted(positions), out


def test_teardown_without_dry_run_is_refused_before_any_call(stubs: Stubs) -> None:
    result = run("teardown", "--config", SERVE)
    assert result.code == 2
    assert "only --dry-run is offered" in result.err
    stubs.assert_done()


def test_teardown_json(stubs: Stubs) -> None:
    for name in (
        "fm-serve-platform",
        "fm-serve-grafana",
        "fm-serve-cluster",
        "fm-serve-cluster-addons",
        "fm-serve-cluster-monitoring",
        "fm-serve-inference-compute",
    ):
        _missing(stubs, name)
    result = run("teardown", "--config", SERVE, "--dry-run", "--json")
    assert result.code == 0, result.err
    document: dict[str, Any] = json.loads(result.out)
    assert document["schema"] == "fmc.teardown/v1" and document["retained"] == []


@pytest.mark.parametrize("command", ["status", "connect", "teardown"])
def test_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(command, "--help").code == 0
    assert "--config" in capsys.readouterr().out
