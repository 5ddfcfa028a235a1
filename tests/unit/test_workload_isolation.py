"""The namespace-level isolation objects: Pod Security labels by namespace, the baseline
checker against the pods the library renders, and the network policies (schema-valid on every
supported Kubernetes version, one per documented flow)."""

from __future__ import annotations

import pytest

from fm_constructs.domain import names
from fm_constructs.kubernetes import jobs
from fm_constructs.kubernetes.network_policy import FLOWS, flows_for, network_policies
from fm_constructs.kubernetes.node_shape import WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import training_runtimes
from fm_constructs.kubernetes.workload import (
    POD_SECURITY_LABEL,
    namespace_network_policies,
    namespace_objects,
    pod_security_labels,
)
from fm_constructs.planning.kubernetes_versions import SUPPORTED_VERSIONS
from tests.kubernetes_schemas import assert_valid
from tests.pod_security import pod_specs, violations

P5 = WorkloadTarget("pretraining", "p5.48xlarge")


def _levels(objects: list[dict[str, object]]) -> dict[str, str]:
    return {
        o["metadata"]["name"]: o["metadata"]["labels"][f"{POD_SECURITY_LABEL}enforce"]  # type: ignore[index]
        for o in objects
        if o["kind"] == "Namespace"
    }


@pytest.mark.parametrize("version", SUPPORTED_VERSIONS)
def test_namespace_objects_and_policies_are_schema_valid(version: str) -> None:
    for workload in ("pretraining", "post_training", "inference", "my_eval"):
        objects = [
            *namespace_objects(workload, kueue_managed=True),
            *namespace_network_policies(
                workload, vpc_cidrs=["10.0.0.0/16"], kuberay_namespace="kuberay-system"
            ),
        ]
        assert_valid(objects, kubernetes_version=version)


def test_workload_namespace_is_baseline_and_diagnostics_privileged() -> None:
    levels = _levels(namespace_objects("post_training", kueue_managed=True))
    assert levels == {"post-training": "baseline", "post-training-diagnostics": "privileged"}
    with pytest.raises(ValueError, match="not one of"):
        pod_security_labels("strict")


def test_baseline_checker_rejects_what_baseline_forbids() -> None:
    privileged = {
        "hostNetwork": True,
        "volumes": [{"name": "sys", "hostPath": {"path": "/sys"}}],
        "containers": [
            {
                "name": "c",
                "securityContext": {"privileged": True, "capabilities": {"add": ["SYS_ADMIN"]}},
                "ports": [{"containerPort": 80, "hostPort": 80}],
            }
        ],
    }
    found = violations(privileged, "baseline")
    assert len(found) == 5, found
    assert violations(privileged, "privileged") == []
    (diag,) = pod_specs(jobs.dcgm_diag_job(P5, 2))
    assert violations(diag, "baseline") == ["container dcgm-diag: capabilities ['SYS_ADMIN']"]


def test_training_runtime_pods_pass_baseline() -> None:
    specs = [s for runtime in training_runtimes(P5) for s in pod_specs(runtime)]
    assert specs
    for spec in specs:
        assert violations(spec, "baseline") == []


def test_first_job_pods_pass_their_namespaces_pod_security() -> None:
    levels = _levels(namespace_objects("pretraining", kueue_managed=True))
    for obj in jobs.first_job_objects(P5, 2):
        level = levels[obj["metadata"]["namespace"]]
        for spec in pod_specs(obj["spec"]):
            assert violations(spec, level) == [], obj["metadata"]["name"]


def test_every_flow_is_rendered_once_for_its_workloads() -> None:
    for workload in ("pretraining", "post_training", "inference"):
        policies = network_policies(
            names.workload_namespace(workload),
            workload,
            vpc_cidrs=["10.0.0.0/16"],
            kuberay_namespace="kuberay-system",
        )
        rendered = {
            (p["metadata"]["name"], direction)
            for p in policies[1:]
            for direction in p["spec"]["policyTypes"]
        }
        assert rendered == {(f.name, f.direction) for f in flows_for(workload)}
        assert policies[0]["metadata"]["name"] == "default-deny"
    # A custom workload gets the common flows only; without the VPC's CIDR no VPC rule.
    custom = network_policies("my-eval", "my_eval", vpc_cidrs=[])
    assert {p["metadata"]["name"] for p in custom[1:]} == {
        f.name for f in FLOWS if not f.workloads and f.peer != "vpc"
    }
