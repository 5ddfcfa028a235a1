"""Compose the stacks of one deployment from a validated profile."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.config import Orchestrator, Profile
from fm_constructs.config.options import (
    MAIN_POOL,
    ROLLOUT_POOL,
    DeploymentOptions,
    deployment_options,
)
from fm_constructs.config.rules import check_scale, fsx_efa_clients
from fm_constructs.errors import FmValidationError
from fm_constructs.rules import platform as platform_rules
from stacks.cluster_stack import ClusterAddonsStack, ClusterMonitoringStack, ClusterStack
from stacks.platform_stack import GrafanaStack, PlatformStack
from stacks.workload_stack import WorkloadComputeStack, WorkloadStack

#: Context value (``cdk synth -c admin_role_arns=arn:...,arn:...``) naming the IAM roles given
#: cluster-admin access, in place of ``platform.admin_role_arns`` of the profile.
ADMIN_ROLES_CONTEXT = "admin_role_arns"


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


def environment(profile: Profile) -> cdk.Environment:
    """The stacks' environment: the profile's region, and its account when one is given."""
    return cdk.Environment(account=profile.platform.account, region=profile.platform.region)


def with_admin_roles(profile: Profile, context_value: Any) -> Profile:
    """``profile`` with the admin roles of the ``admin_role_arns`` context value (a comma-
    separated string or a list, as ``-c`` and cdk.json give it) when one is set."""
    if context_value is None or context_value == "":
        return profile
    if isinstance(context_value, str):
        arns = tuple(a.strip() for a in context_value.split(",") if a.strip())
    else:
        arns = tuple(str(a) for a in context_value)
    # The rules the loader runs on platform.admin_role_arns, on the roles that replace them.
    findings = [
        *platform_rules.admin_principals(arns, key=ADMIN_ROLES_CONTEXT),
        *platform_rules.admin_accounts(arns, profile.platform.account, key=ADMIN_ROLES_CONTEXT),
    ]
    if findings:
        raise FmValidationError(findings, context=f"cdk context -c {ADMIN_ROLES_CONTEXT}")
    platform = dataclasses.replace(profile.platform, admin_role_arns=arns)
    return dataclasses.replace(profile, platform=platform)


def stack_name(profile: Profile, suffix: str) -> str:
    return f"{profile.platform.name}-{suffix.replace('_', '-')}"


def _node_group_subnets(
    workload: str, options: DeploymentOptions, subnets: list[ec2.ISubnet]
) -> dict[str, list[ec2.ISubnet]]:
    """Pool name -> the subnet of each of its managed node groups, for the pools the IP
    budget moved (in part) into node subnets of their own."""
    out: dict[str, list[ec2.ISubnet]] = {}
    for pool, demand in ((MAIN_POOL, workload), (ROLLOUT_POOL, f"{workload}.rollout")):
        indexes = options.node_group_subnets.get(demand)
        if indexes:
            out[pool] = [subnets[i] for i in indexes]
    return out


def build_stacks(app: cdk.App, profile: Profile) -> DeploymentStacks:
    """Add every stack of ``profile`` to ``app`` (no synthesis here).

    ``<name>-platform`` (VPC, data bucket, observability); one ``<name>-cluster`` for every
    workload on EKS (a workload with ``dedicated_cluster`` gets ``<name>-<workload>-cluster``),
    with its scraper in ``...-monitoring``; per workload ``<name>-<workload>`` (file system, or
    the HyperPod cluster) and, on EKS, ``<name>-<workload>-compute`` (node groups, namespace,
    queues). Workload stacks depend on the platform and their cluster, never on each other, so
    ``cdk deploy --all --concurrency 4`` creates them side by side.
    """
    ip_problems = check_scale(profile)  # the loader ran it; a profile built in code may not
    if ip_problems:
        raise FmValidationError(ip_problems, context=f"profile {profile.source}")
    profile = with_admin_roles(profile, app.node.try_get_context(ADMIN_ROLES_CONTEXT))
    env = environment(profile)
    options = deployment_options(profile)
    grafana = (
        GrafanaStack(app, stack_name(profile, "grafana"), env=env)
        if profile.platform.observability and profile.platform.grafana
        else None
    )
    platform = PlatformStack(
        app,
        stack_name(profile, "platform"),
        platform=profile.platform,
        custom_networking=options.custom_networking,
        node_subnet_cidrs=options.node_subnet_cidrs,
        grafana=grafana,
        env=env,
    )
    observability = platform.observability
    subnet = platform.network.private_subnet(profile.platform.availability_zone)
    clusters: dict[str, ClusterStack] = {}
    cluster_addons: dict[str, ClusterAddonsStack] = {}
    monitoring: dict[str, ClusterMonitoringStack] = {}
    for key, cluster_options in options.clusters.items():
        cluster_addons[key] = ClusterAddonsStack(
            app, stack_name(profile, f"{cluster_options.stack_suffix}-addons"), env=env
        )
        cluster = ClusterStack(
            app,
            stack_name(profile, cluster_options.stack_suffix),
            cluster=cluster_options,
            profile=profile,
            vpc=platform.vpc,
            scraped=observability is not None,
            addons=cluster_addons[key],
            eni_config_subnets=(
                platform.network.eni_config_subnets() if options.custom_networking else None
            ),
            prefix_delegation=options.prefix_delegation,
            env=env,
        )
        clusters[key] = cluster
        if observability is not None:
            monitoring[key] = ClusterMonitoringStack(
                app,
                stack_name(profile, f"{cluster_options.stack_suffix}-monitoring"),
                cluster=cluster,
                workspace=observability.prometheus,
                subnets=platform.vpc.private_subnets,
                env=env,
            )
    workloads: dict[str, WorkloadStack] = {}
    computes: dict[str, WorkloadComputeStack] = {}
    for workload in profile.enabled_workloads:
        workload_options = options.workloads[workload.name]
        cluster_stack = (
            clusters[workload_options.cluster] if workload_options.cluster is not None else None
        )
        shared = None
        if workload.reuses_pretraining_storage:
            shared = workloads["pretraining"].file_system
        on_eks = workload.orchestrator is Orchestrator.EKS
        owns_storage = workload.storage.enabled and shared is None
        if not on_eks or owns_storage:
            workloads[workload.name] = WorkloadStack(
                app,
                stack_name(profile, workload.name),
                workload=workload,
                platform=profile.platform,
                vpc=platform.vpc,
                subnet=subnet,
                data_bucket=platform.data,
                observability=observability,
                shared_file_system=shared,
                eks_cluster=cluster_stack.cluster
                if cluster_stack is not None and workload.orchestrator is Orchestrator.HYPERPOD_EKS
                else None,
                defer_associations=on_eks,
                file_system_efa_clients=fsx_efa_clients(profile, workload),
                env=env,
            )
        if on_eks:
            assert cluster_stack is not None
            computes[workload.name] = WorkloadComputeStack(
                app,
                stack_name(profile, f"{workload.name}-compute"),
                workload=workload,
                options=workload_options,
                platform=profile.platform,
                cluster=cluster_stack.cluster,
                max_pods_per_node=workload_options.max_pods_per_node,
                subnet=subnet,
                node_group_subnets=_node_group_subnets(
                    workload.name, options, [subnet, *platform.network.node_subnets]
                ),
                data_bucket=platform.data,
                observability=observability,
                file_system=workloads[workload.name].file_system
                if workload.name in workloads
                else shared,
                env=env,
            )
            if owns_storage:
                # The associations link the file system to S3 while the nodes start (FSx
                # creates them one by one, about six minutes); in the file-system stack they
                # would hold back the nodes. Construct path as before: same logical ids.
                file_system = workloads[workload.name].file_system
                assert file_system is not None
                file_system.add_associations(Construct(computes[workload.name], "FileSystem"))
    # Every resource is tagged with its deployment, except launch templates: a tag change
    # would make a new template version and roll every GPU node of the group.
    cdk.Tags.of(app).add(
        "fm-constructs:deployment",
        profile.platform.name,
        exclude_resource_types=["AWS::EC2::LaunchTemplate"],
    )
    deployment = DeploymentStacks(
        platform=platform,
        grafana=grafana,
        clusters=clusters,
        cluster_addons=cluster_addons,
        monitoring=monitoring,
        workloads=workloads,
        computes=computes,
        options=options,
    )
    _accept_warnings(deployment, profile)
    return deployment


def _accept_warnings(deployment: DeploymentStacks, profile: Profile) -> None:
    """Acknowledge the construct warnings the profile accepts (``platform.accepted_warnings``,
    the ``fm:...`` ids) in every stack: an acknowledgement removes the warnings already added
    under its scope (aws-cdk-lib does not look at the app's own scope for them)."""
    accepted = [w for w in profile.platform.accepted_warnings if w.startswith("fm:")]
    for stack in deployment.all:
        for warning in accepted:
            cdk.Annotations.of(stack).acknowledge_warning(
                warning, f"accepted in {profile.source} (platform.accepted_warnings)"
            )
