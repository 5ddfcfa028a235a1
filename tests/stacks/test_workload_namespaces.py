"""Every workload namespace has exactly one owner manifest (deleting a second owner would delete
the namespace under the first), and a HyperPod workload on EKS gets what an EKS workload gets:
its namespace and service account, the FSx claim there, Kueue queues for its HyperPod nodes and
the EFA-aware Trainer runtimes."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from fm_constructs.domain import names
from fm_constructs.kubernetes.node_shape import INSTANCE_TYPE_LABEL
from tests.kubernetes_schemas import assert_valid
from tests.stacks.profiles import profile_params, synthesize

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def _objects(props: dict[str, Any]) -> list[dict[str, Any]]:
    """The objects of one manifest; deploy-time values (``Fn::Join`` parts) read as ``"X"``."""
    manifest = props["Manifest"]
    if isinstance(manifest, dict):
        manifest = "".join(p if isinstance(p, str) else "X" for p in manifest["Fn::Join"][1])
    objects: list[dict[str, Any]] = json.loads(manifest)
    return objects


def _manifests(profile: str) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """(stack, logical id) -> objects, for every manifest of ``profile``."""
    result = synthesize(profile)
    return {
        (stack, key): _objects(resource["Properties"])
        for stack, template in result.templates.items()
        for key, resource in template["Resources"].items()
        if resource["Type"] == MANIFEST
    }


@pytest.mark.parametrize("profile", profile_params())
def test_each_namespace_is_created_by_one_manifest(profile: str) -> None:
    owners = Counter(
        obj["metadata"]["name"]
        for objects in _manifests(profile).values()
        for obj in objects
        if obj["kind"] == "Namespace"
    )
    on_eks = any(not w.orchestrator.is_slurm for w in synthesize(profile).profile.enabled_workloads)
    assert bool(owners) == on_eks
    assert [n for n, count in owners.items() if count > 1] == []


@pytest.mark.xdist_group("hyperpod-eks")
def test_hyperpod_eks_workload_owns_namespace_claim_queues_and_runtimes() -> None:
    result = synthesize("hyperpod-eks")
    namespace = names.workload_namespace("post_training")
    stack = "fm-hpe-post-training"
    objects = [
        obj
        for (owner, _key), objs in _manifests("hyperpod-eks").items()
        if owner == stack
        for obj in objs
    ]
    by_kind = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    labels = by_kind[("Namespace", namespace)]["metadata"]["labels"]
    assert labels[names.KUEUE_MANAGED_LABEL] == "true"
    assert by_kind[("ServiceAccount", names.service_account_name("post_training"))]
    claim = by_kind[("PersistentVolumeClaim", names.fsx_claim_name("post_training"))]
    assert claim["metadata"]["namespace"] == namespace
    local = by_kind[("LocalQueue", names.local_queue_name("post_training"))]
    assert local["spec"]["clusterQueue"] == names.cluster_queue_name("post_training")
    assert ("ClusterQueue", names.cluster_queue_name("post_training")) in by_kind
    runtimes = [o for o in objects if o["kind"] == "TrainingRuntime"]
    assert {r["metadata"]["name"] for r in runtimes} == {
        "fm-torch-distributed",
        "fm-jax-distributed",
        "fm-mpi",
    }
    # Kueue places admitted pods on the HyperPod nodes by their ml. instance-type label.
    flavor_name = names.resource_flavor_name("post_training", "hyperpod")
    flavors = [
        obj
        for objs in _manifests("hyperpod-eks").values()
        for obj in objs
        if obj["kind"] == "ResourceFlavor" and obj["metadata"]["name"] == flavor_name
    ]
    assert [f["spec"]["nodeLabels"] for f in flavors] == [{INSTANCE_TYPE_LABEL: "ml.p5.48xlarge"}]
    version = result.profile.platform.kubernetes_version
    assert_valid(
        [o for o in objects if o["kind"] not in ("PersistentVolume", "PersistentVolumeClaim")],
        kubernetes_version=version,
    )
