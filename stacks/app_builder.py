"""Compose the stacks of one deployment from a validated profile."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk

from fm_constructs.config import Profile
from fm_constructs.config.deployment import options_for_deployment
from fm_constructs.config.options import DeploymentOptions
from fm_constructs.config.overrides import (
    ADMIN_ROLES_CONTEXT,
    with_admin_roles,  # noqa: F401 (re-exported)
)
from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.errors import FmValidationError
from fm_constructs.patterns.deployment import Deployment
from fm_constructs.rules.pcs_ami import PCS_AMI
from stacks.cluster_stack import ClusterAddonsStack, ClusterMonitoringStack, ClusterStack
from stacks.outputs import PartStack
from stacks.platform_stack import GrafanaStack, PlatformStack
from stacks.workload_stack import PCS_AMI_CONTEXT, WorkloadComputeStack, WorkloadStack


@dataclass(frozen=True)
class DeploymentStacks:
    """The stacks built for a profile, for tests and for callers that extend the app."""

    platform: PlatformStack
    grafana: GrafanaStack | None
    clusters: dict[str, ClusterStack]
    cluster_addons: dict[str, ClusterAddonsStack]
    monitoring: dict[str, ClusterMonitoringStack]
    workloads: dict[str, WorkloadStack]
    computes: dict[str, WorkloadComputeStack]
    options: DeploymentOptions

    @property
    def all(self) -> tuple[PartStack, ...]:
        grafana = (self.grafana,) if self.grafana is not None else ()
        groups = (
            self.clusters,
            self.cluster_addons,
            self.monitoring,
            self.workloads,
            self.computes,
        )
        return (self.platform, *grafana, *(s for group in groups for s in group.values()))


def create_app(*, outdir: str | None = None, context: dict[str, Any] | None = None) -> cdk.App:
    """The CDK app every entry point uses (``cdk synth``, tests, bench). aws-cdk-lib's own
    CloudFormation validation is off unless ``cdk synth -c validate=true``: it costs about 2.5 s
    per synth and repeats what ``make test`` checks with cfn-lint over every template."""
    cli_context = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
    validate = {**cli_context, **(context or {})}.get("validate", False)
    return cdk.App(
        outdir=outdir,
        context=context,
        builtin_cloud_formation_validation=str(validate).lower() == "true",
    )


def build_stacks(app: cdk.App, profile: Profile) -> DeploymentStacks:
    """Add every stack of ``profile`` to ``app`` (no synthesis): the options of the profile as
    deployed (its scale checked, the ``admin_role_arns`` context applied), a stack for each
    part they name, each filled in by the deployment pattern. Workload stacks never depend on
    each other: ``cdk deploy --all --concurrency 4`` runs them side by side."""
    _refuse_pcs_ami_context(app)
    admins = app.node.try_get_context(ADMIN_ROLES_CONTEXT)
    options = options_for_deployment(profile, admin_roles=admins)
    p = options.platform
    env = cdk.Environment(account=p.account, region=p.region)
    grafana = GrafanaStack(app, p.grafana_stack, env=env) if p.grafana_stack else None
    platform = PlatformStack(app, p, grafana, env=env)
    clusters: dict[str, ClusterStack] = {}
    addons: dict[str, ClusterAddonsStack] = {}
    monitoring: dict[str, ClusterMonitoringStack] = {}
    for key, cluster in options.clusters.items():
        addons[key] = ClusterAddonsStack(app, cluster.addons_stack, env=env)
        clusters[key] = ClusterStack(app, cluster.stack, env=env)
        if cluster.monitoring_stack is not None:
            monitoring[key] = ClusterMonitoringStack(app, cluster.monitoring_stack, env=env)
    workloads: dict[str, WorkloadStack] = {}
    computes: dict[str, WorkloadComputeStack] = {}
    for w in options.workloads.values():
        if w.stack is not None:
            workloads[w.name] = WorkloadStack(app, w.stack, env=env)
        if w.compute_stack is not None:
            computes[w.name] = WorkloadComputeStack(app, w.compute_stack, env=env)
    stacks = DeploymentStacks(
        platform, grafana, clusters, addons, monitoring, workloads, computes, options
    )
    deployment = Deployment(options)
    parts = (platform, grafana, clusters, addons, monitoring, workloads, computes)
    deployment.build(*parts)
    for stack in stacks.all:
        stack.record(deployment)
    # Every resource is tagged with its deployment, except launch templates: a tag change
    # would make a new template version and roll every GPU node of the group.
    excluded = ["AWS::EC2::LaunchTemplate"]
    cdk.Tags.of(app).add("fm-constructs:deployment", p.name, exclude_resource_types=excluded)
    # The construct warnings the profile accepts, acknowledged in every stack (an
    # acknowledgement removes the warnings already added under its scope).
    for stack in stacks.all:
        for warning in p.accepted_warnings:
            reason = f"accepted in {p.source} (platform.accepted_warnings)"
            cdk.Annotations.of(stack).acknowledge_warning(warning, reason)
    return stacks


def _refuse_pcs_ami_context(app: cdk.App) -> None:
    """Stop a synthesis given the former ``-c pcs_ami_id`` before anything is planned or built:
    the AMI of AWS PCS nodes is pinned in the profile now."""
    value = app.node.try_get_context(PCS_AMI_CONTEXT)
    if not value:
        return
    raise FmValidationError(
        [
            Finding(
                PCS_AMI.code,
                Severity.ERROR,
                f"-c {PCS_AMI_CONTEXT}",
                value,
                "is no longer read: the AMI of AWS PCS nodes is pinned in the profile "
                "([<workload>.pcs_ami] id and region)",
                f"drop -c {PCS_AMI_CONTEXT} and run `fmc pcs-ami --config <profile> --write`",
            )
        ]
    )
