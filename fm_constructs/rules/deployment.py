"""The rules of a deployment: the profile at its largest, read from its one plan, and the
values a deployment command puts in place of the profile's.

:func:`scale_problems` runs the subnet rules (:mod:`fm_constructs.rules.subnets`) on the plan's
subnets and the fixed AWS limits (:mod:`fm_constructs.rules.scale`) on its limit usages;
:func:`admin_role_problems` runs the rules of ``platform.admin_role_arns`` on the roles of
``cdk synth -c admin_role_arns=...``. The profile loader runs the first
(:func:`fm_constructs.config.rules.check_scale`); a deployment runs both on the plan it maps
to options (:func:`fm_constructs.config.overrides.check_deployment`). Floor 1: no aws_cdk
import.
"""

from __future__ import annotations

from fm_constructs.planning.deployment_plan import DeploymentPlan
from fm_constructs.profile.model import Profile
from fm_constructs.rules import platform as platform_rules
from fm_constructs.rules import scale as scale_rules
from fm_constructs.rules.findings import Finding
from fm_constructs.rules.subnets import demand_problems, planned_demand

#: Context value (``cdk synth -c admin_role_arns=arn:...,arn:...``) naming the IAM roles given
#: cluster-admin access, in place of ``platform.admin_role_arns`` of the profile.
ADMIN_ROLES_CONTEXT = "admin_role_arns"


def scale_problems(profile: Profile, plan: DeploymentPlan) -> list[Finding]:
    """Why the largest deployment of ``profile``, planned as ``plan``, does not fit the
    network and AWS's fixed limits (:mod:`fm_constructs.planning.deployment_plan`): the subnet
    rules on the subnet plan, then the fixed limits on the usages."""
    limits = scale_rules.fixed_limits(plan.usages)
    demand = planned_demand(profile, plan.subnets)
    return demand_problems(demand, profile.platform.vpc_cidr) + limits


def admin_role_problems(arns: tuple[str, ...], account: str | None) -> list[Finding]:
    """The rules the loader runs on ``platform.admin_role_arns``, on the roles that replace
    them (reported under the context key)."""
    return [
        *platform_rules.admin_principals(arns, key=ADMIN_ROLES_CONTEXT),
        *platform_rules.admin_accounts(arns, account, key=ADMIN_ROLES_CONTEXT),
    ]
