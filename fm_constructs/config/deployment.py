"""The one call a deployment makes with its profile: the options it builds from.

:func:`options_for_deployment` takes a loaded profile and the deployment command's overrides
(``cdk synth -c admin_role_arns=...``) and returns the complete
:class:`~fm_constructs.config.options.DeploymentOptions`: the profile checked at its largest
scale, the overrides checked and applied, then mapped. ``stacks/`` hands the profile here once
and builds from the options alone. Pure data: no aws_cdk import.
"""

from __future__ import annotations

from typing import Any

from fm_constructs.config.model import Profile
from fm_constructs.config.options import DeploymentOptions, deployment_options
from fm_constructs.config.overrides import deployment_profile


def options_for_deployment(profile: Profile, *, admin_roles: Any = None) -> DeploymentOptions:
    """The options of ``profile`` as a deployment builds it (see
    :func:`~fm_constructs.config.overrides.deployment_profile`): ``admin_roles`` is the
    ``admin_role_arns`` context value, None when unset. Bad input raises
    :class:`~fm_constructs.errors.FmValidationError` before anything is mapped."""
    deployed = deployment_profile(profile, admin_roles=admin_roles)
    return deployment_options(deployed)
