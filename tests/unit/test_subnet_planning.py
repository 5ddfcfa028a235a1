"""The subnet arithmetic runs one way: planning/subnet_demand.py works on a plain
SubnetRequest, never reads a profile or calls into config/ or rules/, and the profile side
only builds the request and reads the result. Also the one fit answer (SubnetFit) and the
``--json`` encoder of ``fmc plan``."""

from __future__ import annotations

import ast
import dataclasses
import json
from enum import StrEnum
from pathlib import Path
from typing import NamedTuple

import pytest

from fm_constructs.cli.document import document, json_field
from fm_constructs.config import Profile, load_profile
from fm_constructs.config.subnet_demand import demand_problems, subnet_demand, subnet_request
from fm_constructs.planning import subnet_demand as planning
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.ip_budget import SubnetFit
from fm_constructs.planning.pod_networking import PodNetworking

ROOT = Path(__file__).resolve().parents[2]
PLANNING = ROOT / "fm_constructs" / "planning"


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


def test_the_planning_arithmetic_never_reads_config_or_rules() -> None:
    modules = _imports(PLANNING / "subnet_demand.py") | _imports(PLANNING / "pod_networking.py")
    modules |= _imports(PLANNING / "vpc_layout.py")
    upward = sorted(
        m for m in modules if m.startswith(("fm_constructs.config", "fm_constructs.rules"))
    )
    assert upward == []


def _p5en(instance_count: int) -> Profile:
    profile = load_profile(ROOT / "config" / "default.toml")
    return dataclasses.replace(
        profile,
        pretraining=dataclasses.replace(
            profile.pretraining, instance_type="p5en.48xlarge", instance_count=instance_count
        ),
    )


@pytest.mark.parametrize("networking", list(PodNetworking))
def test_the_profile_side_only_builds_the_request_and_reads_the_result(
    networking: PodNetworking,
) -> None:
    """subnet_demand(profile) is plan_subnets over subnet_request(profile): the same figures,
    with findings added under profile keys."""
    profile = _p5en(1000)
    request = subnet_request(profile)
    plain = planning.plan_subnets(request, networking)
    demand = subnet_demand(profile, networking=networking)
    assert isinstance(demand, planning.SubnetDemand)
    for name in [f.name for f in dataclasses.fields(plain)]:
        assert getattr(demand, name) == getattr(plain, name), name
    assert (demand.usable, demand.required, demand.fits) == (
        plain.usable,
        plain.required,
        plain.fits,
    )
    assert bool(demand.pool_problems) == bool(plain.oversized_pools)
    assert bool(demand.networking_problems) == plain.networking_blocked


def test_a_request_without_a_profile() -> None:
    """Two p5en pools in a /20 VPC: 150 addresses a node with the VPC CNI in the node subnet
    (primary and 3 CNI ENIs of 49 pod addresses each, WARM_ENI_TARGET=1) overflow its /22;
    auto moves pods to prefixes, then to the pod subnet."""
    group = planning.NodeGroupRequest(
        name="train",
        workload="train",
        orchestrator="eks",
        instance_type="p5en.48xlarge",
        layout=EfaLayout.EFA_ONLY,
        nodes=16,
        vpc_cni=True,
        managed=True,
    )
    request = planning.SubnetRequest(
        node_groups=(group,),
        fixed=(("interface endpoints", 12),),
        availability_zone="us-east-1a",
        vpc_cidr="10.0.0.0/20",
        pod_cidr="100.64.0.0/16",
    )
    plain = planning.plan_subnets(request, PodNetworking.NODE_SUBNET)
    (train,) = plain.node_groups
    assert train.addressing.per_node == 150 and train.addresses == 16 * 150
    assert (plain.usable, plain.required) == (1024 - 5, 16 * 150 + 12)
    assert not plain.fits and plain.free == plain.usable - plain.required
    auto = planning.plan_subnets(request, PodNetworking.AUTO)
    assert auto.fits and auto.networking is not PodNetworking.NODE_SUBNET


def test_every_subnet_kind_answers_through_subnet_fit() -> None:
    profile = _p5en(1000)
    demand = subnet_demand(profile)
    assert demand.networking is PodNetworking.CUSTOM_NETWORKING
    assert demand.pod_subnet is not None
    for fit in (demand, demand.pod_subnet):
        assert isinstance(fit, SubnetFit)
        assert fit.free == fit.usable - fit.required
    assert demand.fits and not demand_problems(demand, profile.platform.vpc_cidr)


class _Kind(StrEnum):
    A = "a"


class _Pair(NamedTuple):
    what: str
    addresses: int


@dataclasses.dataclass(frozen=True)
class _Inner:
    kind: _Kind
    pairs: tuple[_Pair, ...]


@dataclasses.dataclass(frozen=True)
class _Outer:
    JSON_PROPERTIES = ("double",)

    value: int
    inner: _Inner | None = dataclasses.field(metadata=json_field("nested"))
    hidden: tuple[int, ...] = dataclasses.field(
        default=(), metadata=json_field("sizes", encode=lambda v: {"count": len(v)})
    )

    @property
    def double(self) -> int:
        return 2 * self.value


def test_the_plan_document_encoder() -> None:
    doc = document(_Outer(3, _Inner(_Kind.A, (_Pair("x", 1),)), (1, 2)))
    assert doc == {
        "value": 3,
        "nested": {"kind": "a", "pairs": [{"what": "x", "addresses": 1}]},
        "sizes": {"count": 2},
        "double": 6,
    }
    assert list(doc) == ["value", "nested", "sizes", "double"]
    assert document(_Outer(1, None))["nested"] is None
    json.dumps(doc)  # JSON-ready
