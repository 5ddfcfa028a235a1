"""The invariant of the rules engine: a profile that loads and plans without errors synthesizes.

Checked over every shipped profile (their synthesis is cached, see profiles.py) and over a
generated set of variations along each key that changes what is built: the orchestrator,
the instance type of each workload kind (with and without EFA, Trainium, a serving layout
spanning nodes), the capacity kinds, the storage options, pod networking, Kubernetes
versions and regions. Each axis changes one small base profile, and some candidates are
ones the rules must refuse. Every candidate the loader and ``fmc plan`` accept must build
all its constructs (every construct checks its arguments when it is built), and a few of
them are synthesized in one app (the shipped profiles synthesize every orchestrator).
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

import pytest

from fm_constructs.cli.plan import build_plan
from fm_constructs.cli.pricing import load_prices
from fm_constructs.config import Orchestrator, Profile, parse_profile
from fm_constructs.errors import FmValidationError
from stacks.app_builder import build_stacks, create_app
from tests.profile_data import changed
from tests.stacks.profiles import cdk_json_context, profile_params, synthesize

ACCOUNT = "123456789012"
BASE: dict[str, Any] = {
    "platform": {
        "name": "inv",
        "region": "us-east-1",
        "account": ACCOUNT,
        "availability_zone": "us-east-1a",
        "availability_zones": ["us-east-1a", "us-east-1b"],
        "admin_role_arns": [f"arn:aws:iam::{ACCOUNT}:role/Admin"],
        "observability": False,
        "grafana": False,
    },
    "pretraining": {
        "enabled": True,
        "instance_type": "p5.48xlarge",
        "instance_count": 2,
        "storage": {"storage_capacity_gib": 1200, "throughput_mb_s_per_tib": 250},
    },
}
MODEL = {"model_s3_prefix": "models/m/", "served_model_name": "m"}
ONLY_INFERENCE = {"pretraining.enabled": False}
HYPERPOD_EKS_VERSION = {"platform.kubernetes_version": "1.34"}
PLAN_ARN = f"arn:aws:sagemaker:us-east-1:{ACCOUNT}:training-plan/inv"
PCS_AMI = {"pretraining.pcs_ami": {"id": "ami-0a1b2c3d4e5f60718", "region": "us-east-1"}}
PCS_BLOCK = {
    "kind": "capacity-block",
    "reservation_id": "cr-0a1b2c3d4e5f60718",
    "start_time": "2027-01-04T11:30:00Z",
    "end_time": "2027-01-18T11:30:00Z",
}


def _inference(instance_type: str, tp: int, pp: int, replicas: int, nodes: int) -> dict[str, Any]:
    model = {**MODEL, "tensor_parallel_size": tp, "pipeline_parallel_size": pp}
    return {
        **ONLY_INFERENCE,
        "inference": {
            "enabled": True,
            "instance_type": instance_type,
            "instance_count": nodes,
            "model": {**model, "replicas": replicas},
        },
    }


#: (axis, variation, changes to BASE, accepted?) -- a refused candidate states the code.
VARIATIONS: list[tuple[str, str, dict[str, Any], str | None]] = [
    ("base", "p5-eks", {}, None),
    # orchestrator
    ("orchestrator", "hyperpod-slurm", {"pretraining.orchestrator": "hyperpod-slurm"}, None),
    ("orchestrator", "pcs", {"pretraining.orchestrator": "pcs", **PCS_AMI}, None),
    (
        "orchestrator",
        "pcs-capacity-block",
        {
            "pretraining.orchestrator": "pcs",
            **PCS_AMI,
            "pretraining.capacity": {**PCS_BLOCK, "reserved_instance_count": 2},
        },
        None,
    ),
    (
        "orchestrator",
        "pcs-capacity-block-of-unknown-size",
        {"pretraining.orchestrator": "pcs", **PCS_AMI, "pretraining.capacity": PCS_BLOCK},
        "FM336",
    ),
    (
        "orchestrator",
        "pcs-kubelet-max-pods",
        {"pretraining.orchestrator": "pcs", **PCS_AMI, "pretraining.max_pods_per_node": 50},
        "FM336",
    ),
    (
        "orchestrator",
        "hyperpod-eks",
        {"pretraining.orchestrator": "hyperpod-eks", **HYPERPOD_EKS_VERSION},
        None,
    ),
    ("orchestrator", "hyperpod-eks-1.35", {"pretraining.orchestrator": "hyperpod-eks"}, "FM206"),
    (
        "orchestrator",
        "inference-on-hyperpod",
        {**_inference("g6e.48xlarge", 8, 1, 1, 1), "inference.orchestrator": "hyperpod-eks"},
        "FM304",
    ),
    (
        "orchestrator",
        "dedicated-inference-cluster",
        {**_inference("g6e.48xlarge", 8, 1, 1, 1), "inference.dedicated_cluster": True},
        None,
    ),
    # instance types per workload kind
    ("pretraining type", "p4d", {"pretraining.instance_type": "p4d.24xlarge"}, None),
    ("pretraining type", "trn1", {"pretraining.instance_type": "trn1.32xlarge"}, None),
    (
        "pretraining type",
        "p5en-legacy",
        {"pretraining.instance_type": "p5en.48xlarge", "pretraining.efa_layout": "legacy"},
        None,
    ),
    (
        "pretraining type",
        "g6e.2xlarge-no-efa",
        {"pretraining.instance_type": "g6e.2xlarge"},
        "FM302",
    ),
    (
        "post_training type",
        "p5en-rollout-g6e",
        {
            "post_training": {
                "enabled": True,
                "instance_type": "p5en.48xlarge",
                "instance_count": 1,
                "rollout": {"enabled": True, "instance_type": "g6e.48xlarge"},
                "storage": {"reuse_pretraining": True},
            }
        },
        None,
    ),
    (
        "post_training type",
        "rollout-without-efa",
        {
            "post_training": {
                "enabled": True,
                "instance_type": "p5en.48xlarge",
                "rollout": {"enabled": True, "instance_type": "g6e.2xlarge"},
                "storage": {"enabled": False},
            }
        },
        "FM302",
    ),
    ("inference type", "g6e.2xlarge-one-gpu", _inference("g6e.2xlarge", 1, 1, 1, 1), None),
    ("inference type", "g6e.12xlarge-tp2", _inference("g6e.12xlarge", 2, 1, 2, 1), None),
    ("inference type", "g6e.12xlarge-tp3", _inference("g6e.12xlarge", 3, 1, 1, 1), "FM503"),
    ("inference type", "p5-tp8-pp2", _inference("p5.48xlarge", 8, 2, 1, 2), None),
    ("inference type", "g6e.48xlarge-tp16", _inference("g6e.48xlarge", 16, 1, 1, 2), "FM502"),
    ("inference type", "trn1", _inference("trn1.32xlarge", 1, 1, 1, 1), "FM501"),
    # capacity kinds
    (
        "capacity",
        "odcr",
        {"pretraining.capacity": {"kind": "odcr", "reservation_id": "cr-0a1b2c3d4e5f60718"}},
        None,
    ),
    (
        "capacity",
        "capacity-block",
        {
            "pretraining.capacity": {
                "kind": "capacity-block",
                "reservation_id": "cr-0a1b2c3d4e5f60718",
                "start_time": "2027-01-04T11:30:00Z",
                "end_time": "2027-01-18T11:30:00Z",
            }
        },
        None,
    ),
    (
        "capacity",
        "training-plan-slurm",
        {
            "pretraining.orchestrator": "hyperpod-slurm",
            "pretraining.capacity": {"kind": "training-plan", "training_plan_arn": PLAN_ARN},
        },
        None,
    ),
    (
        "capacity",
        "training-plan-on-eks",
        {"pretraining.capacity": {"kind": "training-plan", "training_plan_arn": PLAN_ARN}},
        "FM310",
    ),
    # storage options
    ("storage", "no-file-system", {"pretraining.storage": {"enabled": False}}, None),
    (
        "storage",
        "sized",
        {
            "pretraining.storage": {
                "model_parameters_billion": 8,
                "checkpoint_write_seconds": 300,
                "dataset_size_gib": 500,
            }
        },
        None,
    ),
    (
        "storage",
        "efa-metadata-iops",
        {
            "pretraining.storage": {
                "storage_capacity_gib": 4800,
                "throughput_mb_s_per_tib": 1000,
                "efa_enabled": True,
                "metadata_iops": 12000,
            }
        },
        None,
    ),
    ("storage", "bad-capacity", {"pretraining.storage.storage_capacity_gib": 1000}, "FM401"),
    # pod networking
    ("pod networking", "node-subnet", {"platform.pod_networking": "node-subnet"}, None),
    ("pod networking", "prefix-delegation", {"platform.pod_networking": "prefix-delegation"}, None),
    (
        "pod networking",
        "custom-networking-p5en",
        {
            "platform.pod_networking": "custom-networking",
            "pretraining.instance_type": "p5en.48xlarge",
        },
        None,
    ),
    (
        "pod networking",
        "custom-networking-p5",
        {"platform.pod_networking": "custom-networking"},
        "FM602",
    ),
    # Kubernetes versions and regions
    ("kubernetes", "1.34", {"platform.kubernetes_version": "1.34"}, None),
    ("kubernetes", "1.29", {"platform.kubernetes_version": "1.29"}, "FM201"),
    (
        "region",
        "eu-west-1",
        {
            "platform.region": "eu-west-1",
            "platform.availability_zone": "eu-west-1c",
            "platform.availability_zones": ["eu-west-1a", "eu-west-1c"],
        },
        None,
    ),
]
#: Accepted variations also synthesized (the others are built, which runs every construct's
#: own checks; the shipped profiles synthesize each orchestrator): a replica spanning two EFA
#: nodes, and a one-GPU model server on a type without EFA.
SYNTHESIZED = ("p5-tp8-pp2", "g6e.2xlarge-one-gpu")


def _ids(row: tuple[str, str, dict[str, Any], str | None]) -> str:
    return f"{row[0]}-{row[1]}"


def _load_and_plan(data: dict[str, Any]) -> tuple[Profile | None, set[str]]:
    """The profile when it loads and plans without errors, else None and the codes."""
    try:
        profile = parse_profile(data, source="<variation>")
    except FmValidationError as error:
        return None, set(error.codes)
    plan = build_plan(profile, load_prices(None))
    return (None, {"plan"}) if plan.problems else (profile, set())


def _accepted() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for _axis, name, changes, refused in VARIATIONS:
        if refused is None:
            out.append((name, changed(BASE, changes)))
    return out


@pytest.mark.parametrize(
    ("axis", "name", "changes", "refused"), VARIATIONS, ids=map(_ids, VARIATIONS)
)
def test_the_rules_accept_and_refuse_each_variation(
    axis: str, name: str, changes: dict[str, Any], refused: str | None
) -> None:
    profile, codes = _load_and_plan(changed(BASE, changes))
    if refused is None:
        assert profile is not None, f"{axis} {name}: refused with {codes}"
    else:
        assert profile is None and refused in codes, f"{axis} {name}: {codes or 'accepted'}"


def test_the_variations_cover_every_orchestrator_and_capacity_kind() -> None:
    profiles = [parse_profile(data) for _, data in _accepted()]
    workloads = [w for p in profiles for w in p.enabled_workloads]
    assert {w.orchestrator for w in workloads} == set(Orchestrator)
    assert {w.capacity.kind.value for w in workloads} == {
        "on-demand",
        "odcr",
        "capacity-block",
        "training-plan",
    }
    assert {p.platform.pod_networking.value for p in profiles} >= {
        "auto",
        "node-subnet",
        "prefix-delegation",
        "custom-networking",
    }
    assert set(SYNTHESIZED) <= {name for name, _ in _accepted()}


def test_every_variation_that_loads_and_plans_builds_and_a_few_synthesize() -> None:
    """Every accepted variation builds all its constructs in one app (each construct checks
    its arguments then); those of :data:`SYNTHESIZED` are synthesized together, once."""
    context = cdk_json_context()
    started = time.perf_counter()
    app = create_app(outdir=tempfile.mkdtemp(prefix="fm-invariant-built-"), context=context)
    for index, (name, data) in enumerate(_accepted()):
        data = changed(data, {"platform.name": f"inv{index}"})
        build_stacks(app, parse_profile(data, source=name))
    built = time.perf_counter() - started
    synth_app = create_app(outdir=tempfile.mkdtemp(prefix="fm-invariant-"), context=context)
    expected = set()
    for index, (name, data) in enumerate(d for d in _accepted() if d[0] in SYNTHESIZED):
        data = changed(data, {"platform.name": f"syn{index}"})
        stacks = build_stacks(synth_app, parse_profile(data, source=name))
        expected.add(stacks.platform.stack_name)
    assembly = synth_app.synth()
    assert expected <= {stack.stack_name for stack in assembly.stacks}
    print(
        f"built {len(_accepted())} variations in {built:.1f} s, synthesized "
        f"{len(SYNTHESIZED)} in {time.perf_counter() - started - built:.1f} s"
    )


@pytest.mark.parametrize("profile", profile_params())
def test_every_shipped_profile_loads_plans_and_synthesizes(profile: str) -> None:
    result = synthesize(profile)  # cached: the profile tests synthesize it anyway
    plan = build_plan(result.profile, load_prices(None))
    assert plan.problems == ()
    assert result.templates
