"""The stacks of each profile are wired to each other: references resolve, workloads depend on
the platform only, nodes reach FSx, metrics flow to the shared Prometheus workspace."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fm_constructs.config import Orchestrator
from tests.stacks.profiles import profile_params, synthesize
from tests.template_walk import imported_names

LUSTRE_PORTS = {(988, 988), (1018, 1023)}


def _resources(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == kind}


def _exports(template: dict[str, Any]) -> set[str]:
    return {
        output["Export"]["Name"]
        for output in template.get("Outputs", {}).values()
        if "Export" in output
    }


@pytest.mark.parametrize("profile", profile_params())
def test_every_import_has_an_export_of_a_stack_it_depends_on(profile: str) -> None:
    result = synthesize(profile)
    stacks = {s.stack_name: s for s in result.stacks.all}
    for name, template in result.templates.items():
        upstream = {d.stack_name for d in stacks[name].dependencies}
        exports = set().union(*(_exports(result.templates[u]) for u in upstream))
        for imported in imported_names(template):
            assert imported in exports, f"{name} imports {imported}, which {upstream} do not export"


@pytest.mark.parametrize("profile", profile_params())
def test_workload_stacks_deploy_side_by_side(profile: str) -> None:
    """Workload stacks depend on the platform, their cluster and their own file system stack,
    never on another workload (unless post-training reuses the pre-training file system)."""
    result = synthesize(profile)
    stacks = result.stacks
    platform = stacks.platform.stack_name
    reuse = result.profile.post_training.storage.reuse_pretraining
    for workload, options in stacks.options.workloads.items():
        clusters = (
            [
                stacks.clusters[options.cluster].stack_name,
                stacks.cluster_addons[options.cluster].stack_name,
            ]
            if options.cluster
            else []
        )
        allowed = {platform, *clusters}
        if workload == "post_training" and reuse:
            allowed.add(stacks.workloads["pretraining"].stack_name)
        if workload in stacks.workloads:
            storage = stacks.workloads[workload]
            assert {d.stack_name for d in storage.dependencies} <= allowed, workload
            allowed.add(storage.stack_name)
        if workload in stacks.computes:
            compute = stacks.computes[workload]
            assert {d.stack_name for d in compute.dependencies} <= allowed, workload
    for key, cluster_stack in stacks.clusters.items():
        assert {d.stack_name for d in cluster_stack.dependencies} == {platform}, key
        addons = stacks.cluster_addons[key]
        assert {d.stack_name for d in addons.dependencies} == {platform, cluster_stack.stack_name}


@pytest.mark.parametrize("profile", profile_params())
def test_file_systems_deploy_without_waiting_for_a_cluster(profile: str) -> None:
    """FSx (10-15 minutes) is created while the EKS cluster is: an EKS workload's file system
    stack depends on the platform only."""
    result = synthesize(profile)
    for workload, stack in result.stacks.workloads.items():
        if result.profile.workloads_by_name[workload].orchestrator is Orchestrator.EKS:
            assert {d.stack_name for d in stack.dependencies} <= {
                result.stacks.platform.stack_name,
                *(w.stack_name for w in result.stacks.workloads.values()),
            }, workload


@pytest.mark.parametrize("profile", profile_params())
def test_nodes_reach_their_file_system_on_the_lustre_ports(profile: str) -> None:
    result = synthesize(profile)
    for workload, stack in result.stacks.workloads.items():
        if stack.file_system is None or not stack.owns_file_system:
            continue
        orchestrator = result.profile.workloads_by_name[workload].orchestrator
        # Remote rules live in the clients' stack: the compute stack on EKS.
        client_stack = (
            result.stacks.computes[workload].stack_name
            if orchestrator is Orchestrator.EKS
            else stack.stack_name
        )
        template = result.templates[client_stack]
        fs_group_export = json.dumps(
            stack.resolve(stack.file_system.connections.security_groups[0].security_group_id)
        )
        sources: dict[str, set[tuple[int, int]]] = {}
        for rule in _resources(template, "AWS::EC2::SecurityGroupIngress").values():
            props = rule["Properties"]
            group = json.dumps(props["GroupId"])
            if orchestrator is Orchestrator.EKS and "Fn::ImportValue" not in group:
                continue
            if orchestrator is not Orchestrator.EKS and group != fs_group_export:
                continue
            source = json.dumps(props.get("SourceSecurityGroupId"))
            sources.setdefault(source, set()).add((props["FromPort"], props["ToPort"]))
        clients = {s for s, ports in sources.items() if ports >= LUSTRE_PORTS}
        if orchestrator is Orchestrator.EKS:
            assert any("EfaSecurityGroup" in s for s in clients), (workload, sources)
        elif orchestrator is Orchestrator.PCS:
            assert any("PcsEfaSecurityGroup" in s for s in clients), (workload, sources)
            assert any("PcsCluster" in s for s in clients), (workload, sources)
        else:
            assert any("HyperPod" in s for s in clients), (workload, sources)


@pytest.mark.parametrize("profile", profile_params())
def test_metrics_reach_the_shared_workspace(profile: str) -> None:
    result = synthesize(profile)
    if not result.profile.platform.observability:
        pytest.skip("observability off in this profile")
    for workload, stack in result.stacks.workloads.items():
        orchestrator = result.profile.workloads_by_name[workload].orchestrator
        if orchestrator is not Orchestrator.HYPERPOD_SLURM:
            continue
        template = result.templates[stack.stack_name]
        statements = [
            s
            for p in _resources(template, "AWS::IAM::Policy").values()
            for s in p["Properties"]["PolicyDocument"]["Statement"]
            if "aps:RemoteWrite" in json.dumps(s["Action"])
        ]
        assert statements, f"{workload}: no role may remote-write"
        assert "Prometheus" in json.dumps(statements[0]["Resource"])
    for key, monitoring in result.stacks.monitoring.items():
        template = result.templates[monitoring.stack_name]
        (scraper,) = _resources(template, "AWS::APS::Scraper").values()
        source = scraper["Properties"]["Source"]["EksConfiguration"]
        assert "Fn::ImportValue" in json.dumps(source["ClusterArn"]), key
        assert len(source["SubnetIds"]) >= 2
        destination = json.dumps(scraper["Properties"]["Destination"])
        assert "Prometheus" in destination
    assert set(result.stacks.monitoring) == set(result.stacks.clusters)
