"""Profile parsing and validation: every problem reported at once, each naming its key."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.config import (
    CapacityConfig,
    CapacityKind,
    InferenceConfig,
    NatGateways,
    Orchestrator,
    PlatformConfig,
    PostTrainingConfig,
    PostTrainingStorageConfig,
    PretrainingConfig,
    load_profile,
    parse_profile,
)
from fm_constructs.config.reference import render_reference
from fm_constructs.config.rules import check_scale
from fm_constructs.errors import FmValidationError
from tests.profile_data import BASE, profile_with, to_toml

ROOT = Path(__file__).resolve().parents[2]

PLAN_ARN = "arn:aws:sagemaker:us-west-2:111122223333:training-plan/llama-pretraining"


def problems_of(data: dict[str, Any]) -> tuple[str, ...]:
    with pytest.raises(FmValidationError) as info:
        parse_profile(data)
    return info.value.problems


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_profile_loads(path: Path) -> None:
    profile = load_profile(path)
    assert profile.enabled_workloads


def test_default_profile_has_all_three_workloads_on_one_platform() -> None:
    profile = load_profile(ROOT / "config" / "default.toml")
    assert [w.name for w in profile.enabled_workloads] == [
        "pretraining",
        "post_training",
        "inference",
    ]
    assert profile.platform.availability_zone in profile.platform.availability_zones


def test_minimal_profile_gets_defaults() -> None:
    profile = parse_profile(BASE)
    assert profile.platform.name == "fm"
    assert profile.platform.nat_gateways is NatGateways.PER_AZ
    assert profile.pretraining.orchestrator is Orchestrator.EKS
    assert profile.pretraining.capacity.kind is CapacityKind.ON_DEMAND
    assert profile.pretraining.storage.enabled
    assert not profile.inference.enabled
    assert not profile.inference.storage.enabled


def test_instance_count_error_names_key_value_and_rule() -> None:
    assert problems_of(profile_with(**{"pretraining.instance_count": 0})) == (
        "pretraining.instance_count: must be >= 1, got 0",
    )


def test_every_problem_is_reported_at_once() -> None:
    data = profile_with(
        **{
            "platform.regoin": "us-east-1",
            "pretraining.instance_count": 0,
            "pretraining.orchestrator": "slurm",
            "pretraining.capacity.kind": "spot",
            "inference.enabled": "yes",
        }
    )
    problems = problems_of(data)
    assert len(problems) == 5
    joined = "\n".join(problems)
    assert "platform.regoin: unknown key" in joined
    assert "pretraining.instance_count: must be >= 1, got 0" in joined
    assert (
        "pretraining.orchestrator: must be one of 'eks', 'hyperpod-eks', 'hyperpod-slurm'" in joined
    )
    assert "pretraining.capacity.kind: must be one of 'on-demand', 'odcr'" in joined
    assert "inference.enabled: must be a boolean, got 'yes'" in joined


def test_unknown_keys_are_errors_at_every_level() -> None:
    data = profile_with(
        **{"pretraining.capacity.reservation": "cr-1", "pretraining.storage.size": 1, "extra": {}}
    )
    problems = "\n".join(problems_of(data))
    for key in ("pretraining.capacity.reservation", "pretraining.storage.size", "extra"):
        assert f"{key}: unknown key" in problems


def test_wrong_types_are_reported() -> None:
    problems = problems_of(
        profile_with(
            **{"pretraining.instance_count": "4", "inference.enabled": 1, "platform.account": 1}
        )
    )
    assert (
        "pretraining.instance_count: must be an integer, got '4'; write it without quotes: "
        "instance_count = 4" in problems
    )
    assert "inference.enabled: must be a boolean, got 1" in problems
    assert 'platform.account: must be a string (quote it: account = "1"), got 1' in problems


def test_bool_is_not_an_integer() -> None:
    assert problems_of(profile_with(**{"pretraining.instance_count": True})) == (
        "pretraining.instance_count: must be an integer, got True",
    )


def test_enabled_workload_needs_instance_type() -> None:
    data = copy.deepcopy(BASE)
    del data["pretraining"]["instance_type"]
    assert problems_of(data) == ("pretraining.instance_type: is required (a string), got None",)


def test_instance_type_must_be_ec2_name() -> None:
    (problem,) = problems_of(profile_with(**{"pretraining.instance_type": "ml.p5.48xlarge"}))
    assert "without the 'ml.' prefix" in problem


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("platform.region", "useast1", "must be an AWS region name"),
        ("platform.account", "1234", "must be a 12-digit AWS account id"),
        ("platform.vpc_cidr", "10.0.0.0/8", "must have a prefix between /16 and /24"),
        ("platform.vpc_cidr", "10.0.0.1/16", "must be an IPv4 network"),
        ("platform.nat_gateways", "none", "must be one of 'per-az', 'single'"),
        ("platform.name", "1fm", "must start with a letter"),
    ],
)
def test_platform_key_errors(key: str, value: Any, message: str) -> None:
    (problem,) = problems_of(profile_with(**{key: value}))
    assert problem.startswith(f"{key}: {message}")
    assert f"got {value!r}" in problem


def test_zone_must_belong_to_region_and_be_listed() -> None:
    problems = problems_of(profile_with(**{"platform.availability_zone": "us-east-1a"}))
    assert any(
        "platform.availability_zone: must be a zone of platform.region" in p for p in problems
    )
    # The bad zone is reported once, not again as "missing from availability_zones".
    assert not any("must include platform.availability_zone" in p for p in problems)
    problems = problems_of(
        profile_with(**{"platform.availability_zones": ["us-west-2c", "us-west-2d"]})
    )
    assert any("must include platform.availability_zone 'us-west-2b'" in p for p in problems)


def test_two_zones_are_required() -> None:
    (problem,) = problems_of(profile_with(**{"platform.availability_zones": ["us-west-2b"]}))
    assert problem.startswith("platform.availability_zones: list at least two zones")


def test_duplicate_zones_are_rejected() -> None:
    (problem,) = problems_of(
        profile_with(**{"platform.availability_zones": ["us-west-2b", "us-west-2b"]})
    )
    assert "zones must be unique" in problem


def test_capacity_block_needs_reservation_id() -> None:
    (problem,) = problems_of(profile_with(**{"pretraining.capacity.kind": "capacity-block"}))
    assert problem.startswith("pretraining.capacity.reservation_id: a Capacity Block needs")


def test_odcr_needs_exactly_one_target() -> None:
    (problem,) = problems_of(profile_with(**{"pretraining.capacity.kind": "odcr"}))
    assert "exactly one of reservation_id or resource_group_arn" in problem


def test_training_plan_only_with_hyperpod() -> None:
    (problem,) = problems_of(
        profile_with(
            **{
                "pretraining.capacity.kind": "training-plan",
                "pretraining.capacity.training_plan_arn": PLAN_ARN,
            }
        )
    )
    assert "training plans are used by SageMaker HyperPod only" in problem


def test_hyperpod_rejects_ec2_reservations() -> None:
    (problem,) = problems_of(
        profile_with(
            **{
                "pretraining.orchestrator": "hyperpod-slurm",
                "pretraining.capacity.kind": "capacity-block",
                "pretraining.capacity.reservation_id": "cr-0123456789abcdef0",
            }
        )
    )
    assert "HyperPod reserves capacity through SageMaker training plans" in problem


def test_hyperpod_eks_needs_a_kubernetes_version_hyperpod_supports() -> None:
    """HyperPod's own version list (pins.toml, floor 1) is checked when the profile loads."""
    (problem,) = problems_of(
        profile_with(
            **{"pretraining.orchestrator": "hyperpod-eks", "platform.kubernetes_version": "1.35"}
        )
    )
    assert problem.startswith("platform.kubernetes_version: SageMaker HyperPod supports EKS")
    assert "got '1.35'; set it to '1.34'" in problem
    parse_profile(
        profile_with(
            **{"pretraining.orchestrator": "hyperpod-eks", "platform.kubernetes_version": "1.34"}
        )
    )
    # Slurm clusters and plain EKS are not bound by it.
    parse_profile(
        profile_with(
            **{"pretraining.orchestrator": "hyperpod-slurm", "platform.kubernetes_version": "1.35"}
        )
    )


def test_keys_that_do_not_apply_to_the_capacity_kind_are_errors() -> None:
    (problem,) = problems_of(
        profile_with(**{"pretraining.capacity.reservation_id": "cr-0123456789abcdef0"})
    )
    assert problem.startswith(
        "pretraining.capacity.reservation_id: does not apply to kind 'on-demand'"
    )


def test_instance_count_within_reservation() -> None:
    (problem,) = problems_of(
        profile_with(
            **{
                "pretraining.instance_count": 8,
                "pretraining.capacity.kind": "capacity-block",
                "pretraining.capacity.reservation_id": "cr-0123456789abcdef0",
                "pretraining.capacity.reserved_instance_count": 4,
            }
        )
    )
    assert "must not exceed the reservation's" in problem
    assert "got 8" in problem


def test_inference_runs_on_eks_only() -> None:
    data = profile_with(
        **{
            "inference.enabled": True,
            "inference.instance_type": "g6e.48xlarge",
            "inference.orchestrator": "hyperpod-slurm",
        }
    )
    (problem,) = problems_of(data)
    assert problem == "inference.orchestrator: must be 'eks', got 'hyperpod-slurm'"


def test_storage_explicit_and_sizing_are_exclusive() -> None:
    (problem,) = problems_of(
        profile_with(
            **{
                "pretraining.storage.storage_capacity_gib": 2400,
                "pretraining.storage.model_parameters_billion": 70,
                "pretraining.storage.checkpoint_write_seconds": 300,
            }
        )
    )
    assert "either storage_capacity_gib/throughput_mb_s_per_tib or a sizing request" in problem


def test_sizing_keys_need_a_sizing_request() -> None:
    (problem,) = problems_of(profile_with(**{"pretraining.storage.checkpoints_to_keep": 3}))
    assert problem.startswith("pretraining.storage.checkpoints_to_keep: only applies to a sizing")


def test_disabled_workload_is_not_checked_for_consistency() -> None:
    data = profile_with(**{"post_training.capacity.kind": "capacity-block"})
    assert not parse_profile(data).post_training.enabled


def test_load_profile_reports_missing_file_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(FmValidationError, match="cannot read profile"):
        load_profile(tmp_path / "absent.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("[platform\nregion = 1")
    with pytest.raises(FmValidationError, match="is not valid TOML"):
        load_profile(bad)


def test_error_message_lists_every_problem() -> None:
    with pytest.raises(FmValidationError) as info:
        parse_profile(profile_with(**{"pretraining.instance_count": 0, "platform.account": "x"}))
    message = str(info.value)
    assert "2 problems" in message
    assert "  - pretraining.instance_count: must be >= 1, got 0" in message


def test_configuration_reference_is_current() -> None:
    """docs/configuration.md is generated from the model; regenerate with `make docs-config`."""
    committed = (ROOT / "docs" / "configuration.md").read_text()
    assert committed == render_reference()


def test_every_profile_key_is_documented() -> None:
    reference = render_reference()
    for cls in (
        PlatformConfig,
        PretrainingConfig,
        PostTrainingConfig,
        InferenceConfig,
        CapacityConfig,
        PostTrainingStorageConfig,
    ):
        for field in dataclasses.fields(cls):
            if field.name != "name" or cls is PlatformConfig:
                assert f"| `{field.name}` |" in reference, field.name


def test_instance_type_must_be_catalogued() -> None:
    (problem,) = problems_of(profile_with(**{"pretraining.instance_type": "p9.96xlarge"}))
    assert problem.startswith("pretraining.instance_type: must be an accelerated instance type")
    assert "'p9.96xlarge'" in problem
    assert "p5.48xlarge" in problem


def test_instance_type_must_support_efa() -> None:
    problems = "\n".join(problems_of(profile_with(**{"pretraining.instance_type": "m7i.48xlarge"})))
    assert "pretraining.instance_type" in problems
    assert "'m7i.48xlarge'" in problems


def test_explicit_fsx_settings_follow_fsx_rules() -> None:
    problems = problems_of(
        profile_with(
            **{
                "pretraining.storage.storage_capacity_gib": 3000,
                "pretraining.storage.throughput_mb_s_per_tib": 300,
                "pretraining.storage.metadata_iops": 2000,
            }
        )
    )
    joined = "\n".join(problems)
    assert "pretraining.storage.storage_capacity_gib:" in joined
    assert "got 3000" in joined
    assert "pretraining.storage.throughput_mb_s_per_tib: for PERSISTENT_2 must be one of" in joined
    assert "pretraining.storage.metadata_iops:" in joined


def test_sizing_request_needs_a_write_time_target() -> None:
    (problem,) = problems_of(profile_with(**{"pretraining.storage.checkpoint_size_gib": 500}))
    assert problem.startswith("pretraining.storage.checkpoint_write_seconds: a sizing request")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("reservation_id", "cr-123"),
        ("resource_group_arn", "arn:aws:ec2:us-west-2:111122223333:group/x"),
    ],
)
def test_capacity_identifiers_are_checked(key: str, value: str) -> None:
    (problem,) = problems_of(
        profile_with(**{"pretraining.capacity.kind": "odcr", f"pretraining.capacity.{key}": value})
    )
    assert problem.startswith(f"pretraining.capacity.{key}: must be a")
    assert f"got {value!r}" in problem


def test_training_plan_arn_form_is_checked() -> None:
    (problem,) = problems_of(
        profile_with(
            **{
                "pretraining.orchestrator": "hyperpod-slurm",
                "pretraining.capacity.kind": "training-plan",
                "pretraining.capacity.training_plan_arn": "plan-1",
            }
        )
    )
    assert problem.startswith("pretraining.capacity.training_plan_arn: must be a SageMaker")


def test_all_workloads_must_fit_the_gpu_subnet() -> None:
    data = profile_with(
        **{
            "platform.vpc_cidr": "10.0.0.0/22",
            "pretraining.instance_count": 2,
            "inference.enabled": True,
            "inference.instance_type": "g6e.48xlarge",
            "inference.instance_count": 1,
            "inference.max_instance_count": 2,
        }
    )
    (problem,) = problems_of(data)  # an error when the profile loads
    # a /22 VPC gives /24 private subnets: 256 - 5 reserved = 251 usable addresses. Each p5
    # node takes 50 (VPC CNI: one card-0 ENI), each g6e.48xlarge 450 (9 ENIs), and inference
    # is counted at its autoscaling maximum of 2.
    assert problem.startswith("platform.vpc_cidr: the private subnet /24 in us-west-2b")
    assert "pretraining 2 x 50 = 100" in problem
    assert "inference 2 x 450 = 900" in problem
    assert "has 251 usable" in problem
    assert "interface endpoints 12" in problem
    assert "got '10.0.0.0/22'; give platform.vpc_cidr a /19 or larger" in problem
    assert check_scale(parse_profile(BASE)) == []


#: (key set on the wrong workload, its value, the tables that take it)
KEYS_OF_ANOTHER_KIND = [
    ("pretraining.model", {"model_s3_prefix": "models/m/"}, "[inference]"),
    ("pretraining.autoscaling", {"enabled": False}, "[inference]"),
    ("pretraining.load_balancer", "none", "[inference]"),
    ("post_training.max_instance_count", 4, "[inference]"),
    ("pretraining.rollout", {"enabled": True, "instance_type": "g6e.48xlarge"}, "[post_training]"),
    ("inference.training_goal", {"target_mfu": 0.5}, "[pretraining] or [post_training]"),
    ("inference.rollout", {"enabled": False}, "[post_training]"),
    ("pretraining.storage.reuse_pretraining", True, "[post_training.storage]"),
    ("inference.storage.reuse_pretraining", False, "[post_training.storage]"),
]


@pytest.mark.parametrize(("key", "value", "where"), KEYS_OF_ANOTHER_KIND)
def test_a_key_of_another_workload_kind_is_an_error_naming_where_it_belongs(
    tmp_path: Path, key: str, value: Any, where: str
) -> None:
    """Each workload kind has its own model: a key of another kind is one line naming the
    file, the key, the value, what the table takes and the fix, whatever its value."""
    data = profile_with(**{"inference.enabled": False, "post_training.enabled": False, key: value})
    path = tmp_path / "profile.toml"
    path.write_text(to_toml(data) + "\n", encoding="utf-8")
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    (finding,) = raised.value.findings
    assert raised.value.context == f"profile {path}"
    assert (finding.code, finding.key, finding.value) == ("FM010", key, value)
    leaf, table = key.rsplit(".", 1)[1], key.rsplit(".", 1)[0]
    assert finding.allowed.startswith(f"only {where} takes {leaf!r}; [{table}] takes ")
    assert finding.fix == f"remove it, or move it to {where}"
    assert "instance_type" in finding.allowed or "storage" in key


def test_each_workload_kind_takes_only_its_own_keys() -> None:
    """The typed models: inference-only keys exist on inference only, the rollout group and
    file-system reuse on post-training only, the training goal on the training workloads."""
    profile = parse_profile(BASE)
    assert isinstance(profile.pretraining, PretrainingConfig)
    assert isinstance(profile.post_training, PostTrainingConfig)
    assert isinstance(profile.inference, InferenceConfig)
    for attribute in ("model", "autoscaling", "load_balancer", "max_instance_count", "rollout"):
        assert not hasattr(profile.pretraining, attribute), attribute
    assert not hasattr(profile.inference, "training_goal")
    assert not hasattr(profile.inference, "rollout")
    assert not hasattr(profile.pretraining.storage, "reuse_pretraining")
    assert profile.pretraining.rollout_group is None and profile.inference.rollout_group is None
    assert profile.pretraining.storage.enabled and not profile.inference.storage.enabled


def test_rollout_needs_an_efa_type() -> None:
    data = profile_with(
        **{
            "post_training.enabled": True,
            "post_training.instance_type": "p5en.48xlarge",
            "post_training.rollout.enabled": True,
            "post_training.rollout.instance_type": "g6e.4xlarge",
        }
    )
    (problem,) = problems_of(data)
    assert problem.startswith("post_training.rollout.instance_type: must support EFA")


def test_reuse_needs_a_pretraining_file_system_and_no_size() -> None:
    data = profile_with(
        **{
            "pretraining.storage.enabled": False,
            "post_training.enabled": True,
            "post_training.instance_type": "p5en.48xlarge",
            "post_training.storage.reuse_pretraining": True,
            "post_training.storage.storage_capacity_gib": 2400,
        }
    )
    problems = "\n".join(problems_of(data))
    assert "needs an enabled pretraining workload with storage enabled" in problems
    assert "a reused file system takes no size of its own" in problems


def test_training_goal_needs_both_numbers_and_a_fraction() -> None:
    problems = problems_of(
        profile_with(
            **{
                "pretraining.training_goal.model_parameters_billion": 70,
                "pretraining.training_goal.target_mfu": 40,
            }
        )
    )
    joined = "\n".join(problems)
    assert "pretraining.training_goal.target_mfu: must be above 0 and at most 1, got 40.0" in joined
    assert "pretraining.training_goal: give model_parameters_billion and training_tokens" in joined


def test_default_profile_states_its_training_goal() -> None:
    goal = load_profile(ROOT / "config" / "default.toml").pretraining.training_goal
    assert goal.is_set
    assert (goal.model_parameters_billion, goal.training_tokens_billion) == (70, 2000)


def test_backups_are_refused_on_s3_linked_file_systems() -> None:
    (problem,) = problems_of(profile_with(**{"pretraining.storage.backup_retention_days": 7}))
    assert problem.startswith("pretraining.storage.backup_retention_days: FSx does not back up")
    assert parse_profile(BASE).pretraining.storage.backup_retention_days == 0


def test_launch_template_versions_are_optional_pins() -> None:
    assert parse_profile(BASE).pretraining.launch_template_version is None
    profile = parse_profile(profile_with(**{"pretraining.launch_template_version": 4}))
    assert profile.pretraining.launch_template_version == 4
    assert problems_of(profile_with(**{"pretraining.launch_template_version": 0})) == (
        "pretraining.launch_template_version: must be >= 1, got 0",
    )
