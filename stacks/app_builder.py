"""Compose the stacks of one deployment from a validated profile."""

from __future__ import annotations

from dataclasses import dataclass

import aws_cdk as cdk

from fm_constructs.config import Profile
from stacks.platform_stack import PlatformStack


@dataclass(frozen=True)
class DeploymentStacks:
    """The stacks built for a profile, for tests and for callers that extend the app."""

    platform: PlatformStack

    @property
    def all(self) -> tuple[cdk.Stack, ...]:
        return (self.platform,)


def environment(profile: Profile) -> cdk.Environment:
    """The stacks' environment: the profile's region, and its account when one is given."""
    return cdk.Environment(account=profile.platform.account, region=profile.platform.region)


def build_stacks(app: cdk.App, profile: Profile) -> DeploymentStacks:
    """Add every stack of ``profile`` to ``app`` (no synthesis here)."""
    name = profile.platform.name
    env = environment(profile)
    platform = PlatformStack(app, f"{name}-platform", platform=profile.platform, env=env)
    cdk.Tags.of(app).add("fm-constructs:deployment", name)
    return DeploymentStacks(platform=platform)
