"""The profile a deployment builds: checked at its largest scale, with the values a deployment
command overrides (``cdk synth -c key=value``) checked by the rules the loader runs on the
profile's own keys."""

from __future__ import annotations

import dataclasses
from typing import Any

from fm_constructs.config.model import Profile
from fm_constructs.config.plan import deployment_plan
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.deployment_plan import DeploymentPlan
from fm_constructs.rules.deployment import ADMIN_ROLES_CONTEXT as ADMIN_ROLES_CONTEXT
from fm_constructs.rules.deployment import admin_role_problems as admin_role_problems
from fm_constructs.rules.deployment import scale_problems

#: Where the roles of the ``admin_role_arns`` context value come from, in their errors.
ADMIN_ROLES_SOURCE = f"cdk context -c {ADMIN_ROLES_CONTEXT}"


def admin_role_arns(context_value: Any) -> tuple[str, ...] | None:
    """The roles of the ``admin_role_arns`` context value (a comma-separated string or a list,
    as ``-c`` and cdk.json give it), None when it is unset."""
    if context_value is None or context_value == "":
        return None
    if isinstance(context_value, str):
        return tuple(a.strip() for a in context_value.split(",") if a.strip())
    return tuple(str(a) for a in context_value)


def with_admin_role_arns(profile: Profile, arns: tuple[str, ...] | None) -> Profile:
    """``profile`` with ``arns`` as its admin roles (unchanged when None). Unchecked: see
    :func:`check_deployment`."""
    if arns is None:
        return profile
    platform = dataclasses.replace(profile.platform, admin_role_arns=arns)
    return dataclasses.replace(profile, platform=platform)


def with_admin_roles(profile: Profile, context_value: Any) -> Profile:
    """``profile`` with the admin roles of the ``admin_role_arns`` context value when one is
    set, checked by the rules of ``platform.admin_role_arns``."""
    arns = admin_role_arns(context_value)
    if arns is not None:
        problems = admin_role_problems(arns, profile.platform.account)
        if problems:
            raise FmValidationError(problems, context=ADMIN_ROLES_SOURCE)
    return with_admin_role_arns(profile, arns)


def check_deployment(
    profile: Profile, plan: DeploymentPlan, admin_roles: tuple[str, ...] | None = None
) -> None:
    """Raise :class:`~fm_constructs.errors.FmValidationError` unless the largest deployment
    of ``profile`` (planned as ``plan``) fits the network and AWS's fixed limits (the loader
    checked it; a profile built in code may not have been), then unless the overriding admin
    roles ``admin_roles`` (None: none given) pass the rules of ``platform.admin_role_arns``.
    Both are rules of :mod:`fm_constructs.rules.deployment`, run here one after the other;
    the profile's problems are reported first, under the profile."""
    problems = scale_problems(profile, plan)
    account = profile.platform.account
    overrides = admin_role_problems(admin_roles, account) if admin_roles is not None else []
    if problems:
        raise FmValidationError(problems, context=f"profile {profile.source}")
    if overrides:
        raise FmValidationError(overrides, context=ADMIN_ROLES_SOURCE)


def deployment_profile(profile: Profile, *, admin_roles: Any = None) -> Profile:
    """``profile`` as a deployment builds it: checked (:func:`check_deployment`), with the
    admin roles of the ``admin_role_arns`` context value when one is set."""
    arns = admin_role_arns(admin_roles)
    check_deployment(profile, deployment_plan(profile), arns)
    return with_admin_role_arns(profile, arns)
