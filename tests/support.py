"""Test helpers: synthesize a construct under test inside a stack with cdk-nag enabled."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from fm_constructs.policy import enable_nag

TEST_ENV = cdk.Environment(account="111122223333", region="us-east-1")


def synth_stack(build: Callable[[cdk.Stack], Any], *, nag: bool = True) -> Template:
    """Build constructs into a fresh stack via ``build(stack)`` and return its template.

    With ``nag`` the AwsSolutions pack runs and any unacknowledged finding fails the test.
    """
    app = cdk.App()
    stack = cdk.Stack(app, "TestStack", env=TEST_ENV)
    build(stack)
    if nag:
        enable_nag(app)
    app.synth()
    return Template.from_stack(stack)
