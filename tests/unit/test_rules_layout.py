"""One rules engine below the profile loader: the rules and the profile model import nothing
from config/, the CLI, the patterns or the stacks, and load without aws_cdk; the names callers
imported from their old homes are the rules' own objects."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.module_imports import imported_modules

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fm_constructs"
ABOVE_THE_RULES = (
    "fm_constructs.config",
    "fm_constructs.cli",
    "fm_constructs.patterns",
    "fm_constructs.stacks",
    "stacks",
    "aws_cdk",
)


@pytest.mark.parametrize("package", ["rules", "profile"])
def test_the_rules_and_the_profile_model_import_nothing_above_them(package: str) -> None:
    offenders = {
        f"{path.relative_to(ROOT)} imports {module}"
        for path in (PACKAGE / package).rglob("*.py")
        for module in imported_modules(path)
        if module.startswith(ABOVE_THE_RULES)
    }
    assert not offenders


def test_the_rules_load_without_aws_cdk() -> None:
    code = (
        "import sys\n"
        "import fm_constructs.rules.profile, fm_constructs.rules.subnets\n"
        "import fm_constructs.rules.hyperpod, fm_constructs.rules.online.capacity\n"
        "assert 'aws_cdk' not in sys.modules, sorted(m for m in sys.modules if 'aws_cdk' in m)\n"
        "assert 'fm_constructs.config' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_old_homes_re_export_the_moved_names() -> None:
    from fm_constructs import config
    from fm_constructs.cli import preflight
    from fm_constructs.config import model, rules, sizing, subnet_demand
    from fm_constructs.orchestration.hyperpod import instance_groups
    from fm_constructs.profile import model as profile_model
    from fm_constructs.rules import hyperpod, profile, subnets
    from fm_constructs.rules.online import capacity

    assert config.Profile is model.Profile is profile_model.Profile
    assert model.SHARED_CLUSTER == profile_model.SHARED_CLUSTER
    assert sizing.PROFILE_DEPLOYMENT_TYPE is profile_model.PROFILE_DEPLOYMENT_TYPE
    assert rules.check_profile is profile.check_profile
    assert rules.fsx_efa_connection_nodes is profile.fsx_efa_connection_nodes
    assert subnet_demand.demand_problems is subnets.demand_problems
    assert subnet_demand.SubnetDemand is subnets.SubnetDemand
    assert preflight._reservation_targets is capacity.reservation_targets
    assert instance_groups.SlurmNodeType is hyperpod.SlurmNodeType
    assert preflight.CHECK_CODES["training plan"] == capacity.TRAINING_PLAN.code == "FM704"
