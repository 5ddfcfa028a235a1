"""The stacks of each profile are wired to each other: references resolve, workloads depend on
the platform only, nodes reach FSx, metrics flow to the shared Prometheus workspace."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from fm_constructs.config import Orchestrator
from tests.stacks.profiles import profile_params, synthesize

LUSTRE_PORTS = {(988, 988), (1018, 1023)}


def _imports(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if "Fn::ImportValue" in node:
            yield node["Fn::ImportValue"]
        for value in node.values():
            yield from _imports(value)
    elif isinstance(node, list):
        for value in node:
            yield from _imports(value)


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


@pytest.mark.parametrize("profile", profile_params())
def test_every_import_has_an_export_of_the_platform_stack(profile: str) -> None:
    result = synthesize(profile)
    platform = f"{result.profile.platform.name}-platform"
    exports = {
        output["Export"]["Name"]
        for output in result.templates[platform].get("Outputs", {}).values()
        if "Export" in output
    }
    for stack, template in result.templates.items():
        for name in _imports(template):
            assert name in exports, f"{stack} imports {name}, which {platform} does not export"


@pytest.mark.parametrize("profile", profile_params())
def test_workload_stacks_deploy_side_by_side(profile: str) -> None:
    """No workload stack waits for another (unless post-training reuses the file system)."""
    result = synthesize(profile)
    for workload, stack in result.stacks.workloads.items():
        dependencies = {d.stack_name for d in stack.dependencies}
        reuse = result.profile.post_training.storage.reuse_pretraining
        allowed = {result.stacks.platform.stack_name}
        if workload == "post_training" and reuse:
            allowed.add(result.stacks.workloads["pretraining"].stack_name)
        assert dependencies <= allowed, (workload, dependencies)


@pytest.mark.parametrize("profile", profile_params())
def test_nodes_reach_their_file_system_on_the_lustre_ports(profile: str) -> None:
    result = synthesize(profile)
    for workload, stack in result.stacks.workloads.items():
        if stack.file_system is None or not stack.owns_file_system:
            continue
        template = result.templates[stack.stack_name]
        (fs_group,) = (
            k for k in _resources(template, "AWS::EC2::SecurityGroup") if "FileSystem" in k
        )
        sources: dict[str, set[tuple[int, int]]] = {}
        for rule in _resources(template, "AWS::EC2::SecurityGroupIngress").values():
            props = rule["Properties"]
            if props["GroupId"] != {"Fn::GetAtt": [fs_group, "GroupId"]}:
                continue
            source = json.dumps(props.get("SourceSecurityGroupId"))
            sources.setdefault(source, set()).add((props["FromPort"], props["ToPort"]))
        clients = {s for s, ports in sources.items() if ports >= LUSTRE_PORTS and fs_group not in s}
        if result.profile.workloads_by_name[workload].orchestrator is Orchestrator.EKS:
            assert any("ClusterSecurityGroupId" in s for s in clients), (workload, sources)
        else:
            assert any("HyperPod" in s for s in clients), (workload, sources)


@pytest.mark.parametrize("profile", profile_params())
def test_metrics_reach_the_shared_workspace(profile: str) -> None:
    result = synthesize(profile)
    if not result.profile.platform.observability:
        pytest.skip("observability off in this profile")
    for workload, stack in result.stacks.workloads.items():
        template = result.templates[stack.stack_name]
        orchestrator = result.profile.workloads_by_name[workload].orchestrator
        if orchestrator is Orchestrator.HYPERPOD_SLURM:
            statements = [
                s
                for p in _resources(template, "AWS::IAM::Policy").values()
                for s in p["Properties"]["PolicyDocument"]["Statement"]
                if "aps:RemoteWrite" in json.dumps(s["Action"])
            ]
            assert statements, f"{workload}: no role may remote-write"
            assert "Prometheus" in json.dumps(statements[0]["Resource"])
            continue
        (cluster,) = _resources(template, "AWS::EKS::Cluster")
        (scraper,) = _resources(template, "AWS::APS::Scraper").values()
        source = scraper["Properties"]["Source"]["EksConfiguration"]
        assert source["ClusterArn"] == {"Fn::GetAtt": [cluster, "Arn"]}
        assert len(source["SubnetIds"]) >= 2
        destination = json.dumps(scraper["Properties"]["Destination"])
        assert "Prometheus" in destination
