"""The EKS node group rules called on plain arguments, without a construct or a synthesis."""

from __future__ import annotations

from aws_cdk import Fn, Token

from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.rules import node_groups
from fm_constructs.rules.constructs import NODE_GROUP

_OK = {
    "subnet_zone": "us-east-1a",
    "subnet_path": "Stack/Vpc/Private1",
    "subnet_is_public": False,
    "gpu_zone": "us-east-1a",
    "capacity_kind": CapacityKind.ODCR,
    "reserved_zone": "us-east-1a",
    "training_plan_arn": None,
    "sizes": (0, 2, 4),
    "labels": {"team": "a"},
    "max_parallel_repairs": 1,
}


def test_a_valid_node_group_has_no_findings() -> None:
    assert node_groups.efa_node_group(**_OK) == []  # type: ignore[arg-type]
    assert node_groups.node_count_given(2) == []
    assert node_groups.rolling_update(None, None) == []
    assert node_groups.rolling_update(None, 50) == []


def test_node_group_findings_carry_its_code_and_keys() -> None:
    found = node_groups.efa_node_group(
        **{  # type: ignore[arg-type]
            **_OK,
            "subnet_zone": "us-east-1b",
            "subnet_is_public": True,
            "capacity_kind": CapacityKind.TRAINING_PLAN,
            "sizes": (3, 2, 4),
            "labels": {"nvidia.com/gpu.present": "true"},
            "max_parallel_repairs": 0,
        }
    )
    assert {f.code for f in found} == {NODE_GROUP}
    assert [f.key for f in found] == [
        "subnet",
        "subnet",
        "subnet",
        "capacity",
        "min_node_count/node_count/max_node_count",
        "labels['nvidia.com/gpu.present']",
        "max_parallel_repairs",
    ]
    assert found[0].value == "us-east-1b (Stack/Vpc/Private1)"


def test_a_size_that_is_not_a_number_is_named_and_a_token_zone_is_skipped() -> None:
    found = node_groups.efa_node_group(**{**_OK, "sizes": (0, "2", 4)})  # type: ignore[arg-type]
    assert [(f.key, f.allowed) for f in found] == [
        ("node_count", "must be a whole number (an int, not a string)")
    ]
    token_zone = {**_OK, "reserved_zone": "${Token[TOKEN.3]}", "subnet_zone": "us-east-1a"}
    assert node_groups.efa_node_group(**token_zone) == []  # type: ignore[arg-type]


def test_a_fractional_size_is_refused_and_a_number_token_is_skipped() -> None:
    """Node counts are whole numbers, as every other count rule has it (a float such as 2.5
    is refused, not rounded by EKS at deploy time); a CDK number token is left to deploy."""
    found = node_groups.efa_node_group(**{**_OK, "sizes": (0, 2.5, 4.0)})  # type: ignore[arg-type]
    assert [(f.key, f.value) for f in found] == [("node_count", 2.5), ("max_node_count", 4.0)]
    assert {f.allowed for f in found} == {"must be a whole number (an int, not a string)"}
    token = Token.as_number(Fn.ref("MaxNodes"))
    assert node_groups.efa_node_group(**{**_OK, "sizes": (0, 2, token)}) == []  # type: ignore[arg-type]


def test_a_string_token_size_is_refused_like_any_string() -> None:
    """A string token is no count either: refused here, not left to the node group's own
    type check (a TypeError from the CDK, not a finding)."""
    token = Token.as_string(Fn.ref("Nodes"))
    found = node_groups.efa_node_group(**{**_OK, "sizes": (0, token, 4)})  # type: ignore[arg-type]
    assert [(f.key, f.allowed) for f in found] == [
        ("node_count", "must be a whole number (an int, not a string)")
    ]


def test_node_count_and_rolling_update() -> None:
    (missing,) = node_groups.node_count_given(None)
    assert missing.message() == (
        "node_count: is required: the number of nodes the group starts with, got None"
    )
    found = node_groups.rolling_update(0, 101)
    assert [f.key for f in found] == [
        "max_unavailable / max_unavailable_percentage",
        "max_unavailable",
        "max_unavailable_percentage",
    ]
