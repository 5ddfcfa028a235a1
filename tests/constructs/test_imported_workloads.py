"""An EKS cluster and an FSx for Lustre file system created outside the app
(``from_*_attributes``, returning ``IGpuCluster`` and ``ILustreFileSystem``) go wherever created
ones do: the workload patterns on EKS, HyperPod (EKS- and Slurm-orchestrated) and PCS take
them, and the synthesized templates are cfn-lint and cdk-nag clean."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
import pytest

from fm_constructs.orchestration import WorkloadOperators
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.hyperpod import Orchestrator
from fm_constructs.patterns import (
    HyperPodAcceleratedWorkload,
    IAcceleratedWorkload,
    PcsAcceleratedWorkload,
    PostTrainingWorkload,
    PretrainingWorkload,
)
from fm_constructs.storage import DataBucket, ILustreFileSystem
from tests.kubernetes_schemas import assert_valid
from tests.support import (
    IMPORTED_FS_GROUP,
    IMPORTED_FS_ID,
    cfn_lint,
    imported_eks_cluster,
    imported_file_system,
    imported_vpc,
    synth_stack,
)

FS_ID = IMPORTED_FS_ID
FS_GROUP = IMPORTED_FS_GROUP
#: The accelerated nodes of every workload here.
NODES: dict[str, Any] = {"instance_type": "p5.48xlarge", "node_count": 2}


def _imports(
    stack: cdk.Stack, kubernetes_version: str = "1.35"
) -> tuple[Any, IGpuCluster, ILustreFileSystem]:
    vpc = imported_vpc(stack)
    cluster = imported_eks_cluster(stack, vpc, kubernetes_version)
    file_system = imported_file_system(stack, association_paths=["/datasets", "/checkpoints"])
    return vpc, cluster, file_system


def _resources(template: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def _manifests(template: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Kubernetes objects of every manifest resource whose body is a plain JSON string."""
    objects: list[dict[str, Any]] = []
    for resource in _resources(template, "Custom::AWSCDK-EKS-KubernetesResource").values():
        body = resource["Properties"]["Manifest"]
        if isinstance(body, str):
            objects.extend(json.loads(body))
    return objects


def _ingress_into_file_system(template: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        r["Properties"]
        for r in _resources(template, "AWS::EC2::SecurityGroupIngress").values()
        if r["Properties"].get("GroupId") == FS_GROUP
    ]


def test_the_imports_are_the_interfaces() -> None:
    stack = cdk.Stack(cdk.App(), "Imports")
    _, cluster, file_system = _imports(stack)
    assert isinstance(cluster, IGpuCluster)
    assert isinstance(file_system, ILustreFileSystem)
    assert cluster.kubernetes_version and cluster.gpu_availability_zone == "us-east-1a"
    assert file_system.association_paths == ("/datasets", "/checkpoints")


@pytest.fixture(scope="module")
def pretraining() -> tuple[Mapping[str, Any], dict[str, Any]]:
    """PretrainingWorkload on the imported cluster, mounting the imported file system."""
    seen: dict[str, Any] = {}

    def build(stack: cdk.Stack) -> None:
        vpc, cluster, file_system = _imports(stack)
        data = DataBucket.from_data_bucket_attributes(stack, "Data", bucket_name="team-data")
        on = {"cluster": cluster, "subnet": vpc.private_subnets[0], "file_system": file_system}
        seen["workload"] = PretrainingWorkload(
            stack, "Pretraining", data_bucket=data, **on, **NODES
        )

    template = synth_stack(build).to_json()
    return template, seen


def test_pretraining_on_an_imported_cluster_and_file_system_is_lint_clean(
    pretraining: tuple[Mapping[str, Any], dict[str, Any]],
) -> None:
    template, seen = pretraining
    assert cfn_lint(template, "us-east-1") == []
    workload = seen["workload"]
    assert isinstance(workload, IAcceleratedWorkload)
    assert workload.file_system is not None and workload.file_system.file_system_id == FS_ID
    assert workload.queue_names == ("pretraining-jobs",)
    # No cluster and no file system are created: both exist already.
    assert _resources(template, "AWS::EKS::Cluster") == {}
    assert _resources(template, "AWS::FSx::FileSystem") == {}
    # The node groups join the imported cluster by name.
    groups = _resources(template, "AWS::EKS::Nodegroup")
    assert groups and {g["Properties"]["ClusterName"] for g in groups.values()} == {"team-gpu"}
    # The imported file system's group admits the workload's nodes on the Lustre ports.
    ports = {(r["FromPort"], r["ToPort"]) for r in _ingress_into_file_system(template)}
    assert ports == {(988, 988), (1018, 1023)}


def test_pretraining_manifests_bind_the_imported_file_system_and_validate(
    pretraining: tuple[Mapping[str, Any], dict[str, Any]],
) -> None:
    template, _ = pretraining
    objects = _manifests(template)
    volumes = [o for o in objects if o["kind"] == "PersistentVolume"]
    assert [v["spec"]["csi"]["volumeHandle"] for v in volumes] == [FS_ID]
    assert volumes[0]["spec"]["capacity"]["storage"] == "2400Gi"
    assert_valid(objects, kubernetes_version="1.35")
    # The operators the workload needs are installed on the imported cluster by this app.
    releases = {
        c["Properties"]["Release"]
        for c in _resources(template, "Custom::AWSCDK-EKS-HelmChart").values()
    }
    assert {"kueue", "kubeflow-trainer"} <= releases


def test_post_training_shares_the_imported_cluster_with_pretraining() -> None:
    def build(stack: cdk.Stack) -> None:
        vpc, cluster, file_system = _imports(stack)
        common: dict[str, Any] = {
            "cluster": cluster,
            "subnet": vpc.private_subnets[0],
            "instance_type": "p5.48xlarge",
            "node_count": 1,
            "file_system": file_system,
        }
        PretrainingWorkload(stack, "Pretraining", **common)
        PostTrainingWorkload(stack, "PostTraining", rollout_instance_type="p5.48xlarge", **common)

    template = synth_stack(build).to_json()
    assert cfn_lint(template, "us-east-1") == []
    claims = [o for o in _manifests(template) if o["kind"] == "PersistentVolumeClaim"]
    assert sorted(c["metadata"]["namespace"] for c in claims) == ["post-training", "pretraining"]


@pytest.mark.parametrize("orchestrator", [Orchestrator.EKS, Orchestrator.SLURM])
def test_hyperpod_takes_the_imported_cluster_and_file_system(orchestrator: Orchestrator) -> None:
    seen: dict[str, Any] = {}

    def build(stack: cdk.Stack) -> None:
        # SageMaker HyperPod attaches to EKS clusters up to 1.34.
        vpc, cluster, file_system = _imports(stack, "1.34")
        seen["workload"] = HyperPodAcceleratedWorkload(
            stack,
            "HyperPod",
            vpc=vpc,
            gpu_subnet=vpc.private_subnets[0],
            orchestrator=orchestrator,
            file_system=file_system,
            **NODES,
            eks_cluster=cluster if orchestrator is Orchestrator.EKS else None,
            # On a cluster it did not create, the workload switches on the operators it names.
            operators=WorkloadOperators(kueue=True, kubeflow_trainer=True),
            name="pretraining",
        )

    template = synth_stack(build).to_json()
    assert cfn_lint(template, "us-east-1") == []
    (hyperpod,) = _resources(template, "AWS::SageMaker::Cluster").values()
    workload = seen["workload"]
    assert isinstance(workload, IAcceleratedWorkload)
    assert workload.file_system is not None and workload.node_roles
    assert _ingress_into_file_system(template)
    if orchestrator is Orchestrator.EKS:
        # Attached to the imported cluster, with the workload's namespace, claim and queues.
        arn = json.dumps(hyperpod["Properties"]["Orchestrator"])
        assert ":cluster/team-gpu" in arn
        objects = _manifests(template)
        assert [
            o["spec"]["csi"]["volumeHandle"] for o in objects if o["kind"] == "PersistentVolume"
        ] == [FS_ID]
        assert workload.queue_names == ("pretraining-jobs",)
        assert_valid(objects, kubernetes_version="1.35")
        # Whether the imported cluster's aws-node has a role of its own is unknown, so the
        # nodes' role keeps the CNI policy.
        (execution,) = [
            r
            for r in _resources(template, "AWS::IAM::Role").values()
            if "AmazonSageMakerClusterInstanceRolePolicy" in json.dumps(r)
        ]
        assert "AmazonEKS_CNI_Policy" in json.dumps(execution["Properties"]["ManagedPolicyArns"])
    else:
        assert workload.queue_names


def test_pcs_takes_the_imported_file_system() -> None:
    seen: dict[str, Any] = {}

    def build(stack: cdk.Stack) -> None:
        vpc, _, file_system = _imports(stack)
        seen["workload"] = PcsAcceleratedWorkload(
            stack,
            "Pcs",
            vpc=vpc,
            gpu_subnet=vpc.private_subnets[0],
            ami_id="ami-0123456789abcdef0",
            file_system=file_system,
            **NODES,
        )

    template = synth_stack(build).to_json()
    assert cfn_lint(template, "us-east-1") == []
    workload = seen["workload"]
    assert isinstance(workload, IAcceleratedWorkload)
    assert workload.queue_names == ("accelerated",)
    assert workload.file_system is not None and workload.node_roles
    assert _ingress_into_file_system(template)
