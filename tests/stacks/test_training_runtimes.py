"""The default profile's training stacks install the EFA-aware Trainer runtimes, after the
Trainer chart, in the workload's namespace; the objects in the template are schema-valid."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fm_constructs.domain import names
from tests.kubernetes_schemas import assert_valid
from tests.stacks.profiles import synthesize

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"


def _runtime_manifests(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        key: resource
        for key, resource in template["Resources"].items()
        if resource["Type"] == MANIFEST and "TrainingRuntimes" in key
    }


@pytest.mark.xdist_group("default")
@pytest.mark.parametrize(
    ("stack", "workload", "efa"),
    [
        ("fm-pretraining-compute", "pretraining", "32"),
        ("fm-post-training-compute", "post_training", "16"),
    ],
)
def test_default_training_stacks_carry_the_efa_aware_runtimes(
    stack: str, workload: str, efa: str
) -> None:
    result = synthesize("default")
    template = result.templates[stack]
    (_key, resource), *rest = _runtime_manifests(template).items()
    assert not rest
    objects = json.loads(resource["Properties"]["Manifest"])
    for obj in objects:
        obj["metadata"].pop("labels", None) if obj["kind"] in (
            "Namespace",
            "ServiceAccount",
        ) else None
    runtimes = {o["metadata"]["name"]: o for o in objects if o["kind"] == "TrainingRuntime"}
    assert set(runtimes) == {"fm-torch-distributed", "fm-jax-distributed", "fm-mpi"}
    namespace = names.workload_namespace(workload)
    for runtime in runtimes.values():
        assert runtime["metadata"]["namespace"] == namespace
        text = json.dumps(runtime)
        assert f'"vpc.amazonaws.com/efa": "{efa}"' in text
        assert '"hugepages-2Mi": "5120Mi"' in text
    assert_valid(objects, kubernetes_version=result.profile.platform.kubernetes_version)
    # Applied after the Trainer chart, whose CRDs define the kind: the chart is in the
    # cluster's add-ons stack, which the workload's compute stack deploys after.
    cluster = result.stacks.clusters["shared"]
    assert "kubeflow-trainer" in cluster.cluster.charts
    compute = result.stacks.computes[workload]
    assert result.stacks.cluster_addons["shared"] in compute.dependencies


@pytest.mark.xdist_group("hyperpod-eks")
def test_hyperpod_eks_runtimes_select_the_ml_named_nodes() -> None:
    result = synthesize("hyperpod-eks")
    (resource,) = _runtime_manifests(result.templates["fm-hpe-post-training"]).values()
    objects = json.loads(resource["Properties"]["Manifest"])
    text = json.dumps([o for o in objects if o["kind"] == "TrainingRuntime"])
    assert '"node.kubernetes.io/instance-type": "ml.p5.48xlarge"' in text
    assert '"vpc.amazonaws.com/efa": "32"' in text
    assert_valid(objects, kubernetes_version=result.profile.platform.kubernetes_version)


@pytest.mark.xdist_group("default")
def test_inference_stack_has_no_training_runtimes() -> None:
    template = synthesize("default").templates["fm-inference-compute"]
    assert not _runtime_manifests(template)
