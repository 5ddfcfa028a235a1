"""The Lambda function behind one of this library's CloudFormation custom resources.

Every such handler needs the same things to pass the stacks' floors: its own log group,
encrypted with the logs key and removed with the stack (it holds only deploy-time output); a
role that may write to that log group and nothing else until the caller adds what the handler
calls; the reserved-concurrency reason of a deploy-time handler (see
:mod:`fm_constructs.policy.lambda_concurrency`); and no ``DependsOn`` on the role, which the
function already references by ``GetAtt`` (cfn-lint W3005). The children keep the ids
``FunctionLogs``, ``FunctionRole`` and ``Function`` in the caller's scope, so logical ids do not
depend on this helper.
"""

from __future__ import annotations

from dataclasses import dataclass

from aws_cdk import Duration, RemovalPolicy
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from fm_constructs.policy.lambda_concurrency import CUSTOM_RESOURCE_HANDLER_REASON, METADATA_KEY
from fm_constructs.policy.log_encryption import encrypted_log_group


@dataclass(frozen=True)
class HandlerFunction:
    """The parts :func:`handler_function` creates."""

    log_group: logs.LogGroup
    role: iam.Role
    function: lambda_.Function


def handler_function(
    scope: Construct,
    *,
    role_description: str,
    description: str,
    runtime: lambda_.Runtime,
    code: lambda_.Code,
    timeout: Duration,
    memory_size: int,
    log_retention: logs.RetentionDays,
) -> HandlerFunction:
    """Creates a custom-resource handler (``handler.handler`` in ``code``) in ``scope``."""
    log_group = encrypted_log_group(
        scope, "FunctionLogs", retention=log_retention, removal_policy=RemovalPolicy.DESTROY
    )
    role = iam.Role(
        scope,
        "FunctionRole",
        description=role_description,
        assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
    )
    role.add_to_policy(
        iam.PolicyStatement(
            sid="Logs",
            actions=["logs:CreateLogStream", "logs:PutLogEvents"],
            resources=[log_group.log_group_arn],
        )
    )
    function = lambda_.Function(
        scope,
        "Function",
        runtime=runtime,
        handler="handler.handler",
        code=code,
        role=role,
        log_group=log_group,
        timeout=timeout,
        memory_size=memory_size,
        description=description,
    )
    cfn_function = function.node.default_child
    assert isinstance(cfn_function, lambda_.CfnFunction)
    cfn_function.add_metadata(METADATA_KEY, CUSTOM_RESOURCE_HANDLER_REASON)
    cfn_function.add_deletion_override("DependsOn")
    return HandlerFunction(log_group=log_group, role=role, function=function)
