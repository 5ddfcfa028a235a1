"""The VPC teardown guard's handler: on Delete it fails, naming each retained file system and
foreign security group and the commands to delete them, while any is still in the VPC; it
succeeds when none is, on Create and Update, and when it cannot list (botocore Stubber plays
FSx and EC2; a local HTTP server plays CloudFormation's response URL)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.stub import Stubber

from fm_constructs.storage.teardown_guard import handler as guard
from tests.unit.cli_stubs import Stubs, fake_credentials

VPC = "vpc-0123456789abcdef0"
STACK = "fm-platform"


@pytest.fixture
def responses() -> Iterator[tuple[list[dict[str, Any]], str]]:
    """CloudFormation's pre-signed response URL: the bodies PUT to it, and its address."""
    received: list[dict[str, Any]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_PUT(self) -> None:
            length = int(self.headers["Content-Length"])
            received.append(json.loads(self.rfile.read(length)))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield received, f"http://127.0.0.1:{server.server_address[1]}/cfn-response"
    server.shutdown()
    server.server_close()


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Stubs]:
    fake_credentials(monkeypatch)
    stubs = Stubs()
    yield stubs
    for stubber in stubs.stubbers.values():
        stubber.deactivate()


def _event(url: str, request_type: str = "Delete") -> dict[str, Any]:
    return {
        "RequestType": request_type,
        "ResponseURL": url,
        "StackId": f"arn:aws:cloudformation:us-east-1:111122223333:stack/{STACK}/1",
        "RequestId": "request-1",
        "LogicalResourceId": "TeardownGuard",
        "PhysicalResourceId": f"teardown-guard-{VPC}",
        "ResourceProperties": {"VpcId": VPC, "SubnetIds": ["subnet-1"], "StackName": STACK},
    }


def _stack_tag(stack: str) -> list[dict[str, str]]:
    return [{"Key": "aws:cloudformation:stack-name", "Value": stack}]


def _file_systems(stub: Stubber, *systems: dict[str, Any]) -> None:
    stub.add_response("describe_file_systems", {"FileSystems": list(systems)}, {})


def _groups(stub: Stubber, *groups: dict[str, Any]) -> None:
    stub.add_response(
        "describe_security_groups",
        {"SecurityGroups": list(groups)},
        {"Filters": [{"Name": "vpc-id", "Values": [VPC]}]},
    )


def _run(aws: Stubs, event: dict[str, Any]) -> None:
    guard.handler(event, fsx=aws.client("fsx"), ec2=aws.client("ec2"))


def test_delete_fails_naming_the_retained_file_system_and_its_group(
    aws: Stubs, responses: tuple[list[dict[str, Any]], str]
) -> None:
    received, url = responses
    _file_systems(
        aws["fsx"],
        {
            "FileSystemId": "fs-0aaaaaaaaaaaaaaaa",
            "VpcId": VPC,
            "Lifecycle": "AVAILABLE",
            "Tags": _stack_tag("fm-pretraining"),
        },
        {
            "FileSystemId": "fs-0cccccccccccccccc",
            "VpcId": "vpc-0ffffffffffffffff",
            "Lifecycle": "AVAILABLE",
        },
        {"FileSystemId": "fs-0bbbbbbbbbbbbbbbb", "VpcId": VPC, "Lifecycle": "DELETING"},
    )
    _groups(
        aws["ec2"],
        {"GroupId": "sg-0dddddddddddddddd", "GroupName": "default"},
        {"GroupId": "sg-0eeeeeeeeeeeeeeee", "GroupName": "endpoints", "Tags": _stack_tag(STACK)},
        {
            "GroupId": "sg-0aaaaaaaaaaaaaaaa",
            "GroupName": "fsx",
            "Tags": _stack_tag("fm-pretraining"),
        },
    )
    _run(aws, _event(url))
    aws.assert_done()
    (response,) = received
    assert response["Status"] == "FAILED"
    reason = response["Reason"]
    assert "aws fsx delete-file-system --file-system-id fs-0aaaaaaaaaaaaaaaa" in reason
    assert "fm-pretraining, retained" in reason and "fs-0cccccccccccccccc" not in reason
    assert "fs-0bbbbbbbbbbbbbbbb" in reason and "being deleted" in reason
    assert "aws ec2 delete-security-group --group-id sg-0aaaaaaaaaaaaaaaa" in reason
    assert "sg-0eeeeeeeeeeeeeeee" not in reason and "sg-0dddddddddddddddd" not in reason
    assert "destroy this stack again" in reason and len(json.dumps(response)) < 4096
    assert response["PhysicalResourceId"] == f"teardown-guard-{VPC}"


def test_delete_succeeds_once_nothing_else_is_in_the_vpc(
    aws: Stubs, responses: tuple[list[dict[str, Any]], str]
) -> None:
    received, url = responses
    _file_systems(
        aws["fsx"], {"FileSystemId": "fs-0cccccccccccccccc", "VpcId": "vpc-0ffffffffffffffff"}
    )
    _groups(
        aws["ec2"], {"GroupId": "sg-0eeeeeeeeeeeeeeee", "GroupName": "x", "Tags": _stack_tag(STACK)}
    )
    _run(aws, _event(url))
    aws.assert_done()
    assert [r["Status"] for r in received] == ["SUCCESS"]


@pytest.mark.parametrize("request_type", ["Create", "Update"])
def test_create_and_update_list_nothing(
    aws: Stubs, responses: tuple[list[dict[str, Any]], str], request_type: str
) -> None:
    received, url = responses
    _run(aws, _event(url, request_type))  # no stubbed response: any call would fail
    assert [r["Status"] for r in received] == ["SUCCESS"]


def test_an_error_while_listing_lets_the_delete_go_on(
    aws: Stubs, responses: tuple[list[dict[str, Any]], str]
) -> None:
    received, url = responses
    aws["fsx"].add_client_error("describe_file_systems", "AccessDeniedException", "denied")
    _run(aws, _event(url))
    assert [r["Status"] for r in received] == ["SUCCESS"]


def test_a_long_list_is_cut_to_what_cloudformation_shows() -> None:
    systems = [
        {"FileSystemId": f"fs-{index:017x}", "VpcId": VPC, "Lifecycle": "AVAILABLE"}
        for index in range(40)
    ]
    reason = guard.blocking_reason(VPC, systems, [])
    assert reason is not None and len(reason) <= guard.MAX_REASON
    assert reason.endswith("docs/storage.md, Tear down)")
