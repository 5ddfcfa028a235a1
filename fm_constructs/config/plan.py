"""The profile planned once: every input the plan reads, gathered from the profile into one
:class:`~fm_constructs.planning.deployment_plan.DeploymentRequest` (:func:`deployment_request`),
and the plan of its largest deployment, subnets and AWS limit usages
(:func:`deployment_plan`). The profile's scale check and its deployment options both read that
one plan. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from fm_constructs.config.limits import limit_request
from fm_constructs.config.model import Profile
from fm_constructs.config.subnet_demand import subnet_request
from fm_constructs.planning.deployment_plan import (
    DeploymentPlan,
    DeploymentRequest,
    plan_deployment,
)


def deployment_request(profile: Profile) -> DeploymentRequest:
    """What the plan of ``profile`` reads: its subnet request, its limit request and its
    pod networking."""
    return DeploymentRequest(
        subnets=subnet_request(profile),
        limits=limit_request(profile),
        networking=profile.platform.pod_networking,
    )


def deployment_plan(profile: Profile) -> DeploymentPlan:
    """The largest deployment of ``profile`` planned: subnets, then the limits they use."""
    request = deployment_request(profile)
    return plan_deployment(request)
