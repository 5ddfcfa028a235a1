"""One customer-managed KMS key per stack for its CloudWatch Logs log groups.

CloudWatch Logs encrypts a log group with a customer key only when the key policy lets the
regional Logs service principal use it, limited by the ``aws:logs:arn`` encryption context to
this account's log groups in this Region (CloudWatch Logs User Guide, "Encrypt log data in
CloudWatch Logs using AWS KMS"). Every construct that creates a log group does it with
:func:`encrypted_log_group` (or passes :func:`logs_encryption_key` as ``encryption_key``); a
unit test checks that every log group of every synthesized template has a ``KmsKeyId``. Log
groups created inside aws-cdk-lib (the kubectl provider's and bucket deployments' function
logs) are reached by the :class:`EncryptLogGroups` aspect, which
:func:`fm_constructs.policy.enable_nag` applies.
"""

from __future__ import annotations

import jsii
from aws_cdk import IAspect, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

#: Construct id of the key at the root of each stack (a contract: it fixes the logical id).
LOGS_KEY_ID = "LogsKey"


def logs_key_statement(stack: Stack) -> iam.PolicyStatement:
    """The key-policy statement CloudWatch Logs needs, for this account and Region only."""
    return iam.PolicyStatement(
        sid="AllowCloudWatchLogsOfThisAccount",
        principals=[iam.ServicePrincipal(f"logs.{stack.region}.amazonaws.com")],
        actions=[
            "kms:Encrypt*",
            "kms:Decrypt*",
            "kms:ReEncrypt*",
            "kms:GenerateDataKey*",
            "kms:Describe*",
        ],
        resources=["*"],
        conditions={
            "ArnLike": {
                "kms:EncryptionContext:aws:logs:arn": (
                    f"arn:{stack.partition}:logs:{stack.region}:{stack.account}:log-group:*"
                )
            }
        },
    )


def logs_encryption_key(scope: IConstruct) -> kms.IKey:
    """The stack's log-group key, created on first use (rotating, retained like every key:
    retained log data stays readable)."""
    stack = Stack.of(scope)
    existing = stack.node.try_find_child(LOGS_KEY_ID)
    if isinstance(existing, kms.Key):
        return existing
    key = kms.Key(
        stack,
        LOGS_KEY_ID,
        description=f"CloudWatch Logs log groups of stack {stack.stack_name}",
        enable_key_rotation=True,
        removal_policy=RemovalPolicy.RETAIN,
    )
    key.add_to_resource_policy(logs_key_statement(stack))
    return key


def encrypted_log_group(
    scope: Construct,
    construct_id: str,
    *,
    retention: logs.RetentionDays,
    removal_policy: RemovalPolicy,
) -> logs.LogGroup:
    """Log group ``construct_id`` in ``scope``, encrypted with the stack's logs key: the one
    way this library's constructs create their log groups."""
    return logs.LogGroup(
        scope,
        construct_id,
        retention=retention,
        encryption_key=logs_encryption_key(scope),
        removal_policy=removal_policy,
    )


@jsii.implements(IAspect)
class EncryptLogGroups:
    """Give every ``AWS::Logs::LogGroup`` without a key its stack's logs key (log groups that
    aws-cdk-lib creates for its own provider functions take no key option)."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, logs.CfnLogGroup) and node.kms_key_id is None:
            node.kms_key_id = logs_encryption_key(node).key_arn
