"""The EKS block rules called on plain arguments, without a construct or a synthesis."""

from __future__ import annotations

from fm_constructs.rules import eks
from fm_constructs.rules.constructs import ADDONS, AUTOSCALER, EKS_CLUSTER, HYPERPOD_EKS

_DURATIONS = dict.fromkeys(eks.AUTOSCALER_DURATIONS, "10m")


def test_autoscaler_rules() -> None:
    assert eks.autoscaler_settings(expander="least-waste", durations=_DURATIONS) == []
    found = eks.autoscaler_settings(
        expander="priority", durations={**_DURATIONS, "max_node_provision_time": "ten"}
    )
    assert {f.code for f in found} == {AUTOSCALER}
    assert [f.key for f in found] == ["settings.expander", "settings.max_node_provision_time"]
    assert eks.autoscaler_image("1.35", ["1.34", "1.35"]) == []
    (image,) = eks.autoscaler_image("1.20", ["1.34", "1.35"])
    assert image.allowed == "has no pinned Cluster Autoscaler image; use one of 1.34, 1.35"
    assert eks.autoscaler_enabled_once(None, "a") == []
    assert eks.autoscaler_enabled_once("a", "a") == []
    (twice,) = eks.autoscaler_enabled_once("b", "a")
    assert twice.allowed.startswith("must equal the settings the autoscaler is already enabled")


def test_addon_version_rules() -> None:
    managed = ("vpc-cni", "coredns")
    found = eks.addon_versions(
        {
            "vpc-cni": "v1.18.4-eksbuild.1",
            "coredns": "1.12",
            "karpenter": "v1.0.0-eksbuild.1",
            "${Token[X.1]}": "v1",
        },
        managed=managed,
        vpc_cni="vpc-cni",
        min_vpc_cni=(1, 18, 5),
    )
    assert {f.code for f in found} == {ADDONS}
    assert [f.allowed.split(" (")[0].split(";")[0] for f in found] == [
        "must be v1.18.5 or newer",
        "must be an EKS add-on version such as 'v1.20.4-eksbuild.1'",
        "names an add-on this cluster does not manage",
        "names an add-on this cluster does not manage",
    ]
    token = {"vpc-cni": "${Token[X.2]}"}
    assert (
        eks.addon_versions(token, managed=managed, vpc_cni="vpc-cni", min_vpc_cni=(1, 18, 5)) == []
    )


def test_cluster_rules() -> None:
    assert eks.system_node_count(2) == []
    assert [f.code for f in eks.system_node_count(11)] == [EKS_CLUSTER]
    assert eks.cluster_zones(["us-east-1a", "us-east-1b"]) == []
    assert eks.cluster_zones(["${Token[Z.1]}"]) == []
    (one_zone,) = eks.cluster_zones(["us-east-1a", "us-east-1a"])
    assert (one_zone.key, one_zone.value) == ("vpc", ["us-east-1a"])
    assert one_zone.fix.startswith("give the VPC two or more zones")
    assert eks.imported_cluster_name("gpu-cluster") == []
    assert [f.key for f in eks.imported_cluster_name("-gpu")] == ["cluster_name"]


def test_hyperpod_eks_rules() -> None:
    ok = eks.hyperpod_eks(
        region="us-east-1",
        agent_regions={"us-east-1": "1"},
        task_governance=True,
        cluster_has_kueue=False,
    )
    assert ok == []
    found = eks.hyperpod_eks(
        region="${Token[AWS.Region.1]}",
        agent_regions={"us-east-1": "1"},
        task_governance=True,
        cluster_has_kueue=True,
    )
    assert {f.code for f in found} == {HYPERPOD_EKS}
    assert [f.key for f in found] == ["region", "task_governance"]


def test_lustre_volume_names() -> None:
    assert eks.lustre_volume_names(name="fsx", namespace="training") == []
    found = eks.lustre_volume_names(name="FSx", namespace="${Token[N.1]}")
    assert [(f.code, f.key) for f in found] == [(EKS_CLUSTER, "name")]
