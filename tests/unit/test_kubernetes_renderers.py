"""The renderers of fm_constructs.kubernetes, validated without synthesis against the schema of
every kind on every supported Kubernetes version: the plain objects, the managed scraper's
access, the FSx CSI static volume, the Kueue ClusterQueue in its two halves, and the HyperPod
health monitoring agent and access objects. (The model server, the EFA exporter, the training
runtimes and jobs have their own test modules.)"""

from __future__ import annotations

import pkgutil
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import fm_constructs
from fm_constructs import kubernetes
from fm_constructs.catalog import get_instance_type
from fm_constructs.domain import names
from fm_constructs.kubernetes import hyperpod, kueue, lustre_volume, objects, scraper_access
from fm_constructs.planning.kubernetes_versions import SUPPORTED_VERSIONS
from tests.kubernetes_schemas import assert_valid

VERSIONS = sorted(SUPPORTED_VERSIONS)


def _static_volume(namespace: str) -> list[dict[str, Any]]:
    """The static volume and claim ``fsx-lustre`` of one file system in ``namespace``."""
    return lustre_volume.static_volume_manifests(
        name="fsx-lustre",
        namespace=namespace,
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        storage_capacity_gib=4800,
    )


def _kinds(rendered: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(obj["kind"], obj["metadata"]["name"]) for obj in rendered]


@pytest.mark.parametrize("version", VERSIONS)
def test_plain_objects_are_valid(version: str) -> None:
    rendered = [
        objects.plain_namespace("team-a"),
        objects.service_account("runner", "team-a", labels={"app": "runner"}),
        objects.cluster_role(
            "reader", [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
        ),
        objects.cluster_role_binding(
            "reader",
            "reader",
            [{"kind": "ServiceAccount", "name": "runner", "namespace": "team-a"}],
        ),
    ]
    assert set(assert_valid(rendered, kubernetes_version=version)) == {"builtin"}
    assert rendered[0] == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
    assert rendered[1]["metadata"]["labels"] == {"app": "runner"}
    assert rendered[3]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": "reader",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_scraper_access_is_valid_and_read_only(version: str) -> None:
    role, binding = scraper_access.scraper_rbac_manifests()
    assert set(assert_valid([role, binding], kubernetes_version=version)) == {"builtin"}
    assert binding["subjects"][0]["name"] == scraper_access.SCRAPER_KUBERNETES_USERNAME
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert {verb for rule in role["rules"] for verb in rule["verbs"]} == {"get", "list", "watch"}


@pytest.mark.parametrize("version", VERSIONS)
def test_static_lustre_volume_is_valid_and_pre_bound(version: str) -> None:
    volume, claim = _static_volume("pretraining")
    assert set(assert_valid([volume, claim], kubernetes_version=version)) == {"builtin"}
    assert volume["spec"]["claimRef"] == {"namespace": "pretraining", "name": "fsx-lustre"}
    assert claim["spec"]["volumeName"] == "fsx-lustre"
    assert volume["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert volume["spec"]["csi"]["driver"] == lustre_volume.FSX_CSI_DRIVER


def test_cluster_queue_halves_make_the_whole_queue() -> None:
    lines = [
        kueue.QueueFlavor("pretraining-gpu", {names.NVIDIA_GPU_RESOURCE: 16}),
        kueue.QueueFlavor("inference-gpu", {}),
    ]
    whole = kueue.cluster_queue("pretraining", namespace="pretraining", flavors=lines)
    spec = kueue.cluster_queue_spec("pretraining", namespace="pretraining", flavors=lines)
    assert kueue.cluster_queue_object("pretraining", spec) == whole
    assert set(assert_valid([whole], kubernetes_version=VERSIONS[-1])) == {"kueue-crd"}
    with pytest.raises(ValueError, match="at least one flavor"):
        kueue.cluster_queue_spec("empty", namespace="empty", flavors=[])


def test_kueue_configuration_admits_only_queued_namespaces() -> None:
    """The controller configuration is a file of Kueue's config API (not an object the API
    server serves, so it has no CRD): its kind, and the namespace selector of the webhooks."""
    config = kueue.manager_config()
    assert (config["apiVersion"], config["kind"]) == (
        "config.kueue.x-k8s.io/v1beta2",
        "Configuration",
    )
    assert config["managedJobsNamespaceSelector"] == {
        "matchLabels": {names.KUEUE_MANAGED_LABEL: "true"}
    }
    assert config["integrations"]["frameworks"] == list(kueue.KUEUE_FRAMEWORKS)


@pytest.mark.parametrize("version", VERSIONS)
def test_hyperpod_objects_are_valid(version: str) -> None:
    specs = [get_instance_type("p5.48xlarge"), get_instance_type("trn2.48xlarge")]
    agent = hyperpod.health_monitoring_agent_manifests("us-west-2", specs)
    access = hyperpod.hyperpod_access_manifests()
    assert set(assert_valid([*agent, *access], kubernetes_version=version)) == {"builtin"}
    assert _kinds(agent) == [
        ("Namespace", hyperpod.HYPERPOD_NAMESPACE),
        ("ServiceAccount", hyperpod.HMA_NAME),
        ("ClusterRole", hyperpod.HMA_NAME),
        ("ClusterRoleBinding", hyperpod.HMA_NAME),
        ("DaemonSet", hyperpod.HMA_NAME),
        ("DaemonSet", f"{hyperpod.HMA_NAME}-neuron"),
    ]
    image = agent[-1]["spec"]["template"]["spec"]["containers"][0]["image"]
    assert image == hyperpod.hma_image("us-west-2")
    assert image.startswith(f"{hyperpod.HMA_IMAGE_ACCOUNTS['us-west-2']}.dkr.ecr.us-west-2.")
    users = {
        obj["metadata"]["name"]: obj["subjects"]
        for obj in access
        if obj["kind"] == "ClusterRoleBinding"
    }
    assert users[hyperpod.PATCHING_NAME] == [
        {
            "kind": "User",
            "name": hyperpod.HYPERPOD_SERVICE_USER,
            "apiGroup": "rbac.authorization.k8s.io",
        }
    ]


def test_renamed_static_volume_stays_bound_to_its_claim() -> None:
    volume, claim = lustre_volume.rename_volume(
        _static_volume("inference"),
        "inference-fsx-lustre",
    )
    assert volume["metadata"]["name"] == claim["spec"]["volumeName"] == "inference-fsx-lustre"
    assert claim["metadata"]["name"] == volume["spec"]["claimRef"]["name"] == "fsx-lustre"
    assert set(assert_valid([volume, claim], kubernetes_version=VERSIONS[-1])) == {"builtin"}


def test_renderers_import_no_cdk() -> None:
    """Every module of fm_constructs.kubernetes imports without aws_cdk (floor 2 renderers are
    plain data): checked in a fresh interpreter, where nothing else loaded it first."""
    modules = [
        f"fm_constructs.kubernetes.{m.name}" for m in pkgutil.iter_modules(kubernetes.__path__)
    ]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "cdk = ('aws_cdk', 'jsii', 'constructs')\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in cdk))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True
    ).stdout.strip()
    assert len(modules) >= 15
    assert out == "[]"


#: A Kubernetes object literal: an ``apiVersion`` key in Python source.
_OBJECT_LITERAL = re.compile(r"""["']apiVersion["']\s*:""")


def test_kubernetes_objects_are_written_only_under_kubernetes() -> None:
    """No module outside fm_constructs/kubernetes/ writes a Kubernetes object itself; the
    constructs call the renderers there."""
    root = Path(fm_constructs.__file__).parent
    writers = sorted(
        str(path.relative_to(root))
        for path in root.rglob("*.py")
        if path.relative_to(root).parts[0] != "kubernetes"
        and _OBJECT_LITERAL.search(path.read_text(encoding="utf-8"))
    )
    assert writers == []
