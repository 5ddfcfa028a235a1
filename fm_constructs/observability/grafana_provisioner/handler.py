"""CloudFormation custom resource: Grafana data sources and dashboards on an AMG workspace.

There is no CloudFormation resource for what lives *inside* Grafana, so on every deploy this
handler (Python standard library + boto3 only):

1. finds or creates the workspace service account ``ServiceAccountName`` (role ADMIN: data
   sources need it);
2. creates a token for it that expires after ``TokenSecondsToLive`` seconds (5 minutes by
   default) - never a long-lived credential;
3. through the Grafana HTTP API, upserts the Prometheus data source (SigV4 with the
   workspace role) and the CloudWatch data source, a folder, and each dashboard bundled in
   ``dashboards/`` next to this file (POST /api/dashboards/db, overwrite);
4. on Update, deletes dashboards the previous deployment listed and this one does not;
5. deletes the token in a ``finally`` block, whatever happened.

On Delete (``OnDelete`` = ``DELETE``, the default) the dashboards, the folder and the data
sources it created are removed and the service account deleted: everything here is derived
from code and recreated by the next deploy. With ``RETAIN`` they are left in place. Delete
never fails the stack: a workspace that is already gone, or an API error, is logged and
reported as success so a stack can always be deleted.

Grafana API calls are retried with exponential backoff on HTTP 429, 5xx and connection
errors, ``MaxAttempts`` times, then fail with an error naming the request. All calls of one
event share one deadline: the Lambda's remaining time less :data:`DEADLINE_MARGIN_SECONDS`
(kept for deleting the token and answering CloudFormation), so retries never outlast the
function and CloudFormation always gets an answer. The token is only
ever placed in the Authorization header; it is never logged or put in an error message.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import boto3

if TYPE_CHECKING or __package__:  # the source tree (tests, type checks)
    from fm_constructs.policy import cfn_response
else:  # the Lambda package, which ships cfn_response.py beside this file
    import cfn_response

LOGGER = logging.getLogger("grafana_provisioner")
LOGGER.setLevel(logging.INFO)
# boto3/urllib3 debug logs could echo response bodies (which carry the token): keep them quiet.
for _noisy in ("boto3", "botocore", "urllib3"):
    logging.getLogger(_noisy).setLevel(logging.WARNING)

DASHBOARD_DIR = Path(__file__).parent / "dashboards"
RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})
DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_BASE_DELAY_SECONDS = 1.0
DEFAULT_TOKEN_SECONDS = 300
HTTP_TIMEOUT_SECONDS = 20
#: Time kept back from the Lambda's remaining time for the token clean-up and the response.
DEADLINE_MARGIN_SECONDS = 30
#: Budget of one event when no Lambda context tells the remaining time (local runs, tests).
DEFAULT_BUDGET_SECONDS = 240


class GrafanaApiError(RuntimeError):
    """A Grafana HTTP API request failed (after retries when the failure was transient)."""

    def __init__(self, method: str, path: str, status: int | None, detail: str) -> None:
        self.method, self.path, self.status = method, path, status
        where = f"HTTP {status}" if status is not None else "connection error"
        super().__init__(f"Grafana API {method} {path} failed: {where}: {detail[:300]}")


class GrafanaApi:
    """Minimal Grafana HTTP API client with bounded retries."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        base_delay_seconds: float = DEFAULT_BASE_DELAY_SECONDS,
        sleep: Callable[[float], None] = time.sleep,
        deadline: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._token = token
        self._max_attempts = max(1, max_attempts)
        self._base_delay = base_delay_seconds
        self._sleep = sleep
        self._clock = clock
        self._deadline = clock() + DEFAULT_BUDGET_SECONDS if deadline is None else deadline

    def request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None
    ) -> tuple[int, Any]:
        """Send one request; return (status, parsed JSON or None). 404 is returned, not raised;
        other 4xx raise at once; 429/5xx/connection errors are retried then raised."""
        data = json.dumps(body).encode() if body is not None else None
        last_status: int | None = None
        last_detail = ""
        for attempt in range(1, self._max_attempts + 1):
            remaining = self._deadline - self._clock()
            if remaining <= 0:
                raise GrafanaApiError(
                    method, path, last_status, f"out of time after {attempt - 1} attempts"
                )
            request = urllib.request.Request(
                self._base_url + path,
                data=data,
                method=method,
                headers={
                    "Authorization": f"Bearer {self._token}",
                    "Content-Type": "application/json",
                    "Accept": "application/json",
                },
            )
            try:
                timeout = min(HTTP_TIMEOUT_SECONDS, remaining)
                with urllib.request.urlopen(request, timeout=timeout) as response:
                    status = int(response.status)
                    payload = response.read()
                LOGGER.info("%s %s -> %s", method, path, status)
                return status, json.loads(payload) if payload else None
            except urllib.error.HTTPError as error:
                status = int(error.code)
                detail = error.read().decode("utf-8", "replace")
                LOGGER.info("%s %s -> %s (attempt %s)", method, path, status, attempt)
                if status == 404:
                    return status, None
                if status not in RETRYABLE_STATUS:
                    raise GrafanaApiError(method, path, status, detail) from None
                last_status, last_detail = status, detail
            except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
                reason = getattr(error, "reason", error)
                LOGGER.info(
                    "%s %s -> connection error %s (attempt %s)", method, path, reason, attempt
                )
                last_status, last_detail = None, str(reason)
            delay = self._base_delay * 2 ** (attempt - 1)
            if attempt < self._max_attempts:
                if self._clock() + delay >= self._deadline:
                    break
                self._sleep(delay)
        raise GrafanaApiError(
            method, path, last_status, f"gave up after {self._max_attempts} attempts: {last_detail}"
        )

    # Convenience wrappers -------------------------------------------------------------

    def upsert_data_source(self, data_source: Mapping[str, Any]) -> None:
        uid = data_source["uid"]
        status, _ = self.request("GET", f"/api/datasources/uid/{uid}")
        if status == 404:
            self.request("POST", "/api/datasources", data_source)
        else:
            self.request("PUT", f"/api/datasources/uid/{uid}", data_source)

    def ensure_folder(self, uid: str, title: str) -> None:
        status, _ = self.request("GET", f"/api/folders/{uid}")
        if status == 404:
            self.request("POST", "/api/folders", {"uid": uid, "title": title})
        else:
            self.request("PUT", f"/api/folders/{uid}", {"title": title, "overwrite": True})

    def upsert_dashboard(self, dashboard: Mapping[str, Any], folder_uid: str) -> None:
        model = dict(dashboard)
        model["id"] = None  # matched by uid; a stale numeric id would make Grafana reject it
        self.request(
            "POST",
            "/api/dashboards/db",
            {
                "dashboard": model,
                "folderUid": folder_uid,
                "overwrite": True,
                "message": "Provisioned by fm-constructs",
            },
        )

    def delete(self, path: str) -> None:
        self.request("DELETE", path)


def data_sources(props: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The Prometheus (SigV4, workspace role) and CloudWatch data source definitions."""
    region = str(props["PrometheusRegion"])
    result: list[dict[str, Any]] = [
        {
            "uid": props["PrometheusDataSourceUid"],
            "name": props.get("PrometheusDataSourceName", "Amazon Managed Prometheus"),
            "type": "prometheus",
            "access": "proxy",
            "url": str(props["PrometheusUrl"]).rstrip("/"),
            "isDefault": True,
            "jsonData": {
                "httpMethod": "POST",
                "sigV4Auth": True,
                "sigV4AuthType": "ec2_iam_role",
                "sigV4Region": region,
            },
        }
    ]
    if props.get("CloudWatchDataSourceUid"):
        result.append(
            {
                "uid": props["CloudWatchDataSourceUid"],
                "name": "Amazon CloudWatch",
                "type": "cloudwatch",
                "access": "proxy",
                "jsonData": {"authType": "ec2_iam_role", "defaultRegion": region},
            }
        )
    return result


def load_dashboards(names: Sequence[str], directory: Path) -> list[dict[str, Any]]:
    """Read the bundled dashboards listed in the resource properties."""
    return [json.loads((directory / name).read_text(encoding="utf-8")) for name in names]


class ServiceAccountToken:
    """Context manager: a short-lived token of the provisioning service account.

    The token is deleted on exit, whether the body succeeded or raised.
    """

    def __init__(self, client: Any, workspace_id: str, account_name: str, seconds: int) -> None:
        self._client = client
        self._workspace_id = workspace_id
        self._account_name = account_name
        self._seconds = seconds
        self.service_account_id = ""
        self._token_id = ""

    def __enter__(self) -> str:
        self.service_account_id = find_or_create_service_account(
            self._client, self._workspace_id, self._account_name
        )
        response = self._client.create_workspace_service_account_token(
            workspaceId=self._workspace_id,
            serviceAccountId=self.service_account_id,
            name=f"{self._account_name}-{int(time.time())}",
            secondsToLive=self._seconds,
        )
        token = response["serviceAccountToken"]
        self._token_id = str(token["id"])
        LOGGER.info("created token %s (expires in %ss)", self._token_id, self._seconds)
        return str(token["key"])

    def __exit__(self, *exc: object) -> None:
        if self._token_id:
            self._client.delete_workspace_service_account_token(
                workspaceId=self._workspace_id,
                serviceAccountId=self.service_account_id,
                tokenId=self._token_id,
            )
            LOGGER.info("deleted token %s", self._token_id)


def find_or_create_service_account(client: Any, workspace_id: str, name: str) -> str:
    """Id of the service account ``name``, created (role ADMIN) when it does not exist."""
    next_token: str | None = None
    while True:
        kwargs: dict[str, Any] = {"workspaceId": workspace_id}
        if next_token:
            kwargs["nextToken"] = next_token
        page = client.list_workspace_service_accounts(**kwargs)
        for account in page.get("serviceAccounts", []):
            if account.get("name") == name:
                return str(account["id"])
        next_token = page.get("nextToken")
        if not next_token:
            break
    created = client.create_workspace_service_account(
        workspaceId=workspace_id, name=name, grafanaRole="ADMIN"
    )
    LOGGER.info("created service account %s", created["id"])
    return str(created["id"])


def _api(props: Mapping[str, Any], token: str, deadline: float | None = None) -> GrafanaApi:
    return GrafanaApi(
        f"https://{props['GrafanaEndpoint']}"
        if "://" not in str(props["GrafanaEndpoint"])
        else str(props["GrafanaEndpoint"]),
        token,
        max_attempts=int(props.get("MaxAttempts", DEFAULT_MAX_ATTEMPTS)),
        base_delay_seconds=float(props.get("RetryBaseDelaySeconds", DEFAULT_BASE_DELAY_SECONDS)),
        deadline=deadline,
    )


def provision(
    event: Mapping[str, Any],
    client: Any,
    dashboard_dir: Path | None = None,
    deadline: float | None = None,
) -> tuple[str, dict[str, str]]:
    """Handle one CloudFormation event; return (physical resource id, response data).
    ``deadline`` (``time.monotonic()`` value) bounds every Grafana call of the event."""
    props = event["ResourceProperties"]
    workspace_id = str(props["WorkspaceId"])
    folder_uid = str(props["FolderUid"])
    # One id per workspace: a new folder is an update, not a replacement, so CloudFormation
    # never sends a clean-up Delete that would remove the data sources just upserted.
    physical_id = workspace_id
    request_type = event["RequestType"]
    seconds = int(props.get("TokenSecondsToLive", DEFAULT_TOKEN_SECONDS))
    account_name = str(props["ServiceAccountName"])
    uids = [str(u) for u in props.get("DashboardUids", [])]

    if request_type == "Delete":
        if str(props.get("OnDelete", "DELETE")) == "RETAIN":
            return event.get("PhysicalResourceId", physical_id), {}
        session = ServiceAccountToken(client, workspace_id, account_name, seconds)
        try:
            with session as token:
                api = _api(props, token, deadline)
                for uid in uids:
                    api.delete(f"/api/dashboards/uid/{uid}")
                api.delete(f"/api/folders/{folder_uid}")
                for source in data_sources(props):
                    api.delete(f"/api/datasources/uid/{source['uid']}")
            client.delete_workspace_service_account(
                workspaceId=workspace_id, serviceAccountId=session.service_account_id
            )
        except Exception as error:
            LOGGER.warning("cleanup on delete incomplete, continuing: %s", error)
        return event.get("PhysicalResourceId", physical_id), {}

    names = [str(n) for n in props.get("DashboardFiles", [])]
    dashboards = load_dashboards(names, dashboard_dir or DASHBOARD_DIR)
    with ServiceAccountToken(client, workspace_id, account_name, seconds) as token:
        api = _api(props, token, deadline)
        for source in data_sources(props):
            api.upsert_data_source(source)
        api.ensure_folder(folder_uid, str(props.get("FolderTitle", folder_uid)))
        for dashboard in dashboards:
            api.upsert_dashboard(dashboard, folder_uid)
        if request_type == "Update":
            old_props = event.get("OldResourceProperties", {})
            same_workspace = str(old_props.get("WorkspaceId")) == workspace_id
            for uid in old_props.get("DashboardUids", []):
                if same_workspace and str(uid) not in uids:
                    api.delete(f"/api/dashboards/uid/{uid}")
            old_folder = str(old_props.get("FolderUid", folder_uid))
            if same_workspace and old_folder != folder_uid:
                api.delete(f"/api/folders/{old_folder}")
    return physical_id, {"FolderUid": folder_uid, "DashboardCount": str(len(dashboards))}


def send_response(
    event: Mapping[str, Any],
    status: str,
    physical_id: str,
    data: Mapping[str, str] | None = None,
    reason: str = "",
) -> None:
    """Answers CloudFormation for the provisioner (a reason is cut to 1000 characters)."""
    reason = reason[:1000] or "See the provisioner's CloudWatch log stream"
    cfn_response.send_response(event, status, physical_id, reason=reason, data=data)


def handler(event: Mapping[str, Any], context: Any = None, client: Any = None) -> None:
    """Lambda entry point: provision, then always answer CloudFormation."""
    props = event.get("ResourceProperties", {})
    fallback_id = str(event.get("PhysicalResourceId") or f"{props.get('WorkspaceId')}/failed")
    LOGGER.info(
        "%s %s (workspace %s)",
        event.get("RequestType"),
        event.get("LogicalResourceId"),
        props.get("WorkspaceId"),
    )
    deadline = None
    if context is not None and hasattr(context, "get_remaining_time_in_millis"):
        remaining = context.get_remaining_time_in_millis() / 1000
        deadline = time.monotonic() + remaining - DEADLINE_MARGIN_SECONDS
    try:
        grafana = client or boto3.client("grafana", region_name=os.environ.get("AWS_REGION"))
        physical_id, data = provision(event, grafana, deadline=deadline)
    except Exception as error:
        LOGGER.error("provisioning failed: %s", error)
        send_response(event, "FAILED", fallback_id, reason=str(error))
        return
    send_response(event, "SUCCESS", physical_id, data)
