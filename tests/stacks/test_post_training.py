"""Post-training wiring: an RL rollout group beside the trainers, and the pre-training file
system reused (mounted, reachable) instead of a second one."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk.assertions import Match, Template

from fm_constructs.config import parse_profile
from fm_constructs.policy import enable_nag
from stacks.app_builder import build_stacks, create_app
from tests.stacks.profiles import cdk_json_context

PROFILE: dict[str, Any] = {
    "platform": {
        "name": "pt",
        "region": "us-east-1",
        "availability_zone": "us-east-1a",
        "availability_zones": ["us-east-1a", "us-east-1b"],
        "observability": False,
    },
    "pretraining": {
        "enabled": True,
        "instance_type": "p5.48xlarge",
        "instance_count": 2,
        "storage": {"storage_capacity_gib": 2400, "throughput_mb_s_per_tib": 250},
    },
    "post_training": {
        "enabled": True,
        "instance_type": "p5en.48xlarge",
        "instance_count": 2,
        "rollout": {"enabled": True, "instance_type": "g6e.48xlarge", "instance_count": 3},
        "storage": {"reuse_pretraining": True},
    },
}


@pytest.fixture(scope="module")
def templates() -> dict[str, Template]:
    app = create_app(context=cdk_json_context())
    stacks = build_stacks(app, parse_profile(PROFILE))
    enable_nag(app)
    app.synth()
    return {stack.stack_name: Template.from_stack(stack) for stack in stacks.all}


def test_post_training_creates_no_second_file_system(templates: dict[str, Template]) -> None:
    templates["pt-pretraining"].resource_count_is("AWS::FSx::FileSystem", 1)
    assert "pt-post-training" not in templates  # nothing of its own to keep
    templates["pt-post-training-compute"].resource_count_is("AWS::FSx::FileSystem", 0)


def test_reused_file_system_is_mounted_from_the_pretraining_stack(
    templates: dict[str, Template],
) -> None:
    post = templates["pt-post-training-compute"].to_json()
    manifests = [
        r
        for r in post["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-KubernetesResource"
        and "PersistentVolume" in json.dumps(r["Properties"]["Manifest"])
    ]
    assert manifests, "no PersistentVolume manifest for the reused file system"
    assert "Fn::ImportValue" in json.dumps(manifests[0]["Properties"]["Manifest"])


def test_post_training_nodes_reach_the_reused_file_system(templates: dict[str, Template]) -> None:
    rules = [
        r["Properties"]
        for t in templates.values()
        for r in t.to_json()["Resources"].values()
        if r["Type"] == "AWS::EC2::SecurityGroupIngress" and r["Properties"].get("FromPort") == 988
    ]
    post_rules = templates["pt-post-training-compute"].find_resources(
        "AWS::EC2::SecurityGroupIngress", {"Properties": {"FromPort": 988}}
    )
    assert len(rules) >= 2
    assert post_rules, "post-training node groups are not allowed to the Lustre port"


def test_rollout_group_is_a_second_labelled_node_group(templates: dict[str, Template]) -> None:
    post = templates["pt-post-training-compute"]
    post.resource_count_is("AWS::EKS::Nodegroup", 2)  # trainers, rollout (system: pt-cluster)
    post.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {
            "Labels": Match.object_like({"workload-role": "rollout"}),
            "ScalingConfig": {"DesiredSize": 3, "MinSize": 3, "MaxSize": 3},
        },
    )


def test_two_slurm_clusters_on_one_efa_file_system_share_its_efa_connections() -> None:
    """Pre-training and a post-training cluster reusing its EFA-enabled file system: LNet on
    each node keeps to a share of the 1,024 EFA connections counted over both clusters."""
    profile = {
        **PROFILE,
        "platform": {**PROFILE["platform"], "name": "pts"},
        "pretraining": {
            **PROFILE["pretraining"],
            "orchestrator": "hyperpod-slurm",
            "instance_count": 200,
            "storage": {
                "storage_capacity_gib": 4800,
                "throughput_mb_s_per_tib": 1000,
                "efa_enabled": True,
            },
        },
        "post_training": {
            **PROFILE["post_training"],
            "orchestrator": "hyperpod-slurm",
            "instance_count": 100,
            "rollout": {"enabled": False},
        },
    }
    app = create_app(context=cdk_json_context())
    stacks = build_stacks(app, parse_profile(profile))
    interfaces = {}
    for name, stack in stacks.workloads.items():
        assert stack.compute is not None
        (workers,) = stack.compute.cluster.lifecycle.parameters["worker_groups"]
        interfaces[name] = workers["lnet_efa_interfaces"]
    # 300 EFA nodes in all: 1024 // 300 = 3 interfaces each (8 each would need 2,400).
    assert interfaces == {"pretraining": 3, "post_training": 3}
