"""CloudFormation custom resource: stop a VPC's deletion while retained resources still use it.

File systems are retained when their stack is deleted, and so is their security group (the
file system keeps using it). Their network interfaces stay in the VPC's subnet, so
CloudFormation cannot delete the subnet or the VPC: after retrying for a long time it reports
only that they "have dependencies". This resource depends on the VPC and its subnets, so
CloudFormation deletes it first. On Delete it lists what still lives in the VPC and was not
created by the VPC's own stack:

* FSx file systems whose ``VpcId`` is the VPC (``fsx:DescribeFileSystems``);
* security groups in the VPC other than its default group and the stack's own
  (``ec2:DescribeSecurityGroups``, by the ``aws:cloudformation:stack-name`` tag).

If there are any, it answers FAILED with a reason that names each one and says what to do
first (delete the file systems after their exports finished, then the groups, then run the
teardown again); the stack stops in DELETE_FAILED with the VPC intact, and the next delete
retries this check. Otherwise, and on Create and Update, it answers SUCCESS. An error while
listing (a missing permission, a throttled call) is logged and answered SUCCESS, so the check
can never make a stack impossible to delete. Python standard library and boto3 only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import boto3

if TYPE_CHECKING or __package__:  # the source tree (tests, type checks)
    from fm_constructs.policy import cfn_response
else:  # the Lambda package, which ships cfn_response.py beside this file
    import cfn_response

LOGGER = logging.getLogger("teardown_guard")
LOGGER.setLevel(logging.INFO)
#: CloudFormation shows at most this much of a reason (the whole response must stay < 4 KiB).
MAX_REASON = 3000
STACK_TAG = "aws:cloudformation:stack-name"
DOCS = "docs/storage.md, Tear down"


def _tag(tags: Any, key: str) -> str | None:
    for tag in tags or ():
        if tag.get("Key") == key:
            return str(tag.get("Value"))
    return None


def file_systems_in(fsx: Any, vpc_id: str) -> list[dict[str, Any]]:
    """Every FSx file system of the account and region whose network interfaces are in
    ``vpc_id``."""
    found = []
    for page in fsx.get_paginator("describe_file_systems").paginate():
        for file_system in page.get("FileSystems", []):
            if file_system.get("VpcId") == vpc_id:
                found.append(file_system)
    return found


def foreign_security_groups(ec2: Any, vpc_id: str, stack_name: str) -> list[dict[str, Any]]:
    """Security groups in ``vpc_id`` that neither are its default group nor belong to
    ``stack_name`` (CloudFormation deletes those itself)."""
    found = []
    paginator = ec2.get_paginator("describe_security_groups")
    for page in paginator.paginate(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}]):
        for group in page.get("SecurityGroups", []):
            if group.get("GroupName") == "default":
                continue
            if _tag(group.get("Tags"), STACK_TAG) == stack_name:
                continue
            found.append(group)
    return found


def blocking_reason(
    vpc_id: str, file_systems: list[dict[str, Any]], groups: list[dict[str, Any]]
) -> str | None:
    """What to do before the VPC can go, or None when nothing blocks it."""
    if not file_systems and not groups:
        return None
    parts = [f"VPC {vpc_id} still holds resources this stack did not create; delete them first"]
    for number, file_system in enumerate(file_systems, 1):
        fs_id = file_system.get("FileSystemId")
        owner = _tag(file_system.get("Tags"), STACK_TAG) or "no stack"
        state = file_system.get("Lifecycle", "")
        if state == "DELETING":
            parts.append(
                f"({number}) FSx {fs_id} ({owner}) is being deleted: wait until it is gone"
            )
        else:
            parts.append(
                f"({number}) FSx {fs_id} ({owner}, retained): once its exports to S3 finished, "
                f"aws fsx delete-file-system --file-system-id {fs_id}, and wait until "
                f"aws fsx describe-file-systems --file-system-ids {fs_id} says FileSystemNotFound"
            )
    for group in groups:
        group_id = group.get("GroupId")
        owner = _tag(group.get("Tags"), STACK_TAG) or "no stack"
        parts.append(
            f"security group {group_id} ({owner}): after the file systems, "
            f"aws ec2 delete-security-group --group-id {group_id}"
        )
    parts.append(f"Then destroy this stack again ({DOCS}).")
    reason = "; ".join(parts)
    if len(reason) > MAX_REASON:
        tail = f" ... (more; see {DOCS})"
        reason = reason[: MAX_REASON - len(tail)] + tail
    return reason


def check(event: Mapping[str, Any], fsx: Any, ec2: Any) -> str | None:
    """The reason the VPC cannot be deleted yet, for a Delete event; None otherwise."""
    if event.get("RequestType") != "Delete":
        return None
    props = event.get("ResourceProperties", {})
    vpc_id = str(props["VpcId"])
    stack_name = str(props["StackName"])
    return blocking_reason(
        vpc_id, file_systems_in(fsx, vpc_id), foreign_security_groups(ec2, vpc_id, stack_name)
    )


def answer(event: Mapping[str, Any], status: str, reason: str) -> None:
    """Answers CloudFormation for the guard (its physical id is named after the VPC)."""
    physical_id = event.get("PhysicalResourceId") or (
        f"teardown-guard-{event.get('ResourceProperties', {}).get('VpcId')}"
    )
    cfn_response.send_response(event, status, str(physical_id), reason=reason)


def handler(
    event: Mapping[str, Any], context: Any = None, fsx: Any = None, ec2: Any = None
) -> None:
    """Lambda entry point: check on Delete, then always answer CloudFormation."""
    LOGGER.info("%s %s", event.get("RequestType"), event.get("LogicalResourceId"))
    region = os.environ.get("AWS_REGION")
    try:
        reason = check(
            event,
            fsx or boto3.client("fsx", region_name=region),
            ec2 or boto3.client("ec2", region_name=region),
        )
    except Exception as error:  # never make the stack undeletable
        LOGGER.error("could not list what is left in the VPC, letting the delete go on: %s", error)
        reason = None
    if reason:
        LOGGER.error("%s", reason)
        answer(event, "FAILED", reason)
        return
    answer(event, "SUCCESS", "VPC holds no retained file systems or foreign groups")
