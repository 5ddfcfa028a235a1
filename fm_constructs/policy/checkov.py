"""checkov acknowledgements, written into the template at the resource they concern.

checkov (3.x) reads a CloudFormation resource's ``Metadata.checkov.skip`` list of ``{id,
comment}`` and reports those checks as skipped with the comment instead of failed
(``checkov/cloudformation/context_parser.py``, ``collect_skip_comments``). A construct that
causes a finding acknowledges it where it creates the resource, with its reason, through
:func:`acknowledge_checkov`; the custom-resource handlers aws-cdk-lib creates get theirs from
:class:`CheckovHandlerAcknowledgements`, applied to whole apps by
:func:`fm_constructs.policy.enable_nag`.
"""

from __future__ import annotations

from typing import Any

import jsii
from aws_cdk import CfnResource, IAspect
from aws_cdk import aws_lambda as lambda_
from constructs import IConstruct

from fm_constructs.policy.lambda_concurrency import (
    CUSTOM_RESOURCE_HANDLER_REASON,
    is_cdk_handler_function,
    is_lambda_function,
)
from fm_constructs.policy.lambda_concurrency import METADATA_KEY as CONCURRENCY_KEY

METADATA_KEY = "checkov"

#: What checkov asks of a Lambda function and why a CloudFormation custom-resource handler
#: (ours or aws-cdk-lib's) does without it: check id -> reason.
HANDLER_REASONS: dict[str, str] = {
    "CKV_AWS_115": "CloudFormation custom-resource handler, invoked only during stack "
    "operations; a reserved concurrency would take executions from the account's pool and "
    "bound nothing.",
    "CKV_AWS_116": "A custom-resource handler answers CloudFormation through the pre-signed "
    "response URL or CloudFormation gives up at its timeout; an event parked in a dead-letter "
    "queue could no longer be answered.",
    "CKV_AWS_117": "The handler calls only regional AWS APIs; inside the VPC it would need "
    "interface endpoints or NAT for nothing it reaches there.",
    "CKV_AWS_173": "Its environment holds no secret (ARNs, paths, flags); Lambda encrypts it "
    "at rest with its AWS managed key.",
}


def _resource(scope: IConstruct) -> CfnResource:
    if isinstance(scope, CfnResource):
        return scope
    child = scope.node.default_child
    if not isinstance(child, CfnResource):
        raise TypeError(f"{scope.node.path}: no CloudFormation resource to acknowledge on")
    return child


def acknowledge_checkov(scope: IConstruct, check_id: str, reason: str) -> None:
    """Records on ``scope``'s CloudFormation resource (itself, or its default child) that
    checkov's ``check_id`` is acceptable there, and why."""
    if not reason.strip():
        raise ValueError(f"acknowledging {check_id} needs a reason")
    resource = _resource(scope)
    entry: dict[str, Any] = resource.get_metadata(METADATA_KEY) or {}
    skips = [s for s in entry.get("skip", []) if s.get("id") != check_id]
    skips.append({"id": check_id, "comment": reason})
    resource.add_metadata(METADATA_KEY, {**entry, "skip": skips})


def acknowledge_default_policy(role: IConstruct, check_id: str, reason: str) -> None:
    """Acknowledges ``check_id`` on the default policy of ``role`` (the policy that
    ``add_to_principal_policy`` creates), where the statement it concerns lives."""
    policy = role.node.try_find_child("DefaultPolicy")
    if policy is None:
        raise ValueError(f"{role.node.path} has no default policy to acknowledge {check_id} on")
    acknowledge_checkov(policy, check_id, reason)


def acknowledge_handler(function: CfnResource) -> None:
    """The checks of :data:`HANDLER_REASONS` that apply to one custom-resource handler
    function: not CKV_AWS_117 for a handler placed in the VPC, not CKV_AWS_173 for one without
    environment variables. (CDK's own providers, ``CustomResourceProvider``, are plain
    CfnResources with neither.)"""
    in_vpc = isinstance(function, lambda_.CfnFunction) and function.vpc_config is not None
    environment = isinstance(function, lambda_.CfnFunction) and function.environment is not None
    passes = {"CKV_AWS_117": in_vpc, "CKV_AWS_173": not environment}
    for check_id, reason in HANDLER_REASONS.items():
        if not passes.get(check_id, False):
            acknowledge_checkov(function, check_id, reason)


@jsii.implements(IAspect)
class CheckovHandlerAcknowledgements:
    """Acknowledges :data:`HANDLER_REASONS` on every custom-resource handler function: this
    library's (:func:`fm_constructs.policy.handler_function.handler_function` marks them with
    the reserved-concurrency reason) and aws-cdk-lib's (found by the construct paths of
    :func:`fm_constructs.policy.lambda_concurrency.is_cdk_handler_function`; the project
    can only acknowledge those: their code, role and settings belong to aws-cdk-lib). A handler
    that already carries checkov metadata is left as its owner wrote it."""

    def visit(self, node: IConstruct) -> None:
        if not is_lambda_function(node):
            return
        ours = node.get_metadata(CONCURRENCY_KEY) == CUSTOM_RESOURCE_HANDLER_REASON
        if not ours and not is_cdk_handler_function(node):
            return
        if node.get_metadata(METADATA_KEY) is not None:
            return
        acknowledge_handler(node)
