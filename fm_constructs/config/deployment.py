"""The one call a deployment makes with its profile: the options it builds from.

:func:`options_for_deployment` takes a loaded profile and the deployment command's overrides
(``cdk synth -c admin_role_arns=...``) and returns the complete
:class:`~fm_constructs.config.options.DeploymentOptions`, as one pipeline that runs one way:
the profile planned once (subnets and AWS limit usages), the rules of
:mod:`fm_constructs.rules.deployment` over the plan and the overrides, then the profile mapped
with the plan, the overrides applied. ``stacks/`` hands the profile here once and builds from
the options alone. Pure data: no aws_cdk import.
"""

from __future__ import annotations

from typing import Any

from fm_constructs.config.model import Profile
from fm_constructs.config.options import DeploymentOptions, planned_options
from fm_constructs.config.overrides import admin_role_arns, check_deployment, with_admin_role_arns
from fm_constructs.config.plan import deployment_plan


def options_for_deployment(profile: Profile, *, admin_roles: Any = None) -> DeploymentOptions:
    """The options of ``profile`` as a deployment builds it (see
    :func:`~fm_constructs.config.overrides.deployment_profile`): ``admin_roles`` is the
    ``admin_role_arns`` context value, None when unset. Bad input raises
    :class:`~fm_constructs.errors.FmValidationError` before anything is mapped."""
    admins = admin_role_arns(admin_roles)
    plan = deployment_plan(profile)
    check_deployment(profile, plan, admins)
    return planned_options(with_admin_role_arns(profile, admins), plan)
