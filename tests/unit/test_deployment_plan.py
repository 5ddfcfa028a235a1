"""The profile planned once: one deployment request, one plan of subnets and limit usages, read
by the scale check and by the options a deployment builds from."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.config import load_profile
from fm_constructs.config.deployment import options_for_deployment
from fm_constructs.config.limits import limit_request, limit_usages
from fm_constructs.config.model import Profile
from fm_constructs.config.options import deployment_options
from fm_constructs.config.plan import deployment_plan, deployment_request
from fm_constructs.config.rules import check_scale, scale_problems
from fm_constructs.config.subnet_demand import subnet_plan
from fm_constructs.errors import FmValidationError
from fm_constructs.planning import aws_limits as lim
from fm_constructs.planning import deployment_plan as planning
from fm_constructs.planning import subnet_demand as subnet_planning
from fm_constructs.planning.deployment_plan import LimitRequest, WorkloadLimits

ROOT = Path(__file__).resolve().parents[2]
PROFILES = sorted((ROOT / "config").glob("*.toml"))


def _profile(name: str) -> Profile:
    return load_profile(ROOT / "config" / f"{name}.toml")


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_the_plan_is_the_subnet_plan_with_its_usages_and_moved_groups(path: Path) -> None:
    profile = load_profile(path)
    plan = deployment_plan(profile)
    assert plan.subnets == subnet_plan(profile)
    assert list(plan.usages) == limit_usages(profile, demand=plan.subnets)
    assert plan.node_group_subnets == deployment_options(profile).node_group_subnets
    assert scale_problems(profile, plan) == check_scale(profile) == []
    request = deployment_request(profile)
    assert request.limits == limit_request(profile)
    assert request.networking is profile.platform.pod_networking


def test_a_deployment_plans_its_profile_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """options_for_deployment checks and maps one plan: the subnet arithmetic runs once."""
    calls: list[Any] = []
    real = subnet_planning.plan_subnets

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args)
        return real(*args, **kwargs)

    profile = _profile("pretraining-1024")
    monkeypatch.setattr(planning, "plan_subnets", counted)
    monkeypatch.setattr(subnet_planning, "plan_subnets", counted)
    options = options_for_deployment(profile)
    assert len(calls) == 1
    monkeypatch.undo()
    assert options == deployment_options(profile)


def test_the_scale_check_comes_before_the_admin_roles_override() -> None:
    """A profile too large for its network is refused as a profile error even when the
    overriding admin roles are bad too; with the scale fine, the override's error is the
    context's."""
    profile = _profile("default")
    platform = dataclasses.replace(profile.platform, vpc_cidr="10.0.0.0/24")
    small = dataclasses.replace(profile, platform=platform)
    with pytest.raises(FmValidationError) as scale:
        options_for_deployment(small, admin_roles="not-an-arn")
    assert "profile" in str(scale.value) and "-c admin_role_arns" not in str(scale.value)
    with pytest.raises(FmValidationError) as admins:
        options_for_deployment(profile, admin_roles="not-an-arn")
    assert "-c admin_role_arns" in str(admins.value)


def _usage(usages: list[lim.LimitUsage], limit: lim.AwsLimit) -> lim.LimitUsage | None:
    found = [u for u in usages if u.limit is limit]
    return found[0] if found else None


def test_limits_count_the_main_pool_only_for_placement_groups_and_capacity_blocks() -> None:
    """The counting reads the request alone: a workload asking for placement groups or a
    Capacity Block counts its main pool's node groups, never its rollout group."""
    profile = _profile("default")
    demand = subnet_plan(profile)
    eks = [g for g in demand.node_groups if g.managed]
    assert any(g.name.endswith(".rollout") for g in eks)
    workloads = tuple(
        WorkloadLimits(w, "shared", placement_groups=True, capacity_block=True)
        for w in dict.fromkeys(g.workload for g in eks)
    )
    usages = planning.limit_usages(LimitRequest(workloads), demand)
    main = [g for g in eks if not g.name.endswith(".rollout")]
    placement = _usage(usages, lim.PLACEMENT_GROUPS_PER_REGION)
    assert placement is not None
    assert placement.used == sum(lim.node_groups_for(g.nodes) for g in main)
    blocks = [u for u in usages if u.limit is lim.CAPACITY_BLOCK_INSTANCES]
    assert [u.used for u in blocks] == [g.nodes for g in main]
    reserved = tuple(dataclasses.replace(w, reserved_instances=7) for w in workloads)
    usages = planning.limit_usages(LimitRequest(reserved), demand)
    assert {u.used for u in usages if u.limit is lim.CAPACITY_BLOCK_INSTANCES} == {7}
    # Nothing asked for: neither is counted; no file system, no storage usage.
    plain = tuple(WorkloadLimits(w.workload, w.eks_cluster) for w in workloads)
    usages = planning.limit_usages(LimitRequest(plain), demand)
    assert _usage(usages, lim.PLACEMENT_GROUPS_PER_REGION) is None
    assert _usage(usages, lim.CAPACITY_BLOCK_INSTANCES) is None
    assert _usage(usages, lim.FSX_LUSTRE_STORAGE_PER_ACCOUNT) is None


def test_the_deployment_rules_are_one_module_of_the_rules() -> None:
    """The scale check and the rules of the overriding admin roles are rules of
    fm_constructs.rules.deployment; their old homes hand on the same functions."""
    from fm_constructs.config import overrides, rules
    from fm_constructs.rules import deployment

    assert rules.scale_problems is deployment.scale_problems
    assert overrides.admin_role_problems is deployment.admin_role_problems
    assert overrides.ADMIN_ROLES_CONTEXT == deployment.ADMIN_ROLES_CONTEXT == "admin_role_arns"
    profile = _profile("default")
    (finding,) = deployment.admin_role_problems(("not-an-arn",), profile.platform.account)
    assert finding.key == "admin_role_arns[0]" and finding.is_error
