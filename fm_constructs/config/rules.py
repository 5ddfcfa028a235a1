"""The profile's checks as the loader runs them: the cross-key rules of
:mod:`fm_constructs.rules.profile` (re-exported here), and the deployment at its largest
(:func:`check_scale`), which needs the profile mapped to its subnet demand and its AWS limit
usages first, planned once (:mod:`fm_constructs.config.plan`), before the rules of
:mod:`fm_constructs.rules.deployment` read the plan (:func:`scale_problems`, re-exported).
"""

from __future__ import annotations

from fm_constructs.config.model import Profile
from fm_constructs.config.options import efa_layout_of as efa_layout_of
from fm_constructs.config.options import fsx_efa_clients as fsx_efa_clients
from fm_constructs.config.plan import deployment_plan
from fm_constructs.rules.deployment import scale_problems as scale_problems
from fm_constructs.rules.findings import Finding
from fm_constructs.rules.profile import EFA_CLIENT_ORCHESTRATORS as EFA_CLIENT_ORCHESTRATORS
from fm_constructs.rules.profile import check_profile as check_profile
from fm_constructs.rules.profile import efa_client_nodes as efa_client_nodes
from fm_constructs.rules.profile import fsx_efa_connection_nodes as fsx_efa_connection_nodes
from fm_constructs.rules.profile import reservation_node_groups as reservation_node_groups


def check_scale(profile: Profile) -> list[Finding]:
    """The deployment at its largest fits the network and AWS's fixed limits: the profile is
    planned once (:func:`fm_constructs.config.plan.deployment_plan`), then the subnet and limit
    rules read the plan and the usages it gives."""
    return scale_problems(profile, deployment_plan(profile))
