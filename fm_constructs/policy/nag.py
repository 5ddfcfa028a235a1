"""cdk-nag (v3, Validations plugin API) wiring.

Findings fail synthesis. Constructs acknowledge the findings they cause, at the narrowest
scope, with a reason, through :func:`acknowledge`.
"""

from __future__ import annotations

from aws_cdk import Acknowledgment, App, Aspects, Validations
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
    Aspects.of(app).add(LambdaConcurrencyReasons())
    Aspects.of(app).add(EncryptLogGroups())
    Aspects.of(app).add(CheckovHandlerAcknowledgements())


def acknowledge(scope: IConstruct, rule_id: str, reason: str) -> None:
    """Acknowledge one AwsSolutions finding (``"AwsSolutions-IAM5[Resource::*]"`` or a bare
    rule id) on ``scope`` and its children, recording why it is acceptable."""
    if not reason.strip():
        raise ValueError(f"acknowledging {rule_id} needs a reason")
    Validations.of(scope).acknowledge(Acknowledgment(id=rule_id, reason=reason))
