"""The stacks' CloudFormation outputs: what a user reads after ``cdk deploy``."""

from __future__ import annotations

from aws_cdk import CfnOutput
from constructs import Construct


def output(scope: Construct, construct_id: str, value: str, description: str | None = None) -> None:
    """The output ``construct_id`` of ``scope``'s stack, with what to do with it."""
    CfnOutput(scope, construct_id, value=value, description=description)
