"""Compose the stacks of one deployment from a validated profile."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk

from fm_constructs.config import Profile
from fm_constructs.config.options import DeploymentOptions, deployment_options
from fm_constructs.config.overrides import ADMIN_ROLES_CONTEXT, with_admin_roles
from fm_constructs.config.rules import check_scale
from fm_constructs.errors import FmValidationError
from fm_constructs.patterns.deployment import Deployment
from stacks.cluster_stack import ClusterAddonsStack, ClusterMonitoringStack, ClusterStack
from stacks.platform_stack import GrafanaStack, PlatformStack
from stacks.workload_stack import WorkloadComputeStack, WorkloadStack

__all__ = [
    "ADMIN_ROLES_CONTEXT",
    "DeploymentStacks",
    "build_stacks",
    "create_app",
    "with_admin_roles",
]


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
    def all(self) -> tuple[cdk.Stack, ...]:
        return (
            self.platform,
            *((self.grafana,) if self.grafana is not None else ()),
            *self.clusters.values(),
            *self.cluster_addons.values(),
            *self.monitoring.values(),
            *self.workloads.values(),
            *self.computes.values(),
        )


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


def build_stacks(app: cdk.App, profile: Profile) -> DeploymentStacks:
    """Add every stack of ``profile`` to ``app`` (no synthesis here): its scale checked (the
    loader did; a profile built in code may not be), the ``admin_role_arns`` context applied,
    then :func:`build_deployment` of its options."""
    ip_problems = check_scale(profile)
    if ip_problems:
        raise FmValidationError(ip_problems, context=f"profile {profile.source}")
    profile = with_admin_roles(profile, app.node.try_get_context(ADMIN_ROLES_CONTEXT))
    return build_deployment(app, deployment_options(profile))


def build_deployment(app: cdk.App, options: DeploymentOptions) -> DeploymentStacks:
    """Add the stacks of ``options`` to ``app``, each filled in by the deployment pattern.

    ``<name>-platform`` (VPC, data bucket, observability); one ``<name>-cluster`` for every
    workload on EKS (a workload with ``dedicated_cluster`` gets ``<name>-<workload>-cluster``),
    with its scraper in ``...-monitoring``; per workload ``<name>-<workload>`` (file system, or
    the HyperPod cluster) and, on EKS, ``<name>-<workload>-compute`` (node groups, namespace,
    queues). Workload stacks depend on the platform and their cluster, never on each other, so
    ``cdk deploy --all --concurrency 4`` creates them side by side.
    """
    p = options.platform
    env = cdk.Environment(account=p.account, region=p.region)
    deployment = Deployment(options)

    def name(suffix: str) -> str:
        return f"{p.name}-{suffix.replace('_', '-')}"

    grafana = GrafanaStack(app, name("grafana"), env=env) if p.grafana else None
    platform = PlatformStack(app, name("platform"), deployment=deployment, grafana=grafana, env=env)
    clusters: dict[str, ClusterStack] = {}
    addons: dict[str, ClusterAddonsStack] = {}
    monitoring: dict[str, ClusterMonitoringStack] = {}
    for key, cluster in options.clusters.items():
        suffix = cluster.stack_suffix
        addons[key] = ClusterAddonsStack(app, name(f"{suffix}-addons"), env=env)
        clusters[key] = ClusterStack(
            app, name(suffix), deployment=deployment, key=key, addons=addons[key], env=env
        )
        if cluster.scraped:
            monitoring[key] = ClusterMonitoringStack(
                app, name(f"{suffix}-monitoring"), deployment=deployment, key=key, env=env
            )
    workloads: dict[str, WorkloadStack] = {}
    computes: dict[str, WorkloadComputeStack] = {}
    for w in options.workloads.values():
        if w.has_storage_stack:
            workloads[w.name] = WorkloadStack(
                app, name(w.name), deployment=deployment, workload=w.name, env=env
            )
        if w.eks_nodes:
            computes[w.name] = WorkloadComputeStack(
                app, name(f"{w.name}-compute"), deployment=deployment, workload=w.name, env=env
            )
    # Every resource is tagged with its deployment, except launch templates: a tag change
    # would make a new template version and roll every GPU node of the group.
    cdk.Tags.of(app).add(
        "fm-constructs:deployment", p.name, exclude_resource_types=["AWS::EC2::LaunchTemplate"]
    )
    stacks = DeploymentStacks(
        platform, grafana, clusters, addons, monitoring, workloads, computes, options
    )
    # The construct warnings the profile accepts (platform.accepted_warnings), acknowledged in
    # every stack: an acknowledgement removes the warnings already added under its scope.
    for stack in stacks.all:
        for warning in p.accepted_warnings:
            cdk.Annotations.of(stack).acknowledge_warning(
                warning, f"accepted in {p.source} (platform.accepted_warnings)"
            )
    return stacks
