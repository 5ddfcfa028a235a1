"""Whatever synthesis refuses, the profile loader (and so `fmc plan`) refuses first.

Each case is a value a construct refuses when it is built from a profile's options: the
profile is the shipped default with the value set in the model directly, past the loader's
rules, and building its stacks must fail in that construct (so the construct check is real,
not assumed). The same value written in a TOML file must then be refused when the file loads,
under the file name and a profile key path (``platform.kubernetes_version``, never the
construct's argument ``kubernetes_version``), and `fmc plan` must exit 2 with the same line. A
user therefore never meets a construct's error for something the profile says.

The converse keeps the loader from being merely stricter by accident: values at the edges of
what it accepts must build.

Building stops at the first construct that refuses, a second or so each; no template is
synthesized.
"""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.config import load_profile
from fm_constructs.config.model import Profile
from fm_constructs.domain.names import WORKLOAD_KINDS
from fm_constructs.errors import FmValidationError
from stacks.app_builder import build_stacks, create_app
from tests.profile_data import changed, to_toml
from tests.unit.cli_stubs import run

#: One worker for the module: its builds share the loaded default profile and the imports of
#: every stack, and use no profile synthesis cache.
pytestmark = pytest.mark.xdist_group("rules-before-synthesis")

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_FILE = ROOT / "config" / "default.toml"
DEFAULT = tomllib.loads(DEFAULT_FILE.read_text(encoding="utf-8"))
ONLY_INFERENCE = {"pretraining.enabled": False, "post_training.enabled": False}
#: The tables a profile key path starts with.
PROFILE_TABLES = ("platform", *WORKLOAD_KINDS)

#: (case, profile changes, the construct that refuses them, the profile key the loader names)
CASES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "kubernetes-version-out-of-support",
        {"platform.kubernetes_version": "1.29"},
        "GpuEksCluster",
        "platform.kubernetes_version",
    ),
    (
        "admin-role-not-an-arn",
        {"platform.admin_role_arns": ["PlatformAdmin"]},
        "GpuEksCluster",
        "platform.admin_role_arns[0]",
    ),
    (
        "admin-role-an-iam-user",
        {"platform.admin_role_arns": ["arn:aws:iam::111122223333:user/alice"]},
        "GpuEksCluster",
        "platform.admin_role_arns[0]",
    ),
    (
        "api-open-to-the-internet",
        {"platform.public_access_cidrs": ["0.0.0.0/0"]},
        "GpuEksCluster",
        "platform.public_access_cidrs[0]",
    ),
    (
        "api-cidr-not-a-cidr",
        {"platform.public_access_cidrs": ["not-a-cidr"]},
        "GpuEksCluster",
        "platform.public_access_cidrs[0]",
    ),
    (
        "one-zone-for-eks",
        {"platform.availability_zones": ["us-east-1a"]},
        "GpuEksCluster",
        "platform.availability_zones",
    ),
    (
        "four-zones",
        {"platform.availability_zones": ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d"]},
        "GpuClusterVpc",
        "platform.availability_zones",
    ),
    (
        "vpc-cidr-too-large",
        {"platform.vpc_cidr": "10.0.0.0/12"},
        "GpuClusterVpc",
        "platform.vpc_cidr",
    ),
    (
        "zone-letter-the-region-lacks",
        {
            "platform.availability_zone": "us-east-1g",
            "platform.availability_zones": ["us-east-1a", "us-east-1g"],
        },
        "GpuClusterVpc",
        "platform.availability_zones[1]",
    ),
    (
        "zones-of-another-region",
        {
            "platform.availability_zone": "eu-west-1a",
            "platform.availability_zones": ["eu-west-1a", "eu-west-1b"],
        },
        "GpuClusterVpc",
        "platform.availability_zones[0]",
    ),
    (
        "pool-of-no-nodes",
        {"pretraining.instance_count": 0},
        "EfaNodeGroup",
        "pretraining.instance_count",
    ),
    (
        "root-volume-too-small",
        {"pretraining.root_volume_size_gib": 10},
        "GpuLaunchTemplate",
        "pretraining.root_volume_size_gib",
    ),
    (
        "file-system-size-negative",
        {"post_training.storage.storage_capacity_gib": -1200},
        "LustreFileSystem",
        "post_training.storage.storage_capacity_gib",
    ),
    (
        "tensor-parallel-beyond-one-node",
        {"inference.model.tensor_parallel_size": 16},
        "InferenceService",
        "inference.model.tensor_parallel_size",
    ),
    (
        "tensor-parallel-not-dividing-the-gpus",
        {"inference.model.tensor_parallel_size": 3},
        "InferenceService",
        "inference.model.tensor_parallel_size",
    ),
    (
        "replicas-above-max-replicas",
        {"inference.model.replicas": 5},
        "InferenceService",
        "inference.model.max_replicas",
    ),
    (
        "gpu-memory-share-above-one",
        {"inference.model.gpu_memory_utilization": 1.5},
        "InferenceService",
        "inference.model.gpu_memory_utilization",
    ),
    (
        "model-image-unpinned",
        {"inference.model.image": "vllm/vllm-openai:latest"},
        "InferenceService",
        "inference.model.image",
    ),
    (
        "served-model-name-with-spaces",
        {"inference.model.served_model_name": "Llama 3 70B"},
        "InferenceService",
        "inference.model.served_model_name",
    ),
    (
        "inference-on-trainium",
        {**ONLY_INFERENCE, "inference.instance_type": "trn1.32xlarge"},
        "InferenceService",
        "inference.instance_type",
    ),
]


def _model_value(value: Any) -> Any:
    """A TOML value as the profile model holds it (arrays are tuples)."""
    return tuple(value) if isinstance(value, list) else value


def _set(model: Any, dotted: str, value: Any) -> Any:
    head, _, rest = dotted.partition(".")
    inner = _model_value(value) if not rest else _set(getattr(model, head), rest, value)
    return dataclasses.replace(model, **{head: inner})


def _past_the_loader(changes: dict[str, Any]) -> Profile:
    """The default profile with ``changes`` set in the model, none of the loader's rules
    run on them: what a construct would be given if the loader let the values through."""
    profile = load_profile(DEFAULT_FILE)
    for dotted, value in changes.items():
        profile = _set(profile, dotted, value)
    return profile


@pytest.mark.parametrize(
    ("case", "changes", "construct", "key"), CASES, ids=[row[0] for row in CASES]
)
def test_what_synthesis_refuses_the_loader_refuses_first(
    tmp_path: Path, case: str, changes: dict[str, Any], construct: str, key: str
) -> None:
    # Synthesis refuses the values, in the construct that checks them.
    with pytest.raises(FmValidationError) as built:
        build_stacks(create_app(), _past_the_loader(changes))
    assert (built.value.context or "").startswith(f"{construct} "), f"{case}: {built.value}"

    # The loader refuses them first: the file, a profile key path, every line one of the
    # profile's keys.
    path = tmp_path / "profile.toml"
    path.write_text(to_toml(changed(DEFAULT, changes)) + "\n", encoding="utf-8")
    with pytest.raises(FmValidationError) as loaded:
        load_profile(path)
    error = loaded.value
    assert error.context == f"profile {path}"
    keys = [f.key for f in error.findings]
    assert key in keys, f"{case}: {key} not in {keys}"
    assert all(k.split(".")[0].split("[")[0] in PROFILE_TABLES for k in keys), keys
    assert construct not in str(error)

    # fmc plan gives the same verdict with the same lines.
    plan = run("plan", "--config", str(path))
    assert plan.code == 2, plan.out + plan.err
    assert all(f.line() in plan.err for f in error.findings), plan.err


#: Values at the edges of what the loader accepts: each must build as well (a construct
#: refusing one would be a rule the loader lacks). (case, profile changes)
ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("oldest-kubernetes-version", {"platform.kubernetes_version": "1.34"}),
    (
        "three-zones",
        {"platform.availability_zones": ["us-east-1a", "us-east-1b", "us-east-1c"]},
    ),
    (
        "admin-role-with-a-path",
        {
            "platform.admin_role_arns": [
                "arn:aws:iam::111122223333:role/aws-reserved/sso.amazonaws.com/"
                "AWSReservedSSO_Admin_0123456789abcdef"
            ]
        },
    ),
    ("largest-root-volume", {"pretraining.root_volume_size_gib": 65_536}),
    ("most-pods-per-node", {"pretraining.max_pods_per_node": 250}),
    (
        "image-pinned-by-digest",
        {"inference.model.image": "public.ecr.aws/vllm/vllm-openai@sha256:" + "0" * 64},
    ),
    ("served-name-with-slash-and-colon", {"inference.model.served_model_name": "meta/llama:70b"}),
    (
        "reservation-group-of-the-region",
        {
            "pretraining.capacity": {
                "kind": "odcr",
                "resource_group_arn": "arn:aws:resource-groups:us-east-1:111122223333:group/g",
            }
        },
    ),
]


@pytest.mark.parametrize(("case", "changes"), ACCEPTED, ids=[row[0] for row in ACCEPTED])
def test_each_edge_loads(tmp_path: Path, case: str, changes: dict[str, Any]) -> None:
    path = tmp_path / "profile.toml"
    path.write_text(to_toml(changed(DEFAULT, changes)) + "\n", encoding="utf-8")
    assert load_profile(path) is not None, case


def test_what_the_loader_accepts_builds(tmp_path: Path) -> None:
    """Every edge at once (they change distinct keys), built in one app: a construct refusing
    any of them fails this build under its own class and path, which names the edge."""
    every_edge: dict[str, Any] = {}
    for _case, changes in ACCEPTED:
        assert not set(changes) & set(every_edge), "edges must change distinct keys"
        every_edge.update(changes)
    path = tmp_path / "profile.toml"
    path.write_text(to_toml(changed(DEFAULT, every_edge)) + "\n", encoding="utf-8")
    stacks = build_stacks(create_app(), load_profile(path))
    assert stacks.platform is not None
