"""The Grafana provisioner handler against a local stand-in for Grafana (no real network).

A ``http.server`` on 127.0.0.1 plays the Grafana HTTP API (and CloudFormation's pre-signed
response URL); botocore's Stubber plays the AMG service-account API.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import ANY, Stubber

from fm_constructs.observability.grafana_provisioner import handler as provisioner

TOKEN = "glsa_super-secret-token-value"
WORKSPACE = "g-0123456789"
ACCOUNT_ID = "7"


class FakeGrafana:
    """State and scripted failures of the stand-in Grafana."""

    def __init__(self) -> None:
        self.data_sources: dict[str, dict[str, Any]] = {}
        self.folders: dict[str, dict[str, Any]] = {}
        self.dashboards: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, str]] = []
        self.auth_headers: set[str] = set()
        self.fail_next: list[int] = []  # statuses to return before serving normally
        self.cfn_responses: list[dict[str, Any]] = []

    def handle(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        self.requests.append((method, path))
        if path.startswith("/cfn-response"):
            self.cfn_responses.append(body)
            return 200, None
        if self.fail_next:
            return self.fail_next.pop(0), {"message": "try again"}
        parts = path.strip("/").split("/")
        if parts[:2] == ["api", "datasources"]:
            if method == "POST":
                self.data_sources[body["uid"]] = body
                return 200, {"id": len(self.data_sources)}
            uid = parts[3]
            if uid not in self.data_sources:
                return 404, {"message": "not found"}
            if method == "PUT":
                self.data_sources[uid] = body
            if method == "DELETE":
                del self.data_sources[uid]
            return 200, self.data_sources.get(uid, {})
        if parts[:2] == ["api", "folders"]:
            if method == "POST":
                self.folders[body["uid"]] = body
                return 200, body
            uid = parts[2]
            if uid not in self.folders:
                return 404, {"message": "not found"}
            if method == "DELETE":
                del self.folders[uid]
            return 200, {}
        if parts[:3] == ["api", "dashboards", "db"]:
            assert body["overwrite"] is True and body["dashboard"]["id"] is None
            self.dashboards[body["dashboard"]["uid"]] = body
            return 200, {"status": "success"}
        if parts[:3] == ["api", "dashboards", "uid"] and method == "DELETE":
            if self.dashboards.pop(parts[3], None) is None:
                return 404, {"message": "not found"}
            return 200, {}
        return 400, {"message": f"unexpected {method} {path}"}


@pytest.fixture
def grafana() -> Iterator[tuple[FakeGrafana, str]]:
    fake = FakeGrafana()

    class Handler(BaseHTTPRequestHandler):
        def _serve(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            if self.headers.get("Authorization"):
                fake.auth_headers.add(self.headers["Authorization"])
            status, payload = fake.handle(self.command, self.path, json.loads(raw) if raw else None)
            data = json.dumps(payload).encode() if payload is not None else b""
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _serve  # noqa: N815 (http.server names)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
    )
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def dashboards(tmp_path: Path) -> Path:
    for uid in ("one", "two", "three"):
        (tmp_path / f"{uid}.json").write_text(json.dumps({"uid": uid, "title": uid, "panels": []}))
    return tmp_path


def _event(url: str, request_type: str, uids: list[str], **extra: Any) -> dict[str, Any]:
    props = {
        "WorkspaceId": WORKSPACE,
        "GrafanaEndpoint": url,
        "ServiceAccountName": "fm-provisioner",
        "TokenSecondsToLive": 300,
        "PrometheusUrl": "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1/",
        "PrometheusRegion": "us-east-1",
        "PrometheusDataSourceUid": "fm-amp",
        "CloudWatchDataSourceUid": "fm-cloudwatch",
        "FolderUid": "fm",
        "FolderTitle": "FM",
        "DashboardFiles": [f"{u}.json" for u in uids],
        "DashboardUids": uids,
        "MaxAttempts": 3,
        "RetryBaseDelaySeconds": 0,
    }
    props.update(extra.pop("props", {}))
    event = {
        "RequestType": request_type,
        "ResourceProperties": props,
        "StackId": "arn:aws:cloudformation:us-east-1:111122223333:stack/s/1",
        "RequestId": "req-1",
        "LogicalResourceId": "Dashboards",
        "ResponseURL": f"{url}/cfn-response",
    }
    event.update(extra)
    return event


def _client(*, existing_account: bool, delete_account: bool = False) -> tuple[Any, Stubber]:
    client = boto3.client(
        "grafana", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    stub = Stubber(client)
    accounts = (
        [
            {
                "id": ACCOUNT_ID,
                "name": "fm-provisioner",
                "isDisabled": "false",
                "grafanaRole": "ADMIN",
            }
        ]
        if existing_account
        else [{"id": "1", "name": "someone-else", "isDisabled": "false", "grafanaRole": "VIEWER"}]
    )
    stub.add_response(
        "list_workspace_service_accounts",
        {"serviceAccounts": accounts, "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE},
    )
    if not existing_account:
        stub.add_response(
            "create_workspace_service_account",
            {
                "id": ACCOUNT_ID,
                "name": "fm-provisioner",
                "grafanaRole": "ADMIN",
                "workspaceId": WORKSPACE,
            },
            {"workspaceId": WORKSPACE, "name": "fm-provisioner", "grafanaRole": "ADMIN"},
        )
    stub.add_response(
        "create_workspace_service_account_token",
        {
            "serviceAccountToken": {"id": "tok-1", "name": "t", "key": TOKEN},
            "serviceAccountId": ACCOUNT_ID,
            "workspaceId": WORKSPACE,
        },
        {
            "workspaceId": WORKSPACE,
            "serviceAccountId": ACCOUNT_ID,
            "name": ANY,
            "secondsToLive": 300,
        },
    )
    stub.add_response(
        "delete_workspace_service_account_token",
        {"tokenId": "tok-1", "serviceAccountId": ACCOUNT_ID, "workspaceId": WORKSPACE},
        {"workspaceId": WORKSPACE, "serviceAccountId": ACCOUNT_ID, "tokenId": "tok-1"},
    )
    if delete_account:
        stub.add_response(
            "delete_workspace_service_account",
            {"serviceAccountId": ACCOUNT_ID, "workspaceId": WORKSPACE},
            {"workspaceId": WORKSPACE, "serviceAccountId": ACCOUNT_ID},
        )
    stub.activate()
    return client, stub


def test_create_provisions_data_sources_folder_and_dashboards(
    grafana: tuple[FakeGrafana, str], dashboards: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = grafana
    client, stub = _client(existing_account=False)
    caplog.set_level(logging.DEBUG)
    physical_id, data = provisioner.provision(
        _event(url, "Create", ["one", "two"]), client, dashboards
    )
    stub.assert_no_pending_responses()  # token created AND deleted
    assert physical_id == WORKSPACE
    assert data == {"FolderUid": "fm", "DashboardCount": "2"}
    assert set(fake.dashboards) == {"one", "two"}
    assert all(d["folderUid"] == "fm" for d in fake.dashboards.values())
    amp = fake.data_sources["fm-amp"]
    assert amp["type"] == "prometheus"
    assert amp["jsonData"] == {
        "httpMethod": "POST",
        "sigV4Auth": True,
        "sigV4AuthType": "ec2_iam_role",
        "sigV4Region": "us-east-1",
    }
    assert amp["url"] == "https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1"
    assert fake.data_sources["fm-cloudwatch"]["type"] == "cloudwatch"
    assert fake.folders["fm"]["title"] == "FM"
    assert fake.auth_headers == {f"Bearer {TOKEN}"}
    assert TOKEN not in caplog.text


def test_update_upserts_and_deletes_dashboards_no_longer_listed(
    grafana: tuple[FakeGrafana, str], dashboards: Path
) -> None:
    fake, url = grafana
    client, _ = _client(existing_account=True)
    provisioner.provision(_event(url, "Create", ["one", "two", "three"]), client, dashboards)
    client, stub = _client(existing_account=True)
    event = _event(
        url,
        "Update",
        ["one", "three"],
        OldResourceProperties=_event(url, "Create", ["one", "two", "three"])["ResourceProperties"],
        PhysicalResourceId=WORKSPACE,
    )
    provisioner.provision(event, client, dashboards)
    stub.assert_no_pending_responses()
    assert set(fake.dashboards) == {"one", "three"}
    assert ("DELETE", "/api/dashboards/uid/two") in fake.requests
    assert ("PUT", "/api/datasources/uid/fm-amp") in fake.requests  # second run updates


def test_delete_removes_what_it_created_and_the_service_account(
    grafana: tuple[FakeGrafana, str], dashboards: Path
) -> None:
    fake, url = grafana
    client, _ = _client(existing_account=True)
    provisioner.provision(_event(url, "Create", ["one", "two"]), client, dashboards)
    client, stub = _client(existing_account=True, delete_account=True)
    event = _event(url, "Delete", ["one", "two"], PhysicalResourceId=WORKSPACE)
    physical_id, _ = provisioner.provision(event, client, dashboards)
    stub.assert_no_pending_responses()
    assert physical_id == WORKSPACE
    assert fake.dashboards == {} and fake.folders == {} and fake.data_sources == {}


def test_delete_with_retain_touches_nothing(grafana: tuple[FakeGrafana, str]) -> None:
    fake, url = grafana
    client = boto3.client(
        "grafana", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    stub = Stubber(client)
    stub.activate()  # any AWS call would fail: none is expected
    event = _event(url, "Delete", ["one"], props={"OnDelete": "RETAIN"}, PhysicalResourceId="p")
    assert provisioner.provision(event, client) == ("p", {})
    assert fake.requests == []


def test_retries_on_503_then_succeeds(grafana: tuple[FakeGrafana, str], dashboards: Path) -> None:
    fake, url = grafana
    fake.fail_next = [503, 429]
    client, stub = _client(existing_account=True)
    provisioner.provision(_event(url, "Create", ["one"]), client, dashboards)
    stub.assert_no_pending_responses()
    assert set(fake.dashboards) == {"one"}
    first_three = fake.requests[:3]
    assert first_three == [("GET", "/api/datasources/uid/fm-amp")] * 3


def test_gives_up_after_max_attempts_and_still_deletes_the_token(
    grafana: tuple[FakeGrafana, str], dashboards: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fake, url = grafana
    fake.fail_next = [503] * 10
    client, stub = _client(existing_account=True)
    caplog.set_level(logging.DEBUG)
    with pytest.raises(
        provisioner.GrafanaApiError,
        match=r"GET /api/datasources/uid/fm-amp "
        r"failed: HTTP 503: gave up after 3 attempts",
    ):
        provisioner.provision(_event(url, "Create", ["one"]), client, dashboards)
    stub.assert_no_pending_responses()  # the token was deleted despite the failure
    assert len(fake.requests) == 3
    assert TOKEN not in caplog.text


def test_client_error_is_not_retried(grafana: tuple[FakeGrafana, str], dashboards: Path) -> None:
    fake, url = grafana
    fake.fail_next = [403]
    client, stub = _client(existing_account=True)
    with pytest.raises(provisioner.GrafanaApiError, match="HTTP 403"):
        provisioner.provision(_event(url, "Create", ["one"]), client, dashboards)
    stub.assert_no_pending_responses()
    assert len(fake.requests) == 1


def test_connection_errors_are_retried_then_reported(dashboards: Path) -> None:
    api = provisioner.GrafanaApi("http://127.0.0.1:9", TOKEN, max_attempts=2, base_delay_seconds=0)
    with pytest.raises(provisioner.GrafanaApiError, match="connection error") as raised:
        api.request("GET", "/api/health")
    assert TOKEN not in str(raised.value)


def test_handler_reports_failure_to_cloudformation_without_the_token(
    grafana: tuple[FakeGrafana, str],
    dashboards: Path,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fake, url = grafana
    fake.fail_next = [500] * 10
    monkeypatch.setattr(provisioner, "DASHBOARD_DIR", dashboards)
    client, stub = _client(existing_account=True)
    caplog.set_level(logging.DEBUG)
    provisioner.handler(_event(url, "Create", ["one"]), None, client=client)
    stub.assert_no_pending_responses()
    (response,) = fake.cfn_responses
    assert response["Status"] == "FAILED"
    assert "HTTP 500" in response["Reason"]
    assert response["RequestId"] == "req-1" and response["LogicalResourceId"] == "Dashboards"
    assert TOKEN not in caplog.text and TOKEN not in json.dumps(response)


def test_handler_reports_success(
    grafana: tuple[FakeGrafana, str], dashboards: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = grafana
    client, _ = _client(existing_account=True)
    event = _event(url, "Create", ["one"])
    monkeypatch.setattr(provisioner, "DASHBOARD_DIR", dashboards)
    provisioner.handler(event, None, client=client)
    (response,) = fake.cfn_responses
    assert response["Status"] == "SUCCESS"
    assert response["PhysicalResourceId"] == WORKSPACE


def test_new_folder_is_an_update_that_keeps_data_sources_and_drops_the_old_folder(
    grafana: tuple[FakeGrafana, str], dashboards: Path
) -> None:
    fake, url = grafana
    client, _ = _client(existing_account=True)
    provisioner.provision(_event(url, "Create", ["one"]), client, dashboards)
    client, stub = _client(existing_account=True)
    event = _event(
        url,
        "Update",
        ["one"],
        props={"FolderUid": "fm-new"},
        OldResourceProperties=_event(url, "Create", ["one"])["ResourceProperties"],
        PhysicalResourceId=WORKSPACE,
    )
    physical_id, _ = provisioner.provision(event, client, dashboards)
    stub.assert_no_pending_responses()
    # Same physical id: CloudFormation sends no clean-up Delete for the old folder's resource.
    assert physical_id == WORKSPACE
    assert set(fake.folders) == {"fm-new"}
    assert ("DELETE", "/api/datasources/uid/fm-amp") not in fake.requests


def test_retries_stop_at_the_deadline_with_time_left_for_the_lambda() -> None:
    """Every call of one event shares a deadline: the backoff never sleeps past it, so the
    handler can still delete its token and answer CloudFormation within the Lambda timeout."""
    now = [0.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        now[0] += seconds

    api = provisioner.GrafanaApi(
        "http://127.0.0.1:9",
        TOKEN,
        max_attempts=20,
        base_delay_seconds=4,
        sleep=sleep,
        deadline=30.0,
        clock=lambda: now[0],
    )
    with pytest.raises(provisioner.GrafanaApiError):
        api.request("GET", "/api/health")
    assert slept == [4, 8, 16] and now[0] < 30.0  # a 32 s wait would pass the deadline


def test_handler_budget_leaves_a_margin_of_the_lambda_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, float | None] = {}

    def fake_provision(event: Any, client: Any, deadline: float | None = None) -> Any:
        seen["deadline"] = deadline
        return "ws-1", {}

    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 300_000

    monkeypatch.setattr(provisioner, "provision", fake_provision)
    monkeypatch.setattr(provisioner, "send_response", lambda *a, **k: None)
    monkeypatch.setattr(provisioner.time, "monotonic", lambda: 1000.0)
    provisioner.handler({"ResourceProperties": {}}, Context(), client=object())
    assert seen["deadline"] == 1000.0 + 300 - provisioner.DEADLINE_MARGIN_SECONDS
    from fm_constructs.observability import dashboards

    assert dashboards.PROVISIONER_TIMEOUT.to_seconds() == 300
