"""The cdk-nag HIPAA Security and NIST 800-53 R5 packs: wiring and the acknowledgements that
hold for a whole class of resources the stacks deploy.

Findings specific to one resource (a self-referencing security group rule, a bucket without
cross-Region replication, the NAT gateways' public subnets) are acknowledged where the
resource is created, through :func:`acknowledge_compliance`. This aspect acknowledges, on each
resource it matches and only there, the findings every member of two narrow classes shares:

* a role's own grant policy (an ``AWS::IAM::Policy`` that aws-cdk-lib creates as the
  ``DefaultPolicy`` of exactly one role, or a library policy attached to exactly one role):
  ``IAMNoInlinePolicy``;
* a CloudFormation custom-resource handler (a function whose reserved-concurrency reason
  :mod:`fm_constructs.policy.lambda_concurrency` recorded): ``LambdaConcurrency`` with that
  reason, ``LambdaDLQ`` and, when it runs outside the VPC, ``LambdaInsideVPC``.
"""

from __future__ import annotations

import jsii
from aws_cdk import Acknowledgment, App, IAspect, Stack, Validations
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from cdk_nag import HIPAASecurityChecks, NIST80053R5Checks
from constructs import IConstruct

from fm_constructs.policy.lambda_concurrency import METADATA_KEY
from fm_constructs.policy.nag import add_guard_aspect

#: Rule-id prefixes of the two packs (the same rule names appear in both).
COMPLIANCE_PACKS = ("HIPAA.Security", "NIST.800.53.R5")

GRANT_POLICY_REASON = (
    "A role's own grant policy: created with the role by aws-cdk-lib grants (or by this "
    "library for that role), attached to that one role only, changed and deleted with it; a "
    "customer managed policy would be a second, shareable object with the same statements."
)
HANDLER_DLQ_REASON = (
    "CloudFormation custom-resource handler invoked synchronously during deployments: a "
    "failure goes back to CloudFormation, which fails and rolls back the stack; there is no "
    "asynchronous event to dead-letter."
)
HANDLER_OUTSIDE_VPC_REASON = (
    "CloudFormation custom-resource handler that calls only AWS (and Grafana) public APIs over "
    "TLS with its own role; inside the VPC it would need NAT or interface endpoints and its "
    "network interfaces would hold up the deletion of the VPC's subnets."
)


def enable_compliance_packs(app: App) -> None:
    """Run the HIPAA Security and NIST 800-53 R5 packs over ``app`` too, with the class-wide
    acknowledgements of :class:`ComplianceAcknowledgements` (visited with the guard aspects of
    :func:`~fm_constructs.policy.enable_nag` when those were added just before)."""
    Validations.of(app).add_plugins(HIPAASecurityChecks(app), NIST80053R5Checks(app))
    add_guard_aspect(app, ComplianceAcknowledgements())


def acknowledge_compliance(scope: IConstruct, rule: str, reason: str) -> None:
    """Acknowledge rule ``rule`` (e.g. ``"S3BucketReplicationEnabled"``) of both packs on
    ``scope`` and its children, recording why it is acceptable."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule} needs a reason")
    Validations.of(scope).acknowledge(
        *(Acknowledgment(id=f"{pack}-{rule}", reason=reason) for pack in COMPLIANCE_PACKS)
    )


@jsii.implements(IAspect)
class ComplianceAcknowledgements:
    """Acknowledges the class-wide findings of the module docstring, resource by resource."""

    def visit(self, node: IConstruct) -> None:
        if isinstance(node, iam.CfnPolicy):
            stack = Stack.of(node)
            roles = stack.resolve(node.roles) or []
            others = (stack.resolve(node.groups) or []) + (stack.resolve(node.users) or [])
            if len(roles) == 1 and not others:
                acknowledge_compliance(node, "IAMNoInlinePolicy", GRANT_POLICY_REASON)
            return
        if not isinstance(node, lambda_.CfnFunction):
            return
        reason = node.get_metadata(METADATA_KEY)
        if not isinstance(reason, str):
            return
        acknowledge_compliance(node, "LambdaConcurrency", reason)
        acknowledge_compliance(node, "LambdaDLQ", HANDLER_DLQ_REASON)
        if node.vpc_config is None:
            acknowledge_compliance(node, "LambdaInsideVPC", HANDLER_OUTSIDE_VPC_REASON)
