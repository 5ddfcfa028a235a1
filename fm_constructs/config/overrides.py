"""The profile a deployment builds: checked at its largest scale, with the values a deployment
command overrides (``cdk synth -c key=value``) checked by the rules the loader runs on the
profile's own keys."""

from __future__ import annotations

import dataclasses
from typing import Any

from fm_constructs.config.model import Profile
from fm_constructs.config.rules import check_scale
from fm_constructs.errors import FmValidationError
from fm_constructs.rules import platform as platform_rules

#: Context value (``cdk synth -c admin_role_arns=arn:...,arn:...``) naming the IAM roles given
#: cluster-admin access, in place of ``platform.admin_role_arns`` of the profile.
ADMIN_ROLES_CONTEXT = "admin_role_arns"


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


def deployment_profile(profile: Profile, *, admin_roles: Any = None) -> Profile:
    """``profile`` as a deployment builds it: its largest deployment fits the network and AWS's
    fixed limits (the loader checked it; a profile built in code may not have been), with the
    admin roles of the ``admin_role_arns`` context value when one is set."""
    problems = check_scale(profile)
    if problems:
        raise FmValidationError(problems, context=f"profile {profile.source}")
    return with_admin_roles(profile, admin_roles)
