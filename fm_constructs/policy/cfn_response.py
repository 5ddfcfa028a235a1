"""The answer a CloudFormation custom resource handler of this library sends back.

CloudFormation waits for one PUT to the event's pre-signed ``ResponseURL``; every handler of
this library (the Grafana provisioner, the VPC teardown guard) answers the same way. This
module is shipped beside each handler in its Lambda package (see
:mod:`fm_constructs.policy.handler_asset`), so it uses the Python standard library only.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Mapping
from typing import Any

LOGGER = logging.getLogger("cfn_response")
LOGGER.setLevel(logging.INFO)
HTTP_TIMEOUT_SECONDS = 20


def send_response(
    event: Mapping[str, Any],
    status: str,
    physical_id: str,
    *,
    reason: str,
    data: Mapping[str, str] | None = None,
) -> None:
    """PUT the custom resource result (``SUCCESS`` or ``FAILED``) to the event's ResponseURL."""
    body = json.dumps(
        {
            "Status": status,
            "Reason": reason,
            "PhysicalResourceId": physical_id,
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "NoEcho": False,
            "Data": dict(data or {}),
        }
    ).encode()
    request = urllib.request.Request(
        event["ResponseURL"],
        data=body,
        method="PUT",
        headers={"Content-Type": "", "Content-Length": str(len(body))},
    )
    with urllib.request.urlopen(request, timeout=HTTP_TIMEOUT_SECONDS) as response:
        LOGGER.info("CloudFormation response %s sent: HTTP %s", status, response.status)
