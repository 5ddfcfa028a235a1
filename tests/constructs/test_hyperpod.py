"""HyperPodCluster: Slurm and EKS orchestrated clusters, instance groups, health checks,
recovery, execution role, lifecycle scripts, VPC config, cdk-nag and cfn-lint. One App,
synthesized once per module: "Slurm" (default layout on p5en with a training plan, EFA-enabled
Lustre, Prometheus) and "Eks" (a GpuEksCluster with a p5 and a trn2 group)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import cfnlint
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Template

from fm_constructs.compute import CapacitySource
from fm_constructs.domain.users import ClusterUser
from fm_constructs.errors import FmValidationError
from fm_constructs.kubernetes.hyperpod import HMA_IMAGE_ACCOUNTS
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.observability import PrometheusWorkspace
from fm_constructs.orchestration import GpuEksCluster, WorkloadOperators
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.hyperpod import (
    DeepHealthCheck,
    HyperPodCluster,
    InstanceGroup,
    KubernetesTaint,
    Orchestrator,
    PatchingStrategy,
    ScheduledUpdate,
    SlurmNodeType,
    slurm_instance_groups,
)
from fm_constructs.orchestration.hyperpod.eks import TRAINING_OPERATOR_ADDON
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.kubernetes_versions import (
    DEFAULT_KUBERNETES_VERSION,
    HYPERPOD_EKS_VERSIONS,
    SUPPORTED_VERSIONS,
)
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket, LustreFileSystem
from tests.kubernetes_schemas import assert_valid
from tests.support import TEST_ENV, cfn_lint, imported_vpc

#: The newest Kubernetes version both HyperPod and the library support.
HYPERPOD_KUBERNETES = [v for v in HYPERPOD_EKS_VERSIONS if v in SUPPORTED_VERSIONS][-1]
PLAN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5en-two-weeks"
ZONE = "us-east-1a"


def _vpc(stack: cdk.Stack) -> ec2.IVpc:
    return imported_vpc(stack, ZONE)


@dataclass
class Synth:
    templates: dict[str, Template]
    raw: dict[str, dict[str, Any]]
    clusters: dict[str, HyperPodCluster]
    seconds: float


@pytest.fixture(scope="module")
def synth() -> Iterator[Synth]:
    started = time.perf_counter()
    app = cdk.App()
    stacks = {name: cdk.Stack(app, name, env=TEST_ENV) for name in ("Slurm", "Eks")}
    clusters: dict[str, HyperPodCluster] = {}

    s = stacks["Slurm"]
    vpc = _vpc(s)
    subnet = vpc.private_subnets[0]
    fs = LustreFileSystem(
        s,
        "Fsx",
        vpc=vpc,
        subnet=subnet,
        data_bucket=DataBucket(s, "Data"),
        storage_capacity_gib=19200,
        efa_enabled=True,
    )
    groups = slurm_instance_groups(
        worker_instance_type="p5en.48xlarge",
        worker_count=4,
        worker_capacity=CapacitySource.training_plan(
            PLAN, availability_zone=ZONE, instance_count=4, instance_type="ml.p5en.48xlarge"
        ),
        ebs_kms_key=kms.Key(s, "EbsKey", enable_key_rotation=True),
    )
    clusters["Slurm"] = HyperPodCluster(
        s,
        "HyperPod",
        vpc=vpc,
        subnet=subnet,
        instance_groups=groups,
        lustre=fs,
        prometheus=PrometheusWorkspace(s, "Amp"),
    )

    s = stacks["Eks"]
    vpc = _vpc(s)
    subnet = vpc.private_subnets[0]
    eks_cluster = GpuEksCluster(
        s,
        "Eks",
        vpc=vpc,
        gpu_availability_zone=ZONE,
        kubernetes_version=HYPERPOD_KUBERNETES,
        operators=WorkloadOperators(kueue=False),
    )
    clusters["Eks"] = HyperPodCluster(
        s,
        "HyperPod",
        vpc=vpc,
        subnet=subnet,
        orchestrator=Orchestrator.EKS,
        eks_cluster=eks_cluster,
        cluster_name="fm-eks-hyperpod",
        task_governance=True,
        instance_groups=[
            InstanceGroup(
                name="p5",
                instance_type="ml.p5.48xlarge",
                instance_count=2,
                kubernetes_labels={"team": "pretraining"},
                kubernetes_taints=[KubernetesTaint(key="dedicated", value="pretraining")],
                scheduled_update=ScheduledUpdate("cron(0 4 ? * SUN *)", batch_percentage=25),
                auto_patch=PatchingStrategy.WHEN_IDLE,
            ),
            InstanceGroup(
                name="trn2",
                instance_type="trn1.32xlarge",
                instance_count=1,
                threads_per_core=2,
                deep_health_checks=[DeepHealthCheck.INSTANCE_STRESS],
                image_id="ami-0123456789abcdef0",
            ),
        ],
    )
    enable_nag(app)
    assembly = app.synth()
    seconds = time.perf_counter() - started
    raw = {name: assembly.get_stack_by_name(name).template for name in stacks}
    yield Synth(
        templates={name: Template.from_json(raw[name]) for name in stacks},
        raw=raw,
        clusters=clusters,
        seconds=seconds,
    )


def _of_type(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in raw["Resources"].items() if v["Type"] == kind}


def _cluster(raw: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    ((logical_id, resource),) = _of_type(raw, "AWS::SageMaker::Cluster").items()
    return logical_id, resource


def _groups(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    props = _cluster(raw)[1]["Properties"]
    return {g["InstanceGroupName"]: g for g in props["InstanceGroups"]}


def _statements(raw: dict[str, Any]) -> list[dict[str, Any]]:
    found = []
    for policy in _of_type(raw, "AWS::IAM::Policy").values():
        found.extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return found


# ----------------------------------------------------------------------------- cluster


def test_cluster_recovery_provisioning_and_stable_name(synth: Synth) -> None:
    _, slurm = _cluster(synth.raw["Slurm"])
    props = slurm["Properties"]
    assert props["NodeRecovery"] == "Automatic"
    # Continuous provisioning is documented for EKS-orchestrated clusters only.
    assert "NodeProvisioningMode" not in props
    assert _cluster(synth.raw["Eks"])[1]["Properties"]["NodeProvisioningMode"] == "Continuous"
    # HyperPod's default orchestrator is Slurm; an empty Slurm block is rejected by the API.
    assert "Orchestrator" not in props
    name = props["ClusterName"]
    assert name == synth.clusters["Slurm"].cluster_name
    assert len(name) <= 63 and name.startswith("Slurm-HyperPod-")
    assert slurm["DeletionPolicy"] == "Delete"
    _, eks = _cluster(synth.raw["Eks"])
    assert eks["Properties"]["ClusterName"] == "fm-eks-hyperpod"


def test_vpc_config_subnet_in_cluster_zone_with_efa_group(synth: Synth) -> None:
    props = _cluster(synth.raw["Slurm"])[1]["Properties"]
    assert props["VpcConfig"]["Subnets"] == ["subnet-0a000000000000001"]
    (group_ref,) = props["VpcConfig"]["SecurityGroupIds"]
    group_id = group_ref["Fn::GetAtt"][0]
    template = synth.templates["Slurm"]
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "IpProtocol": "-1",
            "GroupId": {"Fn::GetAtt": [group_id, "GroupId"]},
            "SourceSecurityGroupId": {"Fn::GetAtt": [group_id, "GroupId"]},
        },
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {
            "IpProtocol": "-1",
            "GroupId": {"Fn::GetAtt": [group_id, "GroupId"]},
            "DestinationSecurityGroupId": {"Fn::GetAtt": [group_id, "GroupId"]},
        },
    )
    # The file system accepts Lustre (988) and, being EFA-enabled, all traffic from the nodes.
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "IpProtocol": "tcp",
            "FromPort": 988,
            "ToPort": 988,
            "SourceSecurityGroupId": {"Fn::GetAtt": [group_id, "GroupId"]},
        },
    )


def test_slurm_default_groups(synth: Synth) -> None:
    groups = _groups(synth.raw["Slurm"])
    assert list(groups) == ["controller", "login", "workers"]
    controller, login, workers = groups["controller"], groups["login"], groups["workers"]
    assert controller["InstanceType"] == "ml.m5.2xlarge" and controller["InstanceCount"] == 1
    assert login["InstanceType"] == "ml.m5.4xlarge"
    # EFA interfaces without an IP, as the IP budget counts them; CPU groups have no EFA.
    assert workers["NetworkInterface"] == {"InterfaceType": "efa-only"}
    for cpu_group in (controller, login):
        assert "NetworkInterface" not in cpu_group
        assert "OnStartDeepHealthChecks" not in cpu_group
        assert "ThreadsPerCore" not in cpu_group
        assert "TrainingPlanArn" not in cpu_group
    assert workers["InstanceType"] == "ml.p5en.48xlarge"
    assert workers["InstanceCount"] == 4
    assert workers["ThreadsPerCore"] == 1
    assert workers["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert workers["TrainingPlanArn"] == PLAN
    (storage,) = workers["InstanceStorageConfigs"]
    assert storage["EbsVolumeConfig"]["VolumeSizeInGB"] == 500
    assert "Fn::GetAtt" in storage["EbsVolumeConfig"]["VolumeKmsKeyId"]
    for group in groups.values():
        assert group["LifeCycleConfig"]["OnCreate"] == "on_create.sh"
        assert "KubernetesConfig" not in group


def test_eks_groups_labels_taints_and_checks(synth: Synth) -> None:
    groups = _groups(synth.raw["Eks"])
    p5, trn2 = groups["p5"], groups["trn2"]
    assert p5["OnStartDeepHealthChecks"] == ["InstanceStress", "InstanceConnectivity"]
    assert p5["KubernetesConfig"]["Labels"] == {
        charts.WORKLOAD_LABEL: "gpu",
        "fm-constructs/instance-family": "p5",
        charts.GPU_PRESENT_LABEL: "true",
        charts.EFA_PRESENT_LABEL: "true",
        "team": "pretraining",
    }
    assert p5["KubernetesConfig"]["Taints"] == [
        {"Key": "dedicated", "Value": "pretraining", "Effect": "NoSchedule"}
    ]
    assert trn2["OnStartDeepHealthChecks"] == ["InstanceStress"]
    assert trn2["ThreadsPerCore"] == 2
    assert trn2["ImageId"] == "ami-0123456789abcdef0"
    assert trn2["KubernetesConfig"]["Labels"][charts.NEURON_PRESENT_LABEL] == "true"


def test_ami_updates_and_patches_only_where_asked(synth: Synth) -> None:
    groups = _groups(synth.raw["Eks"])
    assert groups["p5"]["ScheduledUpdateConfig"] == {
        "ScheduleExpression": "cron(0 4 ? * SUN *)",
        "DeploymentConfig": {
            "RollingUpdatePolicy": {
                "MaximumBatchSize": {"Type": "CAPACITY_PERCENTAGE", "Value": 25}
            },
            "WaitIntervalInSeconds": 300,
        },
    }
    assert groups["p5"]["AutoPatchConfig"] == {"PatchingStrategy": "WhenIdle"}
    for name, group in {**groups, **_groups(synth.raw["Slurm"])}.items():
        if name != "p5":
            assert "ScheduledUpdateConfig" not in group and "AutoPatchConfig" not in group


def test_rejects_a_schedule_cloudformation_would_refuse() -> None:
    workers = _workers(scheduled_update=ScheduledUpdate("0 4 * * 0", batch_percentage=0))
    with pytest.raises(FmValidationError) as raised:
        _build(instance_groups=workers)
    text = str(raised.value)
    assert "scheduled_update.cron: must be cron(" in text and "'0 4 * * 0'" in text
    assert "scheduled_update.batch_percentage: must be 1-100, got 0" in text


def test_eks_orchestrator_and_security_groups(synth: Synth) -> None:
    raw = synth.raw["Eks"]
    props = _cluster(raw)[1]["Properties"]
    ((eks_id, _),) = _of_type(raw, "AWS::EKS::Cluster").items()
    assert props["Orchestrator"] == {"Eks": {"ClusterArn": {"Fn::GetAtt": [eks_id, "Arn"]}}}
    ids = props["VpcConfig"]["SecurityGroupIds"]
    assert {"Fn::GetAtt": [eks_id, "ClusterSecurityGroupId"]} in ids
    assert len(ids) == 2
    assert {"Key": "SageMaker", "Value": "true"} in props["Tags"]


def test_eks_dependencies_before_and_addons_after(synth: Synth) -> None:
    raw = synth.raw["Eks"]
    hp_id, hp = _cluster(raw)
    depends = set(hp["DependsOn"])
    charts_by_release = {
        v["Properties"]["Release"]: k
        for k, v in _of_type(raw, "Custom::AWSCDK-EKS-HelmChart").items()
    }
    for release in (
        "nvidia-device-plugin",
        "neuron-helm-chart",
        "aws-efa-k8s-device-plugin",
        "dcgm-exporter",
    ):
        assert charts_by_release[release] in depends, release
    manifests = _of_type(raw, "Custom::AWSCDK-EKS-KubernetesResource")
    hma = [k for k, v in manifests.items() if "health-monitoring-agent" in json.dumps(v)]
    assert hma and set(hma) <= depends
    hma_text = json.dumps(manifests[hma[0]])
    assert f"{HMA_IMAGE_ACCOUNTS['us-east-1']}.dkr.ecr.us-east-1.amazonaws.com" in hma_text
    assert "ml.p5.48xlarge" in hma_text and "ml.trn1.32xlarge" in hma_text
    addons = {
        v["Properties"]["AddonName"]: (k, v) for k, v in _of_type(raw, "AWS::EKS::Addon").items()
    }
    vpc_cni_id = addons["vpc-cni"][0]
    assert vpc_cni_id in depends
    _, operator = addons[TRAINING_OPERATOR_ADDON]
    assert hp_id in operator["DependsOn"]
    assert addons["cert-manager"][0] in operator["DependsOn"]
    (association,) = operator["Properties"]["PodIdentityAssociations"]
    assert association["ServiceAccount"] == "hp-training-operator-controller-manager"
    governance = addons["amazon-sagemaker-hyperpod-taskgovernance"][1]
    assert hp_id in governance["DependsOn"]
    assert "AWS::EKS::AccessEntry" not in {
        v["Type"] for k, v in raw["Resources"].items() if k.startswith("HyperPod")
    }


def _manifest_objects(resource: dict[str, Any]) -> list[dict[str, Any]]:
    manifest = resource["Properties"]["Manifest"]
    if isinstance(manifest, dict):  # Fn::Join around tokens
        manifest = "".join(p for p in manifest["Fn::Join"][1] if isinstance(p, str))
    objects: list[dict[str, Any]] = json.loads(manifest)
    return objects


def test_eks_hyperpod_access_rbac_before_the_cluster(synth: Synth) -> None:
    """Deep health check service account, job auto-restart and patching RBAC for HyperPod's
    service-linked role, as the HyperPod dependencies chart grants them, before the cluster."""
    raw = synth.raw["Eks"]
    _, hp = _cluster(raw)
    manifests = _of_type(raw, "Custom::AWSCDK-EKS-KubernetesResource")
    (access_id,) = [k for k, v in manifests.items() if "deep-health-check" in json.dumps(v)]
    assert access_id in hp["DependsOn"]
    objects = _manifest_objects(manifests[access_id])
    by_name = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    dhc = by_name[("ServiceAccount", "deep-health-check-service-account")]
    assert dhc["metadata"]["namespace"] == "aws-hyperpod"
    dhc_role = by_name[("ClusterRole", "deep-health-check-service-account-role")]
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "patch"]} in (
        dhc_role["rules"]
    )
    for binding in ("job-auto-restart", "hyperpod-patching"):
        (subject,) = by_name[("ClusterRoleBinding", binding)]["subjects"]
        assert subject["kind"] == "User" and subject["name"] == "hyperpod-service-linked-role"
    patching = by_name[("ClusterRole", "hyperpod-patching")]["rules"]
    assert {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]} in patching
    # The namespace comes with the health monitoring agent, which is created first.
    hma_id = next(k for k, v in manifests.items() if "health-monitoring-agent" in json.dumps(v))
    assert hma_id in manifests[access_id]["DependsOn"]
    assert_valid(objects, kubernetes_version=HYPERPOD_KUBERNETES)


def test_eks_device_plugins_tolerate_the_hyperpod_health_taint(synth: Synth) -> None:
    raw = synth.raw["Eks"]
    taint = {
        "key": "sagemaker.amazonaws.com/node-health-status",
        "operator": "Equal",
        "value": "Unschedulable",
        "effect": "NoSchedule",
    }
    for resource in _of_type(raw, "Custom::AWSCDK-EKS-HelmChart").values():
        release = resource["Properties"]["Release"]
        if release not in (
            "nvidia-device-plugin",
            "neuron-helm-chart",
            "aws-efa-k8s-device-plugin",
            "dcgm-exporter",
        ):
            continue
        values = json.loads(resource["Properties"]["Values"])
        tolerations = values.get("tolerations") or values["devicePlugin"]["tolerations"]
        # Tolerated by name, or by a toleration of every taint.
        assert taint in tolerations or {"operator": "Exists"} in tolerations, release


# ----------------------------------------------------------------------------- role


def test_execution_role_trust_and_managed_policies(synth: Synth) -> None:
    roles = _of_type(synth.raw["Slurm"], "AWS::IAM::Role")
    (role,) = [
        r
        for r in roles.values()
        if r["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"]
        == {"Service": "sagemaker.amazonaws.com"}
    ]
    managed = json.dumps(role["Properties"]["ManagedPolicyArns"])
    assert "AmazonSageMakerClusterInstanceRolePolicy" in managed
    assert "AmazonEKS_CNI_Policy" not in managed
    eks_roles = _of_type(synth.raw["Eks"], "AWS::IAM::Role").values()
    eks_managed = " ".join(json.dumps(r["Properties"].get("ManagedPolicyArns")) for r in eks_roles)
    (execution,) = [
        json.dumps(r["Properties"]["ManagedPolicyArns"])
        for r in eks_roles
        if "AmazonSageMakerClusterInstanceRolePolicy"
        in json.dumps(r["Properties"].get("ManagedPolicyArns"))
    ]
    # The cluster's vpc-cni add-on gives aws-node a Pod Identity role on every node, so the
    # nodes' role carries no CNI policy (an imported cluster's nodes keep it:
    # test_imported_workloads).
    assert "AmazonEKS_CNI_Policy" not in execution
    assert "AmazonEC2ContainerRegistryReadOnly" in execution
    assert "AmazonSageMakerHyperPodTrainingOperatorAccess" in eks_managed


def test_execution_role_network_fsx_and_prometheus(synth: Synth) -> None:
    statements = _statements(synth.raw["Slurm"])
    by_sid = {s.get("Sid"): s for s in statements}
    create = by_sid["CreateInterfacesInClusterSubnet"]
    assert create["Action"] == "ec2:CreateNetworkInterface"
    assert any("subnet/subnet-0a000000000000001" in json.dumps(r) for r in create["Resource"])
    manage = by_sid["ManageInterfacesInClusterVpc"]
    assert "ec2:DeleteNetworkInterface" in manage["Action"]
    assert "ec2:Vpc" in manage["Condition"]["ArnEquals"]
    tag = by_sid["TagInterfaces"]
    assert tag["Action"] == "ec2:CreateTags" and "Condition" not in tag
    assert ":network-interface/*" in json.dumps(tag["Resource"])
    # Slurm EFA workers pull the EFA exporter image from the HyperPod ECR registry only.
    pull = by_sid["PullExporterImages"]
    assert ":602401143452:repository/hyperpod/efa_exporter" in json.dumps(pull["Resource"])
    assert by_sid["EcrLogin"]["Action"] == "ecr:GetAuthorizationToken"
    assert by_sid["DescribeFileSystems"]["Action"] == "fsx:DescribeFileSystems"
    assert any(s["Action"] == "aps:RemoteWrite" for s in statements)
    eks_by_sid = {s.get("Sid"): s for s in _statements(synth.raw["Eks"])}
    assert eks_by_sid["PodIdentity"]["Action"] == "eks-auth:AssumeRoleForPodIdentity"
    assert "PullExporterImages" not in eks_by_sid  # EKS nodes hold the ECR read-only policy


def _arn_resource_type(resource: Any) -> str:
    """``network-interface`` for an ec2 network-interface ARN (tokens flattened)."""
    text = json.dumps(resource)
    if text == '"*"':
        return "*"
    found = re.findall(r":([a-z][a-z-]*)/", text)
    return found[-1] if found else text


def test_execution_role_covers_every_resource_type_iam_evaluates(synth: Synth) -> None:
    """Each EC2 action is allowed on every resource type IAM evaluates for it (cfn-lint's copy
    of the service authorization reference), e.g. DetachNetworkInterface on the instance too."""
    policies = json.loads(
        (Path(cfnlint.__file__).parent / "data" / "AdditionalSpecs" / "Policies.json").read_text()
    )
    for name in ("Slurm", "Eks"):
        allowed: dict[str, set[str]] = {}
        for statement in _statements(synth.raw[name]):
            actions = statement["Action"]
            resources = statement["Resource"]
            for action in actions if isinstance(actions, list) else [actions]:
                for resource in resources if isinstance(resources, list) else [resources]:
                    allowed.setdefault(action, set()).add(_arn_resource_type(resource))
        for action, types in allowed.items():
            service, verb = action.split(":")
            if service != "ec2" or "*" in types:
                continue
            required = set(policies["ec2"]["Actions"][verb.lower()]["Resources"])
            if action == "ec2:CreateTags":
                required = {"network-interface"}  # tags only what HyperPod creates
            assert required <= types, (name, action, sorted(required - types))


def test_execution_role_reads_exactly_the_lifecycle_prefix(synth: Synth) -> None:
    """The managed policy only reads sagemaker-* buckets: the lifecycle prefix needs its own
    grant, limited to that prefix."""
    cluster = synth.clusters["Slurm"]
    prefix = cluster.lifecycle.prefix
    statements = _statements(synth.raw["Slurm"])
    reads = [s for s in statements if s["Action"] == "s3:GetObject"]
    assert any(prefix + "*" in json.dumps(s["Resource"]) for s in reads)
    lists = [s for s in statements if s["Action"] == "s3:ListBucket"]
    assert any(s["Condition"] == {"StringLike": {"s3:prefix": [prefix + "*"]}} for s in lists)
    uri = _groups(synth.raw["Slurm"])["workers"]["LifeCycleConfig"]["SourceS3Uri"]
    assert prefix in json.dumps(uri)
    # No other S3 access: every S3 statement of the execution role names the lifecycle bucket
    # (its managed policy reads sagemaker-* buckets only).
    for name in ("Slurm", "Eks"):
        cluster = synth.clusters[name]
        stack = cdk.Stack.of(cluster)
        role_id = stack.resolve(cluster.execution_role.role.node.default_child.logical_id)  # type: ignore[union-attr]
        bucket_id = stack.resolve(cluster.lifecycle.bucket.node.default_child.logical_id)  # type: ignore[union-attr]
        checked = 0
        for policy in _of_type(synth.raw[name], "AWS::IAM::Policy").values():
            if {"Ref": role_id} not in policy["Properties"].get("Roles", []):
                continue
            for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
                actions = statement["Action"]
                listed = [actions] if isinstance(actions, str) else actions
                if any(a.startswith("s3:") for a in listed):
                    assert bucket_id in json.dumps(statement["Resource"]), (name, statement)
                    checked += 1
        assert checked >= 2, name  # the object read and the prefix-scoped list


# ----------------------------------------------------------------------------- lifecycle


def test_lifecycle_deployment_carries_scripts_and_parameters(synth: Synth) -> None:
    raw = synth.raw["Slurm"]
    (deployment,) = _of_type(raw, "Custom::CDKBucketDeployment").values()
    props = deployment["Properties"]
    assert len(props["SourceObjectKeys"]) == 2
    assert props["DestinationBucketKeyPrefix"] == synth.clusters["Slurm"].lifecycle.prefix
    markers = json.dumps(props.get("SourceMarkers", []))
    assert "provisioning_parameters" not in markers  # the JSON body is an asset, tokens marked
    _, cluster = _cluster(raw)
    assert deployment is not None and cluster["DependsOn"]
    # The nodes open the file system's linked directories (not its root) to every user.
    fsx = synth.clusters["Slurm"].lifecycle.parameters["fsx"]
    assert fsx["shared_directories"] == ["/datasets", "/checkpoints"]


# ----------------------------------------------------------------------------- policy


@pytest.mark.parametrize("name", ["Slurm", "Eks"])
def test_cfn_lint_clean(synth: Synth, name: str) -> None:
    assert cfn_lint(synth.raw[name], "us-east-1") == []


def test_synthesis_is_fast_enough(synth: Synth) -> None:
    assert synth.seconds < 60


# ----------------------------------------------------------------------------- bad input


def _build(**overrides: Any) -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Bad", env=TEST_ENV)
    vpc = _vpc(stack)
    props: dict[str, Any] = {
        "vpc": vpc,
        "subnet": vpc.private_subnets[0],
        "instance_groups": slurm_instance_groups(
            worker_instance_type="p5.48xlarge", worker_count=2
        ),
    }
    props.update(overrides)
    HyperPodCluster(stack, "HyperPod", **props)


def _workers(**fields: Any) -> list[InstanceGroup]:
    base = slurm_instance_groups(worker_instance_type="p5.48xlarge", worker_count=2)
    values = {"name": "workers", "instance_type": "p5.48xlarge", "instance_count": 2}
    values.update(fields)
    return [*base[:2], InstanceGroup(**values)]


def test_rejects_an_eks_cluster_of_a_version_hyperpod_does_not_support() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=TEST_ENV)
    vpc = _vpc(stack)
    # The library's default is newer than anything HyperPod supports on EKS.
    assert DEFAULT_KUBERNETES_VERSION not in HYPERPOD_EKS_VERSIONS
    eks_cluster = GpuEksCluster(stack, "Eks", vpc=vpc, gpu_availability_zone=ZONE)
    with pytest.raises(FmValidationError, match=r"eks_cluster\.kubernetes_version: SageMaker"):
        HyperPodCluster(
            stack,
            "HyperPod",
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            orchestrator=Orchestrator.EKS,
            eks_cluster=eks_cluster,
            instance_groups=[InstanceGroup(name="w", instance_type="p5.48xlarge")],
        )


def test_legacy_efa_layout_requests_efa_interfaces() -> None:
    group = InstanceGroup(name="w", instance_type="p5.48xlarge", efa_layout=EfaLayout.LEGACY)
    assert group.network_interface_type == "efa"
    assert InstanceGroup(name="w", instance_type="p5.48xlarge").network_interface_type == (
        "efa-only"
    )
    assert InstanceGroup(name="c", instance_type="ml.m5.large").network_interface_type is None


def test_rejects_instance_type_hyperpod_does_not_offer() -> None:
    with pytest.raises(
        FmValidationError,
        match=r"instance_type: must be an instance type "
        r"SageMaker HyperPod offers.*got 'trn1.2xlarge'",
    ):
        _build(instance_groups=_workers(instance_type="trn1.2xlarge"))


def test_rejects_training_plan_on_cpu_group() -> None:
    groups = slurm_instance_groups(worker_instance_type="p5.48xlarge", worker_count=2)
    bad = InstanceGroup(
        name="controller",
        instance_type="ml.m5.2xlarge",
        slurm_node_type=SlurmNodeType.CONTROLLER,
        capacity=CapacitySource.training_plan(PLAN),
    )
    with pytest.raises(FmValidationError, match="a training plan reserves accelerated capacity"):
        _build(instance_groups=[bad, *groups[1:]])


def test_rejects_zero_workers() -> None:
    with pytest.raises(FmValidationError, match=r"instance_count: a worker group needs between 1"):
        _build(instance_groups=_workers(instance_count=0))


def test_rejects_unsupported_threads_per_core() -> None:
    with pytest.raises(FmValidationError, match=r"threads_per_core: must be 1 .* or 2 .*got 4"):
        _build(instance_groups=_workers(threads_per_core=4))


def test_rejects_kubernetes_labels_on_slurm() -> None:
    with pytest.raises(FmValidationError, match="apply to EKS-orchestrated clusters only"):
        _build(instance_groups=_workers(kubernetes_labels={"team": "a"}))


def test_rejects_capacity_block_and_wrong_zone_together() -> None:
    capacity = CapacitySource.capacity_block("cr-0123456789abcdef0")
    with pytest.raises(FmValidationError) as error:
        _build(instance_groups=_workers(capacity=capacity, deep_health_checks=["Bogus"]))
    text = str(error.value)
    assert "cannot use EC2 capacity reservations" in text
    assert "each must be one of InstanceStress, InstanceConnectivity" in text


def test_rejects_eks_without_cluster_and_slurm_layout_errors() -> None:
    with pytest.raises(FmValidationError) as error:
        _build(orchestrator=Orchestrator.EKS)
    text = str(error.value)
    assert "needs the GpuEksCluster it attaches to" in text
    assert "EKS-orchestrated clusters have worker groups only" in text
    with pytest.raises(FmValidationError, match="exactly one controller group"):
        _build(instance_groups=_workers()[1:])


def test_rejects_users_without_a_file_system_or_with_bad_ids() -> None:
    with pytest.raises(FmValidationError, match=r"users: need lustre: their homes"):
        _build(users=[ClusterUser(name="alice", uid=2001)])
    with pytest.raises(FmValidationError) as raised:
        _build(users=[ClusterUser(name="root", uid=5), ClusterUser(name="bob", uid=5)])
    text = str(raised.value)
    assert "users[0].name: is an account of the node image" in text
    assert "users[0].uid: must be 2000 to 59999" in text
    assert "users[1].uid: is already used by users[0] (root)" in text
    assert set(raised.value.codes) >= {"FM330", "FM331"}


def _slurm(stack: cdk.Stack, construct_id: str, vpc: ec2.IVpc, **props: Any) -> HyperPodCluster:
    return HyperPodCluster(
        stack,
        construct_id,
        vpc=vpc,
        subnet=vpc.private_subnets[0],
        instance_groups=slurm_instance_groups(worker_instance_type="p5.48xlarge", worker_count=2),
        **props,
    )


def test_an_efa_security_group_of_either_type_is_used_as_given() -> None:
    """efa_security_group takes an EfaSecurityGroup or a plain security group (as EfaNodeGroup
    and GpuLaunchTemplate do); the former name security_group is gone."""
    stack = cdk.Stack(cdk.App(), "Groups", env=TEST_ENV)
    vpc = _vpc(stack)
    efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
    plain = ec2.SecurityGroup(stack, "Plain", vpc=vpc)
    assert _slurm(stack, "A", vpc, efa_security_group=efa).efa_security_group is efa.security_group
    assert _slurm(stack, "B", vpc, efa_security_group=plain).efa_security_group is plain
    with pytest.raises(TypeError, match="security_group"):
        _slurm(stack, "C", vpc, security_group=efa)
