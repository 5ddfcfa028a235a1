"""Cluster Autoscaler on GPU EKS workloads: Helm chart pin and values, Pod Identity, IAM scoped to
the cluster's Auto Scaling groups, no autoscaler on fixed-size node groups, warnings, cdk-nag and
cfn-lint. One App, synthesized once: "Scaled" (p5.48xlarge, Capacity Block, 1..4 nodes) and
"Fixed" (p5.48xlarge, 2 nodes) in one stack, and beside each a training workload whose jobs
Kueue queues ("Queued": 2..8 nodes; "QueuedFixed": 2 nodes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template
from constructs import Construct

from fm_constructs.compute import CapacitySource
from fm_constructs.errors import FmValidationError
from fm_constructs.orchestration import SUPPORTED_VERSIONS, EfaNodeGroup, GpuEksCluster
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_autoscaler import (
    DESCRIBE_ACTIONS,
    SCALING_ACTIONS,
    ClusterAutoscaler,
    scaling_conditions,
    settings_findings,
)
from fm_constructs.orchestration.cluster_autoscaler import ClusterAutoscaler as _Autoscaler
from fm_constructs.orchestration.eks_charts import ClusterAutoscalerSettings
from fm_constructs.patterns.cluster_workload import (
    GPU_TYPE_LABEL,
    EksWorkload,
    NodePool,
    gpu_type_label,
)
from fm_constructs.policy import enable_nag
from tests.support import TEST_ENV, cfn_lint, imported_vpc

TOKEN = "<token>"


def _vpc(stack: cdk.Stack) -> ec2.IVpc:
    return imported_vpc(stack)


@dataclass
class Workload:
    """A cluster of its own and one workload's share of it (node pool ``gpu``)."""

    cluster: GpuEksCluster
    share: EksWorkload

    @property
    def autoscaler(self) -> _Autoscaler | None:
        return self.share.autoscaler

    @property
    def gpu_nodes(self) -> EfaNodeGroup:
        return self.share.main_nodes


def _workload(
    scope: cdk.Stack,
    construct_id: str,
    vpc: ec2.IVpc,
    pool: NodePool,
    *,
    name: str = "inference",
    training: bool = False,
) -> Workload:
    parent = Construct(scope, construct_id)
    cluster = GpuEksCluster(
        parent, "Cluster", vpc=vpc, gpu_availability_zone=vpc.private_subnets[0].availability_zone
    )
    subnet = vpc.private_subnets[0]
    share = EksWorkload(
        parent,
        "Workload",
        cluster=cluster,
        name=name,
        subnet=subnet,
        node_pools=[pool],
        training=training,
    )
    return Workload(cluster, share)


@dataclass
class Synth:
    raw: dict[str, Any]
    template: Template
    stack: cdk.Stack
    scaled: Workload
    fixed: Workload


@pytest.fixture(scope="module")
def synth() -> Iterator[Synth]:
    app = cdk.App()
    stack = cdk.Stack(app, "TestStack", env=TEST_ENV)
    vpc = _vpc(stack)
    scaled = _workload(
        stack,
        "Scaled",
        vpc,
        NodePool(
            "gpu",
            "p5.48xlarge",
            1,
            min_node_count=1,
            max_node_count=4,
            capacity=CapacitySource.capacity_block(
                "cr-0123456789abcdef0", availability_zone="us-east-1a"
            ),
        ),
    )
    fixed = _workload(stack, "Fixed", vpc, NodePool("gpu", "p5.48xlarge", 2))
    # Training workloads whose jobs Kueue queues beside them: one pool autoscaled (on the
    # scaled cluster, whose autoscaler it shares), one of a fixed size.
    for beside, construct_id, name, pool in (
        (
            scaled,
            "Queued",
            "pretraining",
            NodePool("gpu", "p5.48xlarge", 2, min_node_count=2, max_node_count=8),
        ),
        (fixed, "QueuedFixed", "post-training", NodePool("gpu", "p5.48xlarge", 2)),
    ):
        EksWorkload(
            beside.cluster,
            construct_id,
            cluster=beside.cluster,
            name=name,
            subnet=vpc.private_subnets[0],
            node_pools=[pool],
            training=True,
        )
    enable_nag(app)
    raw = app.synth().get_stack_by_name("TestStack").template
    yield Synth(raw, Template.from_json(raw), stack, scaled, fixed)


def _text(value: Any) -> str:
    """A property as text, CloudFormation references replaced by :data:`TOKEN`."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(_text(p) for p in parts)
    return TOKEN


def _resources(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in raw["Resources"].items()
        if resource["Type"] == kind
    }


def _autoscaler_charts(raw: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        props
        for props in _resources(raw, "Custom::AWSCDK-EKS-HelmChart").values()
        if props.get("Release") == charts.CLUSTER_AUTOSCALER.release
    ]


# ----------------------------------------------------------------------------- chart


def test_one_chart_pinned_from_the_official_repository(synth: Synth) -> None:
    found = _autoscaler_charts(synth.raw)
    assert len(found) == 1, "only the 1..4 workload gets an autoscaler"
    props = found[0]
    assert props["Repository"] == "https://kubernetes.github.io/autoscaler"
    assert props["Chart"] == "cluster-autoscaler"
    assert props["Version"] == charts.CLUSTER_AUTOSCALER.version == "9.59.0"
    assert props["Namespace"] == "kube-system"
    assert props["Wait"] is True


def test_values_discover_this_cluster_on_system_nodes(synth: Synth) -> None:
    props = _autoscaler_charts(synth.raw)[0]
    values = json.loads(_text(props["Values"]))
    assert values["cloudProvider"] == "aws"
    assert values["autoDiscovery"] == {"clusterName": TOKEN}
    assert values["awsRegion"] == "us-east-1"
    assert values["image"] == {"tag": "v1.35.2"}
    assert values["rbac"]["serviceAccount"] == {"create": True, "name": "cluster-autoscaler"}
    assert values["nodeSelector"] == {charts.WORKLOAD_LABEL: "system"}
    assert values["tolerations"] == [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    assert values["priorityClassName"] == "system-cluster-critical"
    assert values["extraArgs"] == {
        "balance-similar-node-groups": True,
        "expander": "least-waste",
        "skip-nodes-with-local-storage": False,
        "scale-down-delay-after-add": "10m",
        "scale-down-unneeded-time": "10m",
        "max-node-provision-time": "25m",
    }


def test_cluster_name_in_values_is_the_scaled_cluster(synth: Synth) -> None:
    props = _autoscaler_charts(synth.raw)[0]
    refs = [p for p in props["Values"]["Fn::Join"][1] if isinstance(p, dict)]
    cluster_id = synth.stack.get_logical_id(synth.scaled.cluster.cluster.node.default_child)  # type: ignore[arg-type]
    assert refs == [{"Ref": cluster_id}]


def test_chart_waits_for_credentials_and_system_nodes(synth: Synth) -> None:
    autoscaler = synth.scaled.autoscaler
    assert autoscaler is not None
    depends = {dep.node.path for dep in autoscaler.chart.node.dependencies}
    assert autoscaler.pod_identity.node.path in depends
    assert synth.scaled.cluster.system_nodes.node.path in depends


# ----------------------------------------------------------------------------- identity


def test_pod_identity_maps_the_chart_service_account(synth: Synth) -> None:
    associations = [
        props
        for props in _resources(synth.raw, "AWS::EKS::PodIdentityAssociation").values()
        if props["ServiceAccount"] == "cluster-autoscaler"
    ]
    assert len(associations) == 1
    assert associations[0]["Namespace"] == "kube-system"
    role_id = associations[0]["RoleArn"]["Fn::GetAtt"][0]
    trust = synth.raw["Resources"][role_id]["Properties"]["AssumeRolePolicyDocument"]
    assert trust["Statement"][0]["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert set(trust["Statement"][0]["Action"]) == {"sts:AssumeRole", "sts:TagSession"}


def test_policy_scopes_scaling_to_this_clusters_groups(synth: Synth) -> None:
    autoscaler = synth.scaled.autoscaler
    assert autoscaler is not None
    role_id = synth.stack.get_logical_id(autoscaler.role.node.default_child)  # type: ignore[arg-type]
    policies = [
        props
        for props in _resources(synth.raw, "AWS::IAM::Policy").values()
        if props["Roles"] == [{"Ref": role_id}]
    ]
    assert len(policies) == 1
    statements = policies[0]["PolicyDocument"]["Statement"]
    assert len(statements) == 2
    describe, scaling = statements
    assert set(describe["Action"]) == set(DESCRIBE_ACTIONS)
    assert describe["Resource"] == "*" and "Condition" not in describe
    assert set(scaling["Action"]) == set(SCALING_ACTIONS)
    cluster_id = synth.stack.get_logical_id(synth.scaled.cluster.cluster.node.default_child)  # type: ignore[arg-type]
    assert scaling["Condition"] == {
        "StringEquals": {
            "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
            "aws:ResourceTag/eks:cluster-name": {"Ref": cluster_id},
        }
    }


def test_literal_cluster_name_uses_the_documented_owned_tag() -> None:
    assert scaling_conditions("gpu-prod") == {
        "StringEquals": {
            "aws:ResourceTag/k8s.io/cluster-autoscaler/enabled": "true",
            "aws:ResourceTag/k8s.io/cluster-autoscaler/gpu-prod": "owned",
        }
    }


# ----------------------------------------------------------------------------- wiring


def test_fixed_size_workload_gets_no_autoscaler(synth: Synth) -> None:
    assert synth.fixed.autoscaler is None
    assert synth.fixed.cluster.node.try_find_child("ClusterAutoscaler") is None
    assert charts.CLUSTER_AUTOSCALER.release not in synth.fixed.cluster.charts
    assert GPU_TYPE_LABEL not in synth.fixed.gpu_nodes.labels


def test_scaled_node_group_bounds_and_gpu_label(synth: Synth) -> None:
    scaling = synth.stack.resolve(synth.scaled.gpu_nodes.resource.scaling_config)
    assert (scaling["minSize"], scaling["desiredSize"], scaling["maxSize"]) == (1, 1, 4)
    assert synth.scaled.gpu_nodes.labels[GPU_TYPE_LABEL] == "nvidia-h100"


def test_enable_is_idempotent_and_rejects_other_settings(synth: Synth) -> None:
    cluster = synth.scaled.cluster
    assert ClusterAutoscaler.enable(cluster) is synth.scaled.autoscaler
    assert ClusterAutoscaler.enable(cluster, ClusterAutoscalerSettings()) is not None
    with pytest.raises(FmValidationError, match="settings: must equal the settings"):
        ClusterAutoscaler.enable(cluster, ClusterAutoscalerSettings(expander="most-pods"))


def test_reserved_capacity_warning(synth: Synth) -> None:
    warnings = Annotations.from_stack(synth.stack).find_warning(
        "/TestStack/Scaled/Workload", Match.string_like_regexp("capacity-block reservation")
    )
    assert len(warnings) == 1
    assert not Annotations.from_stack(synth.stack).find_warning(
        "/TestStack/Fixed", Match.string_like_regexp("reservation")
    )


def test_an_autoscaled_pool_of_queued_training_jobs_is_warned_about(synth: Synth) -> None:
    """Kueue's topology-aware scheduling admits a job onto nodes that exist and reaches the
    Cluster Autoscaler only through a ProvisioningRequest admission check (kueue v0.19.2,
    site/content/en/docs/concepts/topology_aware_scheduling.md, "ClusterAutoscaler support"),
    which the library does not configure: an autoscaled training pool is warned about; a
    fixed one, and a serving pool (its model servers are not queued), are not."""
    annotations = Annotations.from_stack(synth.stack)
    warned = annotations.find_warning(
        "/TestStack/Scaled/Cluster/Queued",
        Match.string_like_regexp("ProvisioningRequest admission"),
    )
    assert len(warned) == 1
    assert "between 2 and 8 nodes" in str(warned[0].entry.data)
    for quiet in ("Fixed/Cluster/QueuedFixed", "Scaled/Workload", "Fixed/Workload"):
        assert not annotations.find_warning(
            f"/TestStack/{quiet}", Match.string_like_regexp("ProvisioningRequest")
        ), quiet


# ----------------------------------------------------------------------------- policy


def test_cfn_lint_clean(synth: Synth) -> None:
    assert cfn_lint(synth.raw, "us-east-1") == []


# ----------------------------------------------------------------------------- pure helpers


def test_image_tag_follows_every_supported_kubernetes_minor() -> None:
    assert set(charts.CLUSTER_AUTOSCALER_IMAGE_TAGS) == set(SUPPORTED_VERSIONS)
    for version, tag in charts.CLUSTER_AUTOSCALER_IMAGE_TAGS.items():
        assert tag.startswith(f"v{version}.")


@pytest.mark.parametrize(
    ("settings", "fields"),
    [
        (ClusterAutoscalerSettings(), []),
        (ClusterAutoscalerSettings(expander="priority"), ["settings.expander"]),
        (
            ClusterAutoscalerSettings(scale_down_delay_after_add="ten", max_node_provision_time=""),
            ["settings.scale_down_delay_after_add", "settings.max_node_provision_time"],
        ),
        (ClusterAutoscalerSettings(scale_down_unneeded_time="1h30m"), []),
    ],
)
def test_settings_rules(settings: ClusterAutoscalerSettings, fields: list[str]) -> None:
    assert [f.key for f in settings_findings(settings)] == fields


@pytest.mark.parametrize(
    ("instance_type", "label"),
    [
        ("p5.48xlarge", {GPU_TYPE_LABEL: "nvidia-h100"}),
        ("g7e.48xlarge", {GPU_TYPE_LABEL: "nvidia-rtx-pro-server-6000"}),
        ("trn2.48xlarge", {}),
        ("x9.nonexistent", {}),
    ],
)
def test_gpu_type_label(instance_type: str, label: dict[str, str]) -> None:
    assert gpu_type_label(instance_type) == label
