"""What every stack of ``stacks/`` shares: created from its :class:`StackOptions` (name,
description, the part it holds), filled in by the deployment pattern, then
:meth:`PartStack.record` keeps what the pattern built there and writes its outputs."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fm_constructs.config.options import StackOptions
from fm_constructs.patterns.deployment import Deployment


class PartStack(Stack):
    """A stack that holds one part of the deployment (``part``: its cluster key or workload
    name, empty for the platform's stacks)."""

    def __init__(self, scope: Construct, options: StackOptions, **kwargs: Any) -> None:
        super().__init__(
            scope,
            options.name,
            description=options.description,
            termination_protection=options.termination_protection,
            **kwargs,
        )
        self.part = options.part

    def record(self, deployment: Deployment) -> None:
        """Keep what ``deployment`` built in this stack and write its outputs (none here)."""


def output(scope: Construct, construct_id: str, value: str, description: str | None = None) -> None:
    """The output ``construct_id`` of ``scope``'s stack, with what to do with it."""
    CfnOutput(scope, construct_id, value=value, description=description)
