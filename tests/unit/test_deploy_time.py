"""The deploy-time estimate: longest creation chain within a stack, stacks started as their
dependencies finish, at most N at a time."""

from __future__ import annotations

from typing import Any

import pytest

from fm_constructs.planning.deploy_time import (
    deployment_minutes,
    resource_minutes,
    stack_minutes,
    total_minutes,
)


def _template(**resources: dict[str, Any]) -> dict[str, Any]:
    return {"Resources": resources}


CLUSTER = _template(
    Role={"Type": "AWS::IAM::Role"},
    Cluster={
        "Type": "AWS::EKS::Cluster",
        "Properties": {"RoleArn": {"Fn::GetAtt": ["Role", "Arn"]}},
    },
    Nodes={
        "Type": "AWS::EKS::Nodegroup",
        "Properties": {"ClusterName": {"Ref": "Cluster"}, "AmiType": "AL2023_x86_64_STANDARD"},
    },
    Chart={"Type": "Custom::AWSCDK-EKS-HelmChart", "DependsOn": ["Nodes"]},
)
FILES = _template(Fs={"Type": "AWS::FSx::FileSystem"})


def test_a_stack_takes_its_longest_chain() -> None:
    minutes, path = stack_minutes(CLUSTER)
    assert minutes == pytest.approx(0.1 + 10 + 3 + 2)
    assert path == ["Role", "Cluster", "Nodes", "Chart"]


def test_gpu_node_groups_take_longer_than_cpu_ones() -> None:
    gpu = {"Type": "AWS::EKS::Nodegroup", "Properties": {"AmiType": "AL2023_x86_64_NVIDIA"}}
    cpu = {"Type": "AWS::EKS::Nodegroup", "Properties": {"AmiType": "AL2023_x86_64_STANDARD"}}
    assert resource_minutes(gpu) > resource_minutes(cpu)


def test_stacks_start_when_their_dependencies_are_done() -> None:
    stacks = {
        "platform": (_template(Vpc={"Type": "AWS::EC2::VPC"}), []),
        "cluster": (CLUSTER, ["platform"]),
        "files": (FILES, ["platform"]),
        "compute": (_template(Gpu={"Type": "AWS::EKS::Nodegroup"}), ["cluster", "files"]),
    }
    timings = deployment_minutes(stacks, concurrency=4)
    assert timings["cluster"].start == timings["files"].start == pytest.approx(0.1)
    assert timings["compute"].start == pytest.approx(max(timings["cluster"].end, 15.1))
    assert total_minutes(timings) == pytest.approx(timings["compute"].end)
    serial = deployment_minutes(stacks, concurrency=1)
    assert total_minutes(serial) > total_minutes(timings)


def test_cycles_and_missing_stacks_are_errors() -> None:
    looped = _template(A={"Type": "X", "DependsOn": "B"}, B={"Type": "X", "DependsOn": "A"})
    with pytest.raises(ValueError, match="cycle"):
        stack_minutes(looped)
    with pytest.raises(ValueError, match="never deploy"):
        deployment_minutes({"a": (FILES, ["missing"])})
