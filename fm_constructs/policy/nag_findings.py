"""Exact cdk-nag finding ids for resources aws-cdk-lib generates (the kubectl provider).

cdk-nag matches an acknowledgment only on the exact finding id (``AwsSolutions-IAM4[Policy::
<arn>]``), and the ids of generated resources embed CloudFormation references such as logical
ids. These helpers compute them the way cdk-nag does (its ``flattenCfnReference``), so a
finding is acknowledged one by one instead of silencing a whole rule.
"""

from __future__ import annotations

import json
from typing import Any

import jsii
from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import IConstruct, IValidation

from fm_constructs.policy import acknowledge


def flatten_reference(node: Any) -> str:
    """A CloudFormation value flattened the way cdk-nag names findings
    (``{"Ref": "AWS::Partition"}`` -> ``<AWS::Partition>``, joins concatenated, anything else
    as compact JSON)."""
    if node is None:
        return ""
    if isinstance(node, str):
        return node.replace("${", "<").replace("}", ">")
    if isinstance(node, dict):
        if "Fn::Join" in node:
            delimiter, items = node["Fn::Join"]
            return str(delimiter).join(flatten_reference(item) for item in items)
        if "Fn::Sub" in node:
            return flatten_reference(node["Fn::Sub"])
        if "Fn::GetAtt" in node:
            resource, attribute = node["Fn::GetAtt"]
            return f"<{flatten_reference(resource)}.{flatten_reference(attribute)}>"
        if "Fn::ImportValue" in node:
            return flatten_reference(node["Fn::ImportValue"])
        if "Ref" in node:
            return f"<{flatten_reference(node['Ref'])}>"
    return json.dumps(node, separators=(",", ":"))


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def acknowledge_generated_iam(
    scope: IConstruct, *, managed_reason: str, wildcard_reason: str
) -> None:
    """Acknowledge, finding by finding, the AWS-managed policies (IAM4) and wildcard resources
    (IAM5) of every IAM role and policy under ``scope``.

    The findings are computed when the app synthesizes, after CDK has turned references to
    other stacks into exports (``Fn::ImportValue``), which is the form cdk-nag names them by.
    Roles and policies added under ``scope`` later are covered too.
    """
    scope.node.add_validation(_GeneratedIamAcknowledgement(scope, managed_reason, wildcard_reason))


@jsii.implements(IValidation)
class _GeneratedIamAcknowledgement:
    """Runs in CDK's validation phase (after references are resolved, before cdk-nag)."""

    def __init__(self, scope: IConstruct, managed_reason: str, wildcard_reason: str) -> None:
        self._scope = scope
        self._managed_reason = managed_reason
        self._wildcard_reason = wildcard_reason

    def validate(self) -> list[str]:
        for child in self._scope.node.find_all():
            if isinstance(child, iam.CfnRole):
                stack = Stack.of(child)
                for arn in _as_list(stack.resolve(child.managed_policy_arns)):
                    flat = flatten_reference(arn)
                    if ":iam::aws:" in flat:
                        reason = self._managed_reason
                        acknowledge(child, f"AwsSolutions-IAM4[Policy::{flat}]", reason)
            elif isinstance(child, iam.CfnPolicy):
                stack = Stack.of(child)
                document = stack.resolve(child.policy_document) or {}
                for statement in _as_list(document.get("Statement")):
                    for resource in _as_list(statement.get("Resource")):
                        flat = flatten_reference(resource)
                        if "*" in flat:
                            reason = self._wildcard_reason
                            acknowledge(child, f"AwsSolutions-IAM5[Resource::{flat}]", reason)
        return []
