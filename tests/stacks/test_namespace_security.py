"""Over every profile: every workload namespace enforces its Pod Security level and every pod
template rendered into it passes that level; every workload namespace denies all traffic by
default and each NetworkPolicy rendered there is a row of the allowed-flows table in
docs/operations/workload-isolation.md (and every row that applies is rendered); the vpc-cni
add-on runs its network policy agent; all of it schema-valid."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from fm_constructs.domain import names
from fm_constructs.kubernetes.workload import POD_SECURITY_LABEL
from tests.iam_policies import Templates
from tests.kubernetes_schemas import assert_valid
from tests.pod_security import pod_specs, violations
from tests.stacks.profiles import ROOT, profile_params, synthesize

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
DOC = ROOT / "docs" / "operations" / "workload-isolation.md"


def _objects(profile: str) -> list[dict[str, Any]]:
    """Every Kubernetes object of the profile's manifests, deploy-time values rendered."""
    templates = Templates(synthesize(profile).templates)
    found: list[dict[str, Any]] = []
    for stack, template in templates.templates.items():
        for resource in template["Resources"].values():
            if resource["Type"] == MANIFEST:
                found += json.loads(templates.render(stack, resource["Properties"]["Manifest"]))
    return found


def _eks_workloads(profile: str) -> list[str]:
    return [
        w.name for w in synthesize(profile).profile.enabled_workloads if not w.orchestrator.is_slurm
    ]


def _flow_rows() -> list[dict[str, str]]:
    text = DOC.read_text()
    table = text.split("<!-- allowed-flows -->")[1].split("<!-- /allowed-flows -->")[0]
    lines = [line for line in table.strip().splitlines() if line.startswith("|")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows.append(dict(zip(header, cells, strict=True)))
    return rows


def _expected_peers(peer: str) -> Any:
    """The NetworkPolicy peers a table cell names (``vpc`` for the VPC CIDR, checked apart)."""
    if peer == "pods of the same namespace":
        return [{"podSelector": {}}]
    if peer.startswith("CoreDNS"):
        return [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                },
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ]
    literal = re.fullmatch(r"`([0-9./]+)`", peer)
    if literal:
        return [{"ipBlock": {"cidr": literal.group(1)}}]
    if peer == "the VPC CIDR":
        return "vpc"
    operator = re.fullmatch(r"pods of `([a-z0-9-]+)`", peer)
    if operator:
        return [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": operator.group(1)}
                }
            }
        ]
    raise AssertionError(f"unknown peer in {DOC.name}: {peer!r}")


def _expected_ports(ports: str) -> list[dict[str, Any]] | None:
    if ports == "all":
        return None
    expected = []
    for part in ports.split(","):
        protocol, port = part.split()
        expected.append({"protocol": protocol, "port": int(port) if port.isdigit() else port})
    return expected


def _applies(row: dict[str, str], workload: str) -> bool:
    kinds = row["workloads"]
    return kinds == "all" or workload in [k.strip() for k in kinds.split(",")]


@pytest.mark.parametrize("profile", profile_params())
def test_workload_namespaces_enforce_pod_security(profile: str) -> None:
    objects = _objects(profile)
    namespaces = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Namespace"}
    levels: dict[str, str] = {}
    for workload in _eks_workloads(profile):
        for name, level in (
            (names.workload_namespace(workload), "baseline"),
            (names.diagnostics_namespace(workload), "privileged"),
        ):
            labels = namespaces[name]["metadata"]["labels"]
            assert labels[f"{POD_SECURITY_LABEL}enforce"] == level, name
            assert labels[f"{POD_SECURITY_LABEL}warn"] == level, name
            levels[name] = level
    checked = 0
    for obj in objects:
        namespace = obj.get("metadata", {}).get("namespace")
        if namespace not in levels:
            continue
        for spec in pod_specs(obj.get("spec", {})):
            assert violations(spec, levels[namespace]) == [], (obj["kind"], obj["metadata"])
            checked += 1
    if any(w in ("pretraining", "post_training") for w in _eks_workloads(profile)):
        assert checked, "no pod template of a training workload was checked"


@pytest.mark.parametrize("profile", profile_params())
def test_workload_namespaces_deny_by_default_and_allow_only_the_documented_flows(
    profile: str,
) -> None:
    objects = _objects(profile)
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    rows = _flow_rows()
    workloads = _eks_workloads(profile)
    if workloads:
        assert_valid(
            policies + [o for o in objects if o["kind"] == "Namespace"],
            kubernetes_version=synthesize(profile).profile.platform.kubernetes_version,
        )
    else:
        assert not policies
    operators = {o["metadata"].get("namespace") for o in objects}
    for workload in workloads:
        for namespace, allowed in (
            (names.workload_namespace(workload), [r for r in rows if _applies(r, workload)]),
            (names.diagnostics_namespace(workload), []),
        ):
            mine = {
                p["metadata"]["name"]: p["spec"]
                for p in policies
                if p["metadata"]["namespace"] == namespace
            }
            assert mine.pop("default-deny") == {
                "podSelector": {},
                "policyTypes": ["Ingress", "Egress"],
            }, namespace
            seen: set[tuple[str, str]] = set()
            for name, spec in mine.items():
                assert spec["podSelector"] == {}, (namespace, name)
                for direction in spec["policyTypes"]:
                    (rule,) = spec[direction.lower()]
                    peers = rule["from" if direction == "Ingress" else "to"]
                    (row,) = [
                        r
                        for r in allowed
                        if (r["policy"].strip("`"), r["direction"]) == (name, direction)
                    ]
                    expected = _expected_peers(row["peer"])
                    if expected == "vpc":
                        assert peers and all(set(p) == {"ipBlock"} for p in peers), (
                            namespace,
                            name,
                        )
                        assert all(p["ipBlock"]["cidr"].endswith(".CidrBlock") for p in peers), (
                            peers
                        )
                    else:
                        assert peers == expected, (namespace, name, direction)
                    assert rule.get("ports") == _expected_ports(row["ports"]), (namespace, name)
                    seen.add((name, direction))
            missing = {(r["policy"].strip("`"), r["direction"]) for r in allowed} - seen
            # The operator flow needs its operator on the cluster.
            missing -= {
                (r["policy"].strip("`"), r["direction"])
                for r in allowed
                if r["peer"].startswith("pods of `") and r["peer"].split("`")[1] not in operators
            }
            assert not missing, (namespace, missing)


@pytest.mark.parametrize("profile", profile_params())
def test_vpc_cni_enforces_network_policies(profile: str) -> None:
    result = synthesize(profile)
    addons = [
        resource["Properties"]
        for template in result.templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::EKS::Addon"
        and resource["Properties"]["AddonName"] == "vpc-cni"
    ]
    assert len(addons) == len(result.stacks.clusters)
    for addon in addons:
        assert json.loads(addon["ConfigurationValues"])["enableNetworkPolicy"] == "true"


@pytest.mark.parametrize("profile", profile_params())
def test_keda_reads_no_secrets_outside_its_namespace(profile: str) -> None:
    charts = [
        json.loads(resource["Properties"]["Values"])
        for template in synthesize(profile).templates.values()
        for resource in template["Resources"].values()
        if resource["Type"] == "Custom::AWSCDK-EKS-HelmChart"
        and resource["Properties"]["Chart"] == "keda"
    ]
    for values in charts:
        for component in ("operator", "metricServer"):
            assert values["permissions"][component]["restrict"]["secret"] is True
