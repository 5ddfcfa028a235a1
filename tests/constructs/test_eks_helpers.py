"""Pure helpers behind the EKS constructs (no synthesis): Kubernetes versions and their kubectl
layers, add-on version rules, chart pins, node labels, and cdk-nag finding ids."""

from __future__ import annotations

from importlib import metadata

import aws_cdk as cdk
import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration import node_labels
from fm_constructs.orchestration.eks_addons import MIN_VPC_CNI_VERSION, addon_version_findings
from fm_constructs.orchestration.eks_versions import eks_version, kubectl_layer, supported_version
from fm_constructs.planning.kubernetes_versions import (
    DEFAULT_KUBERNETES_VERSION,
    SUPPORTED_VERSIONS,
)
from fm_constructs.policy.nag_findings import flatten_reference
from fm_constructs.rules import platform as platform_rules


def test_default_version_supported_with_installed_layer() -> None:
    entry = SUPPORTED_VERSIONS[DEFAULT_KUBERNETES_VERSION]
    assert eks_version(entry).version == DEFAULT_KUBERNETES_VERSION
    assert entry.layer_package == "aws-cdk.lambda-layer-kubectl-v35"
    assert entry.layer_class == "KubectlV35Layer"
    assert platform_rules.kubectl_layer_installed(DEFAULT_KUBERNETES_VERSION) == []
    assert kubectl_layer(cdk.Stack(), "Layer", entry) is not None


def test_every_supported_version_matches_the_cdk_enum() -> None:
    for version, entry in SUPPORTED_VERSIONS.items():
        assert entry.version == version == eks_version(entry).version


def test_unknown_version_found() -> None:
    assert supported_version("1.30") is None
    assert supported_version(f" {DEFAULT_KUBERNETES_VERSION} ") is not None
    (finding,) = platform_rules.kubernetes_version("1.30")
    assert finding.code == "FM201"
    assert "must be a Kubernetes version in EKS standard support: 1.34, 1.35, 1.36" in (
        finding.message()
    )


def test_missing_layer_package_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A supported version whose layer package is not installed: the package, the construct
    argument that takes a layer instead, and the default version are named."""
    package = SUPPORTED_VERSIONS[DEFAULT_KUBERNETES_VERSION].layer_package
    real_version = metadata.version

    def version_of(name: str) -> str:
        if name == package:
            raise metadata.PackageNotFoundError(name)
        return real_version(name)

    monkeypatch.setattr(metadata, "version", version_of)
    (finding,) = platform_rules.kubectl_layer_installed(
        DEFAULT_KUBERNETES_VERSION, layer_argument="kubectl_layer"
    )
    assert finding.code == "FM205"
    assert f"pip install '{package}', pass kubectl_layer=, or use the default" in finding.line()
    (profile_finding,) = platform_rules.kubectl_layer_installed(DEFAULT_KUBERNETES_VERSION)
    assert "kubectl_layer=" not in profile_finding.line()
    # A cluster construct given a layer needs no package; one that builds its own does.
    version = DEFAULT_KUBERNETES_VERSION
    assert platform_rules.cluster_kubernetes_version(version, layer_argument=None) == []
    assert platform_rules.cluster_kubernetes_version(version, layer_argument="kubectl_layer") == [
        finding
    ]
    assert [
        f.code for f in platform_rules.cluster_kubernetes_version("1.30", layer_argument="x")
    ] == ["FM201"]


@pytest.mark.parametrize(
    ("versions", "count"),
    [
        ({"vpc-cni": "v1.18.5-eksbuild.1"}, 0),
        ({"vpc-cni": "v1.18.4-eksbuild.1"}, 1),  # no efa-only support (amazon-vpc-cni-k8s#3047)
        ({"coredns": "v1.12.1-eksbuild.2", "kube-proxy": "1.35"}, 1),
        ({"karpenter": "v1.0.0-eksbuild.1"}, 1),
    ],
)
def test_addon_version_rules(versions: dict[str, str], count: int) -> None:
    assert len(addon_version_findings(versions)) == count
    assert MIN_VPC_CNI_VERSION == (1, 18, 5)


def test_chart_pins_are_exact_and_unique() -> None:
    releases = [spec.release for spec in charts.ALL_CHARTS]
    assert len(releases) == len(set(releases))
    for spec in charts.ALL_CHARTS:
        assert spec.version and not any(c in spec.version for c in "*^~><x")
        assert spec.repository.startswith(("https://", "oci://"))
        assert spec.source.startswith("https://")
    assert charts.NVIDIA_DEVICE_PLUGIN.construct_id == "NvidiaDevicePlugin"


def test_node_labels_per_family() -> None:
    gpu = node_labels(get_instance_type("p5.48xlarge"))
    assert gpu == {
        "fm-constructs/workload": "gpu",
        "fm-constructs/instance-family": "p5",
        "nvidia.com/gpu.present": "true",
        "vpc.amazonaws.com/efa.present": "true",
    }
    neuron = node_labels(get_instance_type("trn2.48xlarge"), {"team": "rl"})
    assert neuron["aws.amazon.com/neuron.present"] == "true"
    assert neuron["team"] == "rl"


def test_flatten_reference_matches_cdk_nag() -> None:
    join = {"Fn::Join": ["", ["arn:", {"Ref": "AWS::Partition"}, ":iam::aws:policy/X"]]}
    assert flatten_reference(join) == "arn:<AWS::Partition>:iam::aws:policy/X"
    assert flatten_reference({"Fn::GetAtt": ["Fn1", "Arn"]}) == "<Fn1.Arn>"
    condition = {"Fn::If": ["Cond", "a", {"Ref": "AWS::NoValue"}]}
    assert flatten_reference(condition) == '{"Fn::If":["Cond","a",{"Ref":"AWS::NoValue"}]}'
    assert flatten_reference("arn:${AWS::Partition}:x") == "arn:<AWS::Partition>:x"
