"""The schema harness itself (it must reject what the API server would reject), and every
Kubernetes object of the inference pattern validated with it for each supported version."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import jsonschema
import kubernetes_validate
import pytest

from fm_constructs import pins
from fm_constructs.catalog import get_instance_type
from fm_constructs.kubernetes import model_server as render
from fm_constructs.patterns.inference_manifests import plan_layout
from fm_constructs.planning.autoscaling import AutoscalingPolicy
from fm_constructs.planning.kubernetes_versions import SUPPORTED_VERSIONS
from tests.kubernetes_schemas import (
    CRD_SCHEMAS,
    SchemaError,
    assert_valid,
    crd_schemas,
    is_builtin,
    strict_crd_schema,
    validate_builtin,
    validate_object,
)
from tests.model_servers import MULTI_NODE, SINGLE_NODE, render_context

VERSIONS = sorted(SUPPORTED_VERSIONS)
CTX = render_context()
SINGLE = SINGLE_NODE
MULTI = MULTI_NODE

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "n"},
    "spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]},
}
RUNTIME: dict[str, Any] = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "TrainingRuntime",
    "metadata": {"name": "r", "namespace": "n"},
    "spec": {
        "mlPolicy": {"numNodes": 1, "torch": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "spec": {
                                "template": {
                                    "spec": {"containers": [{"name": "node", "image": "x:1"}]}
                                }
                            }
                        },
                    }
                ]
            }
        },
    },
}


def inference_objects() -> list[dict[str, Any]]:
    """Every object the inference pattern renders, single- and multi-node."""
    objects: list[dict[str, Any]] = [
        render.namespace_manifest("inference"),
        render.service_account_manifest("inference-workload", "inference"),
        render.trigger_authentication_manifest("inference", "amp"),
    ]
    node = get_instance_type("p5.48xlarge")
    for spec in (SINGLE, MULTI, dataclasses.replace(MULTI, efa_image=True)):
        layout = plan_layout(spec, node)
        objects.append(
            render.leader_worker_set_manifest(spec, layout, CTX)
            if layout.multi_node
            else render.deployment_manifest(spec, layout, CTX)
        )
        for lb in (None, "internal"):
            objects.append(
                render.service_manifest(spec, CTX, load_balancer=lb, multi_node=layout.multi_node)
            )
        objects.append(
            render.scaled_object_manifest(
                spec,
                AutoscalingPolicy(),
                CTX,
                multi_node=layout.multi_node,
                server_address="https://aps.example/workspaces/ws-1",
                authentication="amp",
            )
        )
    return objects


@pytest.mark.parametrize("version", VERSIONS)
def test_inference_objects_match_their_schemas(version: str) -> None:
    how = assert_valid(inference_objects(), kubernetes_version=version)
    assert {"builtin", "lws-crd", "keda-crd"} <= set(how)


def test_builtin_groups_are_told_apart_from_custom_resources() -> None:
    assert is_builtin("v1") and is_builtin("apps/v1") and is_builtin("batch/v1")
    assert is_builtin("rbac.authorization.k8s.io/v1")
    assert not is_builtin("kueue.x-k8s.io/v1beta1")
    assert not is_builtin("trainer.kubeflow.org/v1alpha1")


def test_unknown_field_in_a_builtin_kind_is_an_error() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    with pytest.raises(SchemaError, match="imagePullPolcy"):
        validate_object(pod, "1.35")


def test_wrong_type_in_a_builtin_kind_is_an_error() -> None:
    pod = copy.deepcopy(POD)
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": "8080"}]
    with pytest.raises(SchemaError, match="containerPort"):
        validate_object(pod, "1.35")


@pytest.mark.parametrize("version", VERSIONS)
def test_builtin_kinds_are_judged_as_kubernetes_validate_judges_them(version: str) -> None:
    """validate_builtin keeps one validator per kind instead of calling
    kubernetes_validate.validate (which parses the version's definitions on every call): the
    same verdict and the same first error, valid or not, known kind or not."""
    unknown_field = copy.deepcopy(POD)
    unknown_field["spec"]["containers"][0]["imagePullPolcy"] = "Always"
    wrong_type = copy.deepcopy(POD)
    wrong_type["spec"]["containers"][0]["ports"] = [{"containerPort": "8080"}]
    no_schema = {"apiVersion": "v1", "kind": "NoSuchKind", "metadata": {"name": "x"}}
    for obj in (POD, unknown_field, wrong_type, no_schema):
        try:
            kubernetes_validate.validate(copy.deepcopy(obj), version, strict=True)
            expected = None
        except kubernetes_validate.ValidationError as error:
            expected = f"{'.'.join(str(p) for p in error.path)}: {error.message}"
        except kubernetes_validate.SchemaNotFoundError as error:
            expected = error.message
        try:
            validate_builtin(obj, version)
            got = None
        except SchemaError as error:
            got = str(error).split(": ", 1)[1]
        assert got == expected, obj.get("kind")


def test_a_valid_trainer_runtime_passes() -> None:
    assert validate_object(RUNTIME, "1.35") == "trainer-api"


def test_unknown_field_in_a_trainer_kind_is_an_error() -> None:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["mlPolicy"]["numNode"] = 2
    with pytest.raises(SchemaError, match=r"mlPolicy\.numNode: unknown field"):
        validate_object(runtime, "1.35")


def test_unknown_field_deep_in_a_trainer_pod_template_is_an_error() -> None:
    runtime = copy.deepcopy(RUNTIME)
    job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    job["template"]["spec"]["template"]["spec"]["containers"][0]["resource"] = {}
    with pytest.raises(SchemaError, match="resource: unknown field"):
        validate_object(runtime, "1.35")


def test_wrong_enum_in_a_trainer_kind_is_an_error() -> None:
    runtime = copy.deepcopy(RUNTIME)
    job = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]
    job["template"]["spec"]["template"]["spec"]["restartPolicy"] = "Sometimes"
    with pytest.raises(SchemaError):
        validate_object(runtime, "1.35")


def test_unknown_field_in_a_pod_template_of_a_kind_without_schema_is_an_error() -> None:
    layout = plan_layout(MULTI, get_instance_type("p5.48xlarge"))
    lws = render.leader_worker_set_manifest(MULTI, layout, CTX)
    lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["nodeSelectr"] = {}
    with pytest.raises(SchemaError, match="nodeSelectr"):
        validate_object(lws, "1.35")


def test_metadata_of_a_kind_without_schema_is_checked() -> None:
    obj = {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": "q", "namespace": "n", "lables": {}},
    }
    with pytest.raises(SchemaError, match="lables"):
        validate_object(obj, "1.35")


def test_a_kind_without_any_schema_source_is_refused() -> None:
    obj = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(SchemaError, match="no schema source"):
        validate_object(obj, "1.35")


@pytest.mark.parametrize(
    ("group", "kind"),
    [
        (group, kind)
        for group in sorted(CRD_SCHEMAS)
        for kind in sorted(crd_schemas(group)["kinds"])
    ],
)
def test_every_strict_crd_schema_is_a_valid_schema(group: str, kind: str) -> None:
    """What the validators of custom kinds validate with is itself a valid JSON schema of its
    draft (checked here once, not each time a test process builds a validator)."""
    schema = strict_crd_schema(group, kind)
    jsonschema.validators.validator_for(schema).check_schema(schema)


def test_every_crd_schema_file_is_of_the_pinned_operator_version() -> None:
    for group, entry in CRD_SCHEMAS.items():
        data = crd_schemas(group)
        assert data["source"].strip() and data["kinds"], group
        assert data["apiVersion"].startswith(f"{group}/"), group
        if entry.chart is not None:
            version = pins.chart(entry.chart).version.removeprefix("v")
            stale = (
                f"{entry.path.name} is not of the pinned {entry.chart} {version}: write "
                f"tests/data/crds/<name>-v{version}.json with tools/crd_schema.py from the CRDs "
                "at that release tag and point CRD_SCHEMAS at it"
            )
            assert entry.path.name.endswith(f"-v{version}.json"), stale
            assert f"v{version}" in data["source"], stale


def test_custom_kinds_reject_unknown_fields_and_wrong_types() -> None:
    scaled = {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "s", "namespace": "n"},
        "spec": {
            "scaleTargetRef": {"name": "d"},
            "triggers": [{"type": "cpu", "metadata": {"value": "50"}}],
            "maxReplicaCount": 3,
        },
    }
    validate_object(scaled, "1.35")
    with pytest.raises(SchemaError, match="maxReplicas"):
        validate_object({**scaled, "spec": {**scaled["spec"], "maxReplicas": 3}}, "1.35")
    with pytest.raises(SchemaError, match="'three' is not of type 'integer'"):
        validate_object({**scaled, "spec": {**scaled["spec"], "maxReplicaCount": "three"}}, "1.35")
    lws = {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": "l", "namespace": "n"},
        "spec": {"replicas": 1, "leaderWorkerTemplate": {"size": 2, "workerTemplat": {}}},
    }
    with pytest.raises(SchemaError, match="workerTemplat"):
        validate_object(lws, "1.35")
