"""The bad profiles of the user-experience review: each is caught when the profile loads, with
the file and the key path, and `fmc plan` and `cdk synth` (app.py) print the same line."""

from __future__ import annotations

import io
import json
import tomllib
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.config import load_profile
from fm_constructs.errors import FmValidationError
from tests.profile_data import DELETE, changed, to_toml
from tests.unit.cli_stubs import run

#: An ACM certificate of the profiles' Region (us-east-1).
CERTIFICATE = "arn:aws:acm:us-east-1:111122223333:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"

ROOT = Path(__file__).resolve().parents[2]
DEFAULT = tomllib.loads((ROOT / "config" / "default.toml").read_text(encoding="utf-8"))
ONLY_INFERENCE = {"pretraining.enabled": False, "post_training.enabled": False}


def _profile(tmp_path: Path, changes: dict[str, Any]) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(to_toml(changed(DEFAULT, changes)) + "\n", encoding="utf-8")
    return path


TRAINING_PLAN = {
    "pretraining.orchestrator": "hyperpod-slurm",
    "pretraining.capacity": {
        "kind": "training-plan",
        "training_plan_arn": "arn:aws:sagemaker:eu-west-1:444455556666:training-plan/other",
    },
    "platform.account": "111122223333",
}

#: Row 11: 64 p5 nodes in a /22 VPC (a /24 private subnet).
ROW_11 = {"pretraining.instance_count": 64, "platform.vpc_cidr": "10.0.0.0/22"}
#: Row 11b: the legacy layout (an address on every EFA interface) in a /20, pods in the node
#: subnet: 8 p5 nodes do not fit, with efa-only they do.
ROW_11B = {
    "pretraining.efa_layout": "legacy",
    "pretraining.instance_count": 8,
    "platform.vpc_cidr": "10.0.0.0/20",
    "platform.pod_networking": "node-subnet",
    "post_training.enabled": False,
    "inference.enabled": False,
}


def _reservations(*counts: int, **extra: Any) -> dict[str, Any]:
    """A 1,024 x p5 pool on one ODCR per managed node group (each in its placement group)."""
    return {
        "pretraining.instance_count": 1024,
        "pretraining.max_pods_per_node": 16,
        "pretraining.capacity": {
            "kind": "odcr",
            "node_groups": [
                {
                    "reservation_id": f"cr-0{i}23456789abcdef0",
                    "placement_group_arn": (
                        f"arn:aws:ec2:us-east-1:111122223333:placement-group/fm-pg-{i}"
                    ),
                    "instance_count": count,
                }
                for i, count in enumerate(counts)
            ],
            **extra,
        },
    }


#: (review row, profile changes, expected key path, code, a fragment of the line)
ERRORS: list[tuple[str, dict[str, Any], str, str, str]] = [
    (
        "06b",
        {"platform.availability_zone": "us-east-1g"},
        "platform.availability_zone",
        "FM102",
        "us-east-1f",
    ),
    (
        "04",
        {"pretraining.instance_type": "p9.96xlarge"},
        "pretraining.instance_type",
        "FM301",
        "catalogued types",
    ),
    (
        "05",
        {"pretraining.instance_type": "c5n.18xlarge"},
        "pretraining.instance_type",
        "FM301",
        "without the accelerators",
    ),
    (
        "05b",
        {"pretraining.instance_type": "g5.xlarge"},
        "pretraining.instance_type",
        "FM302",
        "choose one of",
    ),
    (
        "14b",
        {"platform.admin_role_arns": ["PlatformAdmin"]},
        "platform.admin_role_arns[0]",
        "FM202",
        "IAM role ARN",
    ),
    (
        "14b",
        {"platform.admin_role_arns": ["arn:aws:iam::111122223333:user/alice"]},
        "platform.admin_role_arns[0]",
        "FM202",
        "an IAM user",
    ),
    (
        "14c",
        {
            "platform.account": "444455556666",
            "platform.admin_role_arns": ["arn:aws:iam::111122223333:role/Admin"],
        },
        "platform.admin_role_arns[0]",
        "FM207",
        "must be a role of the account 444455556666",
    ),
    (
        "15",
        {"inference.model.tensor_parallel_size": 16},
        "inference.model.tensor_parallel_size",
        "FM502",
        "stays within one node",
    ),
    (
        "16",
        {
            **ONLY_INFERENCE,
            "inference.model.replicas": 5,
            "inference.model.max_replicas": 5,
            "inference.max_instance_count": DELETE,
        },
        "inference.max_instance_count",
        "FM505",
        "need 5 g6e.48xlarge nodes",
    ),
    (
        "21",
        {"platform.kubernetes_version": "1.29"},
        "platform.kubernetes_version",
        "FM201",
        "1.34, 1.35, 1.36",
    ),
    (
        "21b",
        {"platform.kubernetes_version": 1.35},
        "platform.kubernetes_version",
        "FM002",
        'quote it: kubernetes_version = "1.35"',
    ),
    (
        "22",
        {
            "platform.region": "us-east-9",
            "platform.availability_zone": "us-east-9a",
            "platform.availability_zones": ["us-east-9a", "us-east-9b"],
        },
        "platform.region",
        "FM101",
        "must be an AWS region",
    ),
    (
        "30",
        {**ONLY_INFERENCE, "inference.instance_type": "trn1.32xlarge"},
        "inference.instance_type",
        "FM501",
        "NVIDIA",
    ),
    (
        "35",
        {"platform.public_access_cidrs": ["0.0.0.0/0"]},
        "platform.public_access_cidrs[0]",
        "FM204",
        "whole internet",
    ),
    (
        "35",
        {"platform.public_access_cidrs": ["not-a-cidr"]},
        "platform.public_access_cidrs[0]",
        "FM204",
        "CIDR block",
    ),
    (
        "40",
        {
            "platform.region": "cn-north-1",
            "platform.availability_zone": "cn-north-1a",
            "platform.availability_zones": ["cn-north-1a", "cn-north-1b"],
            "platform.admin_role_arns": ["arn:aws-cn:iam::111122223333:role/Admin"],
        },
        "platform.region",
        "FM103",
        "Amazon Managed Service for Prometheus",
    ),
    (
        "41",
        TRAINING_PLAN,
        "pretraining.capacity.training_plan_arn",
        "FM315",
        "platform.region 'us-east-1'",
    ),
    (
        "41",
        TRAINING_PLAN,
        "pretraining.capacity.training_plan_arn",
        "FM315",
        "must belong to platform.account '111122223333' (this one is in '444455556666')",
    ),
    (
        # Row 41 for EC2 capacity: a reservation group or placement group of another region.
        "41-odcr",
        {
            "pretraining.capacity": {
                "kind": "odcr",
                "resource_group_arn": "arn:aws:resource-groups:eu-west-1:111122223333:group/g",
            }
        },
        "pretraining.capacity.resource_group_arn",
        "FM315",
        "must be a resource group of platform.region 'us-east-1' (this one is in 'eu-west-1')",
    ),
    (
        "41-placement-group",
        _reservations(342, 341, 341) | {"platform.account": "444455556666"},
        "pretraining.capacity.node_groups[0].placement_group_arn",
        "FM315",
        "must belong to platform.account '444455556666' (this one is in '111122223333')",
    ),
    (
        "43",
        {"inference.model.tensor_parallel_size": 3},
        "inference.model.tensor_parallel_size",
        "FM503",
        "must divide the 8 GPUs",
    ),
    (
        "11",
        ROW_11,
        "platform.vpc_cidr",
        "FM606",
        "give platform.vpc_cidr a /17 or larger",
    ),
    (
        "11b",
        ROW_11B,
        "platform.vpc_cidr",
        "FM606",
        "use efa_layout = 'efa-only'",
    ),
    (
        "12",
        {"post_training.storage.storage_capacity_gib": -1200},
        "post_training.storage.storage_capacity_gib",
        "FM401",
        "must be 1200, 2400, or a multiple of 2400 GiB",
    ),
    (
        # A 10/8 VPC cannot take a block from another RFC 1918 range (Amazon VPC User Guide,
        # IPv4 CIDR block association restrictions): refused at load, not at deploy.
        "n-cs-5",
        {
            "platform.vpc_cidr": "10.0.0.0/16",
            "platform.pod_networking": "custom-networking",
            "platform.pod_cidr": "192.168.0.0/16",
        },
        "platform.pod_cidr",
        "FM601",
        "must lie in 10.0.0.0/8 or 100.64.0.0/10",
    ),
    (
        "n-cs-5b",
        {"platform.vpc_cidr": "10.1.0.0/16", "platform.pod_cidr": "10.0.0.0/16"},
        "platform.pod_cidr",
        "FM601",
        "primary block is in 10.0.0.0/15",
    ),
    (
        # 1,024 p5en at 32 pods: 4 whole /28s a node in the pod subnet, 4,096 of 4,094
        "n-cs-3",
        {
            "pretraining.instance_type": "p5en.48xlarge",
            "pretraining.instance_count": 1024,
            "pretraining.max_pods_per_node": 32,
            "platform.pod_networking": "custom-networking",
        },
        "platform.pod_cidr",
        "FM604",
        "short by 34 /28s",
    ),
    (
        # 1,024 p5 at 32 pods cannot share one node subnet, and an EFA pool is never split
        "n-cs-4",
        {"pretraining.instance_count": 1024},
        "pretraining.max_pods_per_node",
        "FM606",
        "set pretraining.max_pods_per_node = 16",
    ),
    (
        # one reservation per managed node group: 1,024 nodes are 3 groups (342, 341, 341)
        "n-cs-2",
        _reservations(512, 512),
        "pretraining.capacity.node_groups",
        "FM310",
        "must list one reservation per managed node group of the pool: 3 for 1,024 nodes",
    ),
    (
        "n-cs-2b",
        _reservations(342, 341, 300),
        "pretraining.capacity.node_groups[2].instance_count",
        "FM310",
        "must hold node group 3's 341 nodes",
    ),
    (
        "n-cs-2c",
        _reservations(342, 341, 341, reservation_id="cr-0123456789abcdef0"),
        "pretraining.capacity.reservation_id",
        "FM310",
        "must be unset with pretraining.capacity.node_groups",
    ),
    (
        "n-cs-2d",
        _reservations(342, 341, 341, create_placement_group=True),
        "pretraining.capacity.create_placement_group",
        "FM310",
        "cannot be true with a placement_group_arn",
    ),
    (
        "n-cs-2e",
        {
            "pretraining.capacity": {
                "kind": "odcr",
                "node_groups": [{"reservation_id": "cr-1", "instance_count": 4}],
            }
        },
        "pretraining.capacity.node_groups[0].reservation_id",
        "FM311",
        "cr-",
    ),
    (
        "n-cs-2f",
        {"pretraining.capacity": {"kind": "on-demand", "create_placement_group": True}},
        "pretraining.capacity.create_placement_group",
        "FM310",
        "does not apply to kind 'on-demand'",
    ),
    (
        "45b",  # a number in quotes
        {"pretraining.instance_count": "2"},
        "pretraining.instance_count",
        "FM002",
        "must be an integer, got '2'; write it without quotes: instance_count = 2",
    ),
    (
        "vpc-cidr",
        {"platform.vpc_cidr": "10.0.0.0/12"},
        "platform.vpc_cidr",
        "FM105",
        "must have a prefix between /16 and /24, got '10.0.0.0/12'; use a block such as "
        "'10.0.0.0/16'",
    ),
    (
        "24",
        {"inference.model.gpu_memory_utilization": 1.5},
        "inference.model.gpu_memory_utilization",
        "FM509",
        "got 1.5; leave it unset for 0.9",
    ),
    (
        "31c",
        {"platform.availability_zones": ["use1-az1", "use1-az2"]},
        "platform.availability_zones[0]",
        "FM102",
        "not a zone ID",
    ),
    (
        "issue-33",  # 70B on one 48 GB L40S: the weights alone need 130 GiB
        {
            **ONLY_INFERENCE,
            "inference.instance_type": "g6e.2xlarge",
            "inference.instance_count": 1,
            "inference.max_instance_count": 1,
            "inference.model.tensor_parallel_size": 1,
            "inference.model.replicas": 1,
            "inference.model.max_replicas": 1,
        },
        "inference.model.tensor_parallel_size",
        "FM511",
        "use an instance type with 4 GPUs (g6e.12xlarge) and set tensor_parallel_size = 4",
    ),
    (
        "sec-6",
        {"inference.load_balancer": "internet-facing"},
        "inference.load_balancer_source_ranges",
        "FM512",
        "must list the client ranges",
    ),
    (
        "sec-6b",
        {
            "inference.load_balancer": "internet-facing",
            "inference.load_balancer_source_ranges": ["0.0.0.0/1", "128.0.0.0/1"],
        },
        "inference.load_balancer_source_ranges",
        "FM512",
        "more than a /8",
    ),
    (
        "sec-6c",
        {
            "inference.load_balancer": "internet-facing",
            "inference.load_balancer_source_ranges": ["203.0.113.0/24"],
        },
        "inference.tls_certificate_arn",
        "FM513",
        "must name an ACM certificate for an internet-facing endpoint",
    ),
    (
        "sec-6d",
        {"inference.tls_certificate_arn": CERTIFICATE.replace("us-east-1", "eu-west-1")},
        "inference.tls_certificate_arn",
        "FM513",
        "must be a certificate of the endpoint's Region",
    ),
    (
        "sec-5",
        {
            "platform.admin_role_arns": ["arn:aws:iam::111122223333:role/Admin"],
            "pretraining.submitter_role_arns": ["arn:aws:iam::111122223333:role/Admin"],
        },
        "pretraining.submitter_role_arns[0]",
        "FM011",
        "must not also be in platform.admin_role_arns",
    ),
    (
        "sec-5b",
        {"pretraining.submitter_role_arns": ["arn:aws:iam::111122223333:user/alice"]},
        "pretraining.submitter_role_arns[0]",
        "FM202",
        "must be an IAM role ARN",
    ),
    (
        "sec-10",
        {"platform.public_access_cidrs": ["0.0.0.0/1", "128.0.0.0/1"]},
        "platform.public_access_cidrs",
        "FM204",
        "more than a /8",
    ),
]


def _id(row: tuple[str, dict[str, Any], str, str, str]) -> str:
    return f"{row[0]}-{row[3]}-{row[2]}"


@pytest.mark.parametrize(
    ("row", "changes", "key", "code", "fragment"), ERRORS, ids=map(_id, ERRORS)
)
def test_caught_at_load_with_file_and_key_path(
    tmp_path: Path, row: str, changes: dict[str, Any], key: str, code: str, fragment: str
) -> None:
    path = _profile(tmp_path, changes)
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    error = raised.value
    assert error.context == f"profile {path}"
    matching = [f for f in error.findings if f.key == key and f.code == code]
    assert matching, f"row {row}: {key} [{code}] not among {error.codes}: {error}"
    lines = [f.line() for f in matching if fragment in f.line()]
    assert lines, [f.line() for f in matching]
    line = lines[0]
    assert line.startswith(f"{key}: ") and line.endswith(f"[{code}]")

    # fmc plan: exit 2 (profile error) with the same line and the file.
    plan = run("plan", "--config", str(path))
    assert plan.code == 2, plan.out + plan.err
    assert line in plan.err and str(path) in plan.err

    # cdk synth (app.py's entry point): exit 1 with the same line, before any construct.
    code, text = _synth(path)
    assert code == 1 and line in text


def _synth(path: Path) -> tuple[int, str]:
    """``cdk synth -c config=<path>``: app.py's entry point with the config context value."""
    import app
    from stacks.app_builder import create_app

    monkey = pytest.MonkeyPatch()
    monkey.setattr(app, "create_app", lambda: create_app(context={"config": str(path)}))
    stderr = io.StringIO()
    try:
        with redirect_stderr(stderr):
            code = app.main()
    finally:
        monkey.undo()
    text = stderr.getvalue()
    assert f"profile {path}" in text, text
    return code, text


def test_every_problem_of_a_profile_is_reported_at_once(tmp_path: Path) -> None:
    """Rows 45 and 45b: EKS errors, a profile error and TP 16 all come out together."""
    path = _profile(
        tmp_path,
        {
            "platform.kubernetes_version": "1.29",
            "platform.admin_role_arns": ["PlatformAdmin"],
            "platform.public_access_cidrs": ["0.0.0.0/0"],
            "inference.model.tensor_parallel_size": 16,
            "pretraining.instance_count": 0,
        },
    )
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    assert set(raised.value.codes) >= {"FM201", "FM202", "FM204", "FM502", "FM004"}


#: Profiles with several problems: (review row, profile changes, every (key path, code) the
#: user must get, in order, and nothing else: no knock-on or repeated lines).
ALL_AT_ONCE: list[tuple[str, dict[str, Any], list[tuple[str, str]]]] = [
    (
        # Three problems the EKS cluster construct once found alone, and TP 16.
        "45",
        {
            "platform.kubernetes_version": "1.29",
            "platform.admin_role_arns": ["PlatformAdmin"],
            "platform.public_access_cidrs": ["0.0.0.0/0"],
            "inference.model.tensor_parallel_size": 16,
        },
        [
            ("platform.kubernetes_version", "FM201"),
            ("platform.admin_role_arns[0]", "FM202"),
            ("platform.public_access_cidrs[0]", "FM204"),
            ("inference.model.tensor_parallel_size", "FM502"),
        ],
    ),
    (
        "45b-unknown-key",
        {"platform.regoin": "us-east-1", "inference.model.tensor_parallel_size": 16},
        [("platform.regoin", "FM001"), ("inference.model.tensor_parallel_size", "FM502")],
    ),
    (
        "45b-wrong-type",
        {"pretraining.instance_count": "2", "inference.model.tensor_parallel_size": 16},
        [
            ("pretraining.instance_count", "FM002"),
            ("inference.model.tensor_parallel_size", "FM502"),
        ],
    ),
    (
        # A value of the wrong type, and two values only the VPC and FSx constructs once
        # refused.
        "45b-construct-checks",
        {
            "platform.kubernetes_version": 1.35,
            "platform.vpc_cidr": "10.0.0.0/12",
            "post_training.storage.storage_capacity_gib": -1200,
        },
        [
            ("platform.vpc_cidr", "FM105"),
            ("platform.kubernetes_version", "FM002"),
            ("post_training.storage.storage_capacity_gib", "FM401"),
        ],
    ),
    (
        "17",
        {"pretraining.instance_type": DELETE, "pretraining.instance_typ": "p5.48xlarge"},
        [("pretraining.instance_typ", "FM001")],
    ),
    (
        "21b",
        {"platform.kubernetes_version": 1.35},
        [("platform.kubernetes_version", "FM002")],
    ),
    (
        "24",
        {"inference.model.gpu_memory_utilization": 1.5, "inference.model.model_s3_prefix": "x"},
        [
            ("inference.model.gpu_memory_utilization", "FM509"),
            ("inference.model.model_s3_prefix", "FM005"),
        ],
    ),
    (
        "31c",
        {"platform.availability_zones": ["use1-az1", "use1-az2"]},
        [("platform.availability_zones[0]", "FM102"), ("platform.availability_zones[1]", "FM102")],
    ),
    (
        # A zone the region lacks: its own line for each key holding it, no "is not listed".
        "06b-both-keys",
        {
            "platform.availability_zone": "us-east-1g",
            "platform.availability_zones": ["us-east-1a", "us-east-1g"],
        },
        [("platform.availability_zones[1]", "FM102"), ("platform.availability_zone", "FM102")],
    ),
]


@pytest.mark.parametrize(
    ("row", "changes", "expected"), ALL_AT_ONCE, ids=[row[0] for row in ALL_AT_ONCE]
)
def test_every_problem_at_once_and_nothing_else_everywhere(
    tmp_path: Path, row: str, changes: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    """The loader, `fmc plan` and `cdk synth` give the same lines: one per problem, all in
    one round, none a knock-on of another."""
    path = _profile(tmp_path, changes)
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    error = raised.value
    got = [(f.key, f.code) for f in error.findings]
    assert sorted(got) == sorted(expected), f"row {row}: {error}"
    lines = [f.line() for f in error.findings]

    plan = run("plan", "--config", str(path))
    assert plan.code == 2, plan.out + plan.err
    assert f"profile {path}" in plan.err
    assert [line for line in lines if line in plan.err] == lines, plan.err
    assert plan.err.count("[FM") == len(lines), plan.err

    code, text = _synth(path)
    assert code == 1
    assert [line for line in lines if line in text] == lines, text
    assert text.count("[FM") == len(lines), text


def test_no_knock_on_line_for_a_malformed_key(tmp_path: Path) -> None:
    """Row 24: a malformed model prefix gives its own line, not a false 'got None' beside it."""
    path = _profile(
        tmp_path,
        {"inference.model.gpu_memory_utilization": 1.5, "inference.model.model_s3_prefix": "x"},
    )
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    keys = sorted(f.key for f in raised.value.findings)
    assert keys == ["inference.model.gpu_memory_utilization", "inference.model.model_s3_prefix"]


def test_a_misspelled_key_gives_one_line_with_the_fix(tmp_path: Path) -> None:
    """Row 17: a typo names the key it probably means, without a second 'is required' line."""
    path = _profile(
        tmp_path,
        {"pretraining.instance_type": DELETE, "pretraining.instance_typ": "p5.48xlarge"},
    )
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    (finding,) = raised.value.findings
    assert finding.key == "pretraining.instance_typ" and finding.code == "FM001"
    assert "did you mean 'instance_type'?" in finding.line()


@pytest.mark.parametrize(
    ("row", "changes", "key", "code"),
    [
        ("14", {"platform.admin_role_arns": []}, "platform.admin_role_arns", "FM203"),
        (
            "14",
            {"platform.admin_role_arns": ["arn:aws:iam::111122223333:role/Admin"]},
            "platform.admin_role_arns[0]",
            "FM203",
        ),
        ("18", {**ONLY_INFERENCE, "inference.enabled": False}, "pretraining.enabled", "FM106"),
        ("42", {**ONLY_INFERENCE, "inference.model": DELETE}, "inference.model", "FM506"),
        (
            "fsx-efa-connections",
            {
                "pretraining.orchestrator": "hyperpod-slurm",
                "pretraining.instance_count": 1100,
                "pretraining.storage.efa_enabled": True,
            },
            "pretraining.instance_count",
            "FM316",
        ),
        (
            # EKS nodes with an EFA-enabled file system count like HyperPod's (N-CS-7).
            "fsx-efa-connections-eks",
            {
                "pretraining.instance_count": 1100,
                "pretraining.max_pods_per_node": 16,
                "pretraining.storage.efa_enabled": True,
            },
            "pretraining.instance_count",
            "FM316",
        ),
    ],
)
def test_warnings_load_and_are_shown_by_plan(
    tmp_path: Path, row: str, changes: dict[str, Any], key: str, code: str
) -> None:
    path = _profile(tmp_path, changes)
    profile = load_profile(path)
    matching = [f for f in profile.warnings if f.key == key and f.code == code]
    assert matching, f"row {row}: {[w.line() for w in profile.warnings]}"
    plan = run("plan", "--config", str(path))
    assert matching[0].line() in plan.out
    # cdk synth prints them too (the stacks themselves are built by the profile tests).
    assert f"warning: {matching[0].line()}" in _synth_output_without_stacks(path)


def _synth_output_without_stacks(path: Path) -> str:
    """What app.py's entry point prints for the profile at ``path`` before it builds and
    synthesizes the stacks (both replaced by no-ops here)."""
    import app
    from stacks.app_builder import create_app

    monkey = pytest.MonkeyPatch()
    monkey.setattr(app, "build_stacks", lambda *_: None)
    monkey.setattr(app, "enable_nag", lambda _: None)
    monkey.setattr(app, "create_app", lambda: create_app(context={"config": str(path)}))
    stderr = io.StringIO()
    try:
        with redirect_stderr(stderr):
            assert app.main() == 0
    finally:
        monkey.undo()
    return stderr.getvalue()


def test_a_single_node_model_on_a_gpu_without_efa_is_valid(tmp_path: Path) -> None:
    """Row 46 (U2): g6e.2xlarge (one L40S, no EFA) serves a TP-1 model that fits one GPU (an
    8B model; the default profile's 70B does not fit, FM511); plan shows no EFA."""
    path = _profile(
        tmp_path,
        {
            **ONLY_INFERENCE,
            "inference.instance_type": "g6e.2xlarge",
            "inference.model.tensor_parallel_size": 1,
            "inference.model.model_s3_prefix": "models/llama-3.1-8b-instruct/",
            "inference.model.served_model_name": "llama-3.1-8b-instruct",
        },
    )
    profile = load_profile(path)
    assert profile.inference.instance_type == "g6e.2xlarge"
    plan = run("plan", "--config", str(path), "--json")
    assert plan.code == 0, plan.out + plan.err
    (row,) = json.loads(plan.out)["workloads"]
    assert row["efa_interfaces_per_node"] == 0 and row["efa_layout"] == "none"


def test_a_replica_spanning_nodes_needs_efa(tmp_path: Path) -> None:
    path = _profile(
        tmp_path,
        {
            **ONLY_INFERENCE,
            "inference.instance_type": "g6e.12xlarge",
            "inference.model.tensor_parallel_size": 4,
            "inference.model.pipeline_parallel_size": 2,
            "inference.model.replicas": 1,
            "inference.model.max_replicas": 1,
        },
    )
    spec_has_efa = load_ok = True
    from fm_constructs.catalog import get_instance_type

    spec_has_efa = get_instance_type("g6e.12xlarge").efa_supported
    try:
        load_profile(path)
    except FmValidationError as error:
        load_ok = False
        assert spec_has_efa is False and "FM507" in error.codes
    assert load_ok == spec_has_efa


@pytest.mark.parametrize(
    ("changes", "fix"),
    [
        (ROW_11, {"platform.vpc_cidr": "10.0.0.0/17"}),
        (ROW_11B, {"pretraining.efa_layout": "efa-only"}),
        (
            {"post_training.storage.storage_capacity_gib": -1200},
            {"post_training.storage.storage_capacity_gib": 1200},
        ),
    ],
    ids=["11", "11b", "12"],
)
def test_the_fix_a_line_names_makes_the_profile_load(
    tmp_path: Path, changes: dict[str, Any], fix: dict[str, Any]
) -> None:
    """Rows 11, 11b and 12: the value the message suggests is one the loader accepts."""
    assert load_profile(_profile(tmp_path, {**changes, **fix})).enabled_workloads


PCS_AMI = {"id": "ami-0a1b2c3d4e5f60718", "region": "us-east-1"}
PCS = {"pretraining.orchestrator": "pcs", "pretraining.pcs_ami": PCS_AMI}
PCS_BLOCK = {
    "kind": "capacity-block",
    "reservation_id": "cr-0a1b2c3d4e5f60718",
    "start_time": "2027-01-04T11:30:00Z",
    "end_time": "2027-01-18T11:30:00Z",
}
#: The bad inputs of orchestrator 'pcs' (AWS PCS): (case, changes, key path, code, fragment).
PCS_ERRORS: list[tuple[str, dict[str, Any], str, str, str]] = [
    (
        "pcs-block-smaller-than-group",
        {**PCS, "pretraining.capacity": {**PCS_BLOCK, "reserved_instance_count": 2}},
        "pretraining.instance_count",
        "FM310",
        "reserved_instance_count (2)",
    ),
    (
        "pcs-block-of-unknown-size",
        {**PCS, "pretraining.capacity": PCS_BLOCK},
        "pretraining.capacity.reserved_instance_count",
        "FM336",
        "caps a Capacity Block's node group",
    ),
    (
        "pcs-training-plan",
        {
            **PCS,
            "pretraining.capacity": {
                "kind": "training-plan",
                "training_plan_arn": "arn:aws:sagemaker:us-east-1:111122223333:training-plan/x",
            },
        },
        "pretraining.capacity.kind",
        "FM310",
        "SageMaker HyperPod only",
    ),
    (
        "pcs-kubelet-max-pods",
        {**PCS, "pretraining.max_pods_per_node": 50},
        "pretraining.max_pods_per_node",
        "FM336",
        "Kubernetes",
    ),
    (
        "pcs-dedicated-eks-cluster",
        {**PCS, "pretraining.dedicated_cluster": True},
        "pretraining.dedicated_cluster",
        "FM011",
        "remove the key for 'pcs'",
    ),
    (
        "pcs-no-efa",
        {**PCS, "pretraining.instance_type": "g5.xlarge"},
        "pretraining.instance_type",
        "FM302",
        "must support EFA",
    ),
    (
        "pcs-rollout-group",
        {"post_training.orchestrator": "pcs"},
        "post_training.rollout.enabled",
        "FM336",
        "not built on 'pcs' yet",
    ),
    (
        "pcs-without-a-pinned-ami",
        {"pretraining.orchestrator": "pcs"},
        "pretraining.pcs_ami.id",
        "FM337",
        "fmc pcs-ami --config",
    ),
    (
        "pcs-ami-malformed",
        {**PCS, "pretraining.pcs_ami": {**PCS_AMI, "id": "ami-123"}},
        "pretraining.pcs_ami.id",
        "FM337",
        "ami- followed by 8 or 17",
    ),
    (
        "pcs-ami-of-another-region",
        {**PCS, "pretraining.pcs_ami": {**PCS_AMI, "region": "us-west-2"}},
        "pretraining.pcs_ami.region",
        "FM337",
        "an AMI id names an image in one region only",
    ),
    (
        "pcs-inference",
        {"inference.orchestrator": "pcs"},
        "inference.orchestrator",
        "FM304",
        "must be 'eks'",
    ),
]


@pytest.mark.parametrize(("row", "changes", "key", "code", "fragment"), PCS_ERRORS)
def test_pcs_bad_inputs_are_caught_at_load(
    tmp_path: Path, row: str, changes: dict[str, Any], key: str, code: str, fragment: str
) -> None:
    test_caught_at_load_with_file_and_key_path(tmp_path, row, changes, key, code, fragment)


def test_pcs_refuses_hyperpod_slurm_cluster_users(tmp_path: Path) -> None:
    """Users with homes on FSx are created by the HyperPod Slurm lifecycle scripts only."""
    path = tmp_path / "bad.toml"
    users = '\n[[pretraining.users]]\nname = "alice"\nuid = 2001\n'
    path.write_text(to_toml(changed(DEFAULT, PCS)) + "\n" + users, encoding="utf-8")
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    (finding,) = [f for f in raised.value.findings if f.key == "pretraining.users"]
    assert finding.code == "FM332" and "this one is 'pcs'" in finding.line()


def test_switching_hyperpod_slurm_and_pcs_changes_nothing_else(tmp_path: Path) -> None:
    """The shipped PCS profile loads unchanged under 'hyperpod-slurm' but for the capacity
    kind (HyperPod reserves through training plans), and the other way round."""
    pcs_profile = tomllib.loads((ROOT / "config" / "pcs.toml").read_text(encoding="utf-8"))
    loaded = load_profile(ROOT / "config" / "pcs.toml")
    path = tmp_path / "as-hyperpod.toml"
    as_on_demand = changed(pcs_profile, {"pretraining.capacity": {"kind": "on-demand"}})
    for orchestrator in ("pcs", "hyperpod-slurm"):
        path.write_text(
            to_toml(changed(as_on_demand, {"pretraining.orchestrator": orchestrator})) + "\n",
            encoding="utf-8",
        )
        profile = load_profile(path)
        assert profile.pretraining.orchestrator.value == orchestrator
        assert profile.pretraining.instance_type == loaded.pretraining.instance_type
        assert profile.pretraining.instance_count == loaded.pretraining.instance_count
        assert profile.pretraining.storage == loaded.pretraining.storage
