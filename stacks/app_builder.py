"""Compose the stacks of one deployment from a validated profile."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk

from fm_constructs.config import Profile
from fm_constructs.config.rules import check_ip_budget_of
from fm_constructs.errors import FmValidationError
from stacks.platform_stack import PlatformStack
from stacks.workload_stack import WorkloadStack


@dataclass(frozen=True)
class DeploymentStacks:
    """The stacks built for a profile, for tests and for callers that extend the app."""

    platform: PlatformStack
    workloads: dict[str, WorkloadStack]

    @property
    def all(self) -> tuple[cdk.Stack, ...]:
        return (self.platform, *self.workloads.values())


def create_app(*, outdir: str | None = None, context: dict[str, Any] | None = None) -> cdk.App:
    """The CDK app every entry point uses (``cdk synth``, tests, bench).

    aws-cdk-lib's built-in CloudFormation validation is off unless the ``validate`` context value
    is ``true`` (``cdk synth -c validate=true``): it costs about 2.5 s per synth and repeats what
    ``make test`` already checks with cfn-lint over every template of every profile.
    """
    cli_context = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
    validate = {**cli_context, **(context or {})}.get("validate", False)
    return cdk.App(
        outdir=outdir,
        context=context,
        builtin_cloud_formation_validation=str(validate).lower() == "true",
    )


def environment(profile: Profile) -> cdk.Environment:
    """The stacks' environment: the profile's region, and its account when one is given."""
    return cdk.Environment(account=profile.platform.account, region=profile.platform.region)


def build_stacks(app: cdk.App, profile: Profile) -> DeploymentStacks:
    """Add every stack of ``profile`` to ``app`` (no synthesis here).

    Workload stacks depend on the platform stack only, never on each other, so
    ``cdk deploy --all --concurrency 4`` creates them side by side.
    """
    ip_problems = check_ip_budget_of(profile)
    if ip_problems:
        raise FmValidationError(ip_problems, context=f"profile {profile.source}")
    name = profile.platform.name
    env = environment(profile)
    platform = PlatformStack(app, f"{name}-platform", platform=profile.platform, env=env)
    subnet = platform.network.private_subnet(profile.platform.availability_zone)
    workloads: dict[str, WorkloadStack] = {}
    for workload in profile.enabled_workloads:
        shared = None
        if workload.storage.reuse_pretraining:
            shared = workloads["pretraining"].file_system
        workloads[workload.name] = WorkloadStack(
            app,
            f"{name}-{workload.name.replace('_', '-')}",
            workload=workload,
            platform=profile.platform,
            vpc=platform.vpc,
            subnet=subnet,
            data_bucket=platform.data,
            observability=platform.observability,
            shared_file_system=shared,
            env=env,
        )
    cdk.Tags.of(app).add("fm-constructs:deployment", name)
    return DeploymentStacks(platform=platform, workloads=workloads)
