"""What every stack of ``stacks/`` shares: the deployment pattern fills it in, then
:meth:`PartStack.record` keeps what the pattern built there and writes its outputs."""

from __future__ import annotations

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fm_constructs.patterns.deployment import Deployment


class PartStack(Stack):
    """A stack that holds one part of the deployment."""

    def record(self, deployment: Deployment) -> None:
        """Keep what ``deployment`` built in this stack and write its outputs (none here)."""


def output(scope: Construct, construct_id: str, value: str, description: str | None = None) -> None:
    """The output ``construct_id`` of ``scope``'s stack, with what to do with it."""
    CfnOutput(scope, construct_id, value=value, description=description)
