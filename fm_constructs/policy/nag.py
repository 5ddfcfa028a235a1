"""cdk-nag (v3, Validations plugin API) wiring.

Findings fail synthesis. Constructs acknowledge the findings they cause, at the narrowest
scope, with a reason, through :func:`acknowledge`.
"""

from __future__ import annotations

import jsii
from aws_cdk import Acknowledgment, App, Aspects, IAspect, Validations
from cdk_nag import AwsSolutionsChecks
from constructs import IConstruct

from fm_constructs.policy.checkov import CheckovHandlerAcknowledgements
from fm_constructs.policy.lambda_concurrency import LambdaConcurrencyReasons
from fm_constructs.policy.log_encryption import EncryptLogGroups


def enable_nag(app: App) -> None:
    """Run the AwsSolutions rule pack over every stack of ``app`` when it synthesizes, and
    the guard aspects (:class:`LambdaConcurrencyReasons`, :class:`EncryptLogGroups`,
    :class:`CheckovHandlerAcknowledgements`)."""
    Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    Aspects.of(app).add(
        GuardAspects(
            LambdaConcurrencyReasons(), EncryptLogGroups(), CheckovHandlerAcknowledgements()
        )
    )


@jsii.implements(IAspect)
class GuardAspects:
    """Several aspects applied in one visit of each construct, in the order given (the same
    order and effect as adding them one by one): each visit is a call from the CDK's JavaScript
    into Python, so one aspect instead of three saves two calls per construct of the app."""

    def __init__(self, *aspects: IAspect) -> None:
        self._aspects = list(aspects)

    def visit(self, node: IConstruct) -> None:
        for aspect in self._aspects:
            aspect.visit(node)


def add_guard_aspect(app: App, aspect: IAspect) -> None:
    """Add ``aspect`` to ``app``: into its :class:`GuardAspects` when that is the app's last
    aspect (each construct then visited by both in one call, in the same order as two aspects
    added one after the other), else as an aspect of its own."""
    applied = Aspects.of(app).all
    last = applied[-1] if applied else None
    if isinstance(last, GuardAspects):
        last._aspects.append(aspect)
    else:
        Aspects.of(app).add(aspect)


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding (``"AwsSolutions-IAM5[Resource::*]"`` or a bare
    rule id) on ``scope`` and its children, recording why it is acceptable."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule_id} needs a reason")
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
