"""GpuEksCluster: control plane settings, access entries, managed add-ons, pinned charts, the
system node group, FSx for Lustre volumes, device plugins following the node groups, cdk-nag
and cfn-lint. One App, synthesized once per module: "Default" (defaults + a p5en node group +
a Lustre volume), "Custom" (public CIDRs, given key, every operator, pinned add-ons) and
"Neuron" (us-east-2, Trainium2 on a Capacity Block)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Match, Template

from fm_constructs.compute import CapacitySource
from fm_constructs.errors import FmValidationError
from fm_constructs.orchestration import (
    DevicePlugins,
    EfaNodeGroup,
    GpuEksCluster,
    WorkloadOperators,
)
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket, LustreFileSystem
from tests.support import TEST_ENV, cfn_lint, imported_vpc

ADMIN = "arn:aws:iam::111122223333:role/PlatformAdmin"
OPS = "arn:aws:iam::111122223333:role/path/Operators"
CB = "cr-0123456789abcdef0"
ENVS = {"Neuron": cdk.Environment(account=TEST_ENV.account, region="us-east-2")}
ZONES = {"Neuron": "us-east-2a"}


def _vpc(stack: cdk.Stack, zone: str) -> ec2.IVpc:
    return imported_vpc(stack, zone)


@dataclass
class Synth:
    templates: dict[str, Template]
    raw: dict[str, dict[str, Any]]
    clusters: dict[str, GpuEksCluster]
    seconds: float


@pytest.fixture(scope="module")
def synth() -> Iterator[Synth]:
    started = time.perf_counter()
    app = cdk.App()
    stacks: dict[str, cdk.Stack] = {}
    clusters: dict[str, GpuEksCluster] = {}

    for name in ("Default", "Custom", "Neuron"):
        stacks[name] = cdk.Stack(app, name, env=ENVS.get(name, TEST_ENV))

    s = stacks["Default"]
    vpc = _vpc(s, "us-east-1a")
    cluster = GpuEksCluster(
        s, "Eks", vpc=vpc, gpu_availability_zone="us-east-1a", admin_role_arns=[ADMIN, OPS]
    )
    subnet = vpc.private_subnets[0]
    fs = LustreFileSystem(s, "Fsx", vpc=vpc, subnet=subnet, data_bucket=DataBucket(s, "Data"))
    cluster.add_lustre_volume(fs, name="shared", namespace="training")
    EfaNodeGroup(
        s, "P5en", cluster=cluster, instance_type="p5en.48xlarge", subnet=subnet, node_count=2
    )
    clusters["Default"] = cluster

    s = stacks["Custom"]
    vpc = _vpc(s, "us-east-1a")
    clusters["Custom"] = GpuEksCluster(
        s,
        "Eks",
        vpc=vpc,
        kubernetes_version="1.35",
        cluster_name="fm-custom",
        public_access_cidrs=["203.0.113.0/24"],
        secrets_key=kms.Key(s, "Key", enable_key_rotation=True),
        system_instance_type="m7i.2xlarge",
        system_node_count=3,
        addon_versions={"vpc-cni": "v1.20.4-eksbuild.1"},
        device_plugins=DevicePlugins(nvidia=False, efa=False, dcgm_exporter=False),
        operators=WorkloadOperators(
            kueue=True, kubeflow_trainer=True, kuberay=True, leader_worker_set=True
        ),
    )

    s = stacks["Neuron"]
    vpc = _vpc(s, "us-east-2a")
    cluster = GpuEksCluster(
        s,
        "Eks",
        vpc=vpc,
        gpu_availability_zone="us-east-2a",
        device_plugins=DevicePlugins(nvidia=False, efa=False),
        operators=WorkloadOperators(kueue=False, kubeflow_trainer=False),
    )
    EfaNodeGroup(
        s,
        "Trn2",
        cluster=cluster,
        instance_type="trn2.48xlarge",
        subnet=vpc.private_subnets[0],
        node_count=4,
        capacity=CapacitySource.capacity_block(
            CB, availability_zone="us-east-2a", instance_count=4
        ),
    )
    clusters["Neuron"] = cluster

    enable_nag(app)
    assembly = app.synth()
    seconds = time.perf_counter() - started
    raw = {name: assembly.get_stack_by_name(name).template for name in stacks}
    templates = {name: Template.from_json(raw[name]) for name in stacks}
    yield Synth(templates=templates, raw=raw, clusters=clusters, seconds=seconds)


def _of_type(raw: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in raw["Resources"].items() if v["Type"] == kind}


def _charts(raw: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = _of_type(raw, "Custom::AWSCDK-EKS-HelmChart")
    return {v["Properties"]["Release"]: v["Properties"] for v in found.values()}


# ----------------------------------------------------------------------------- control plane


def test_cluster_private_logged_encrypted_api_auth(synth: Synth) -> None:
    synth.templates["Default"].has_resource_properties(
        "AWS::EKS::Cluster",
        {
            "Version": "1.35",
            "AccessConfig": {
                "AuthenticationMode": "API",
                "BootstrapClusterCreatorAdminPermissions": False,
            },
            "ResourcesVpcConfig": {
                "EndpointPrivateAccess": True,
                "EndpointPublicAccess": False,
                "SubnetIds": ["subnet-0a000000000000001", "subnet-0a000000000000002"],
            },
            "Logging": {
                "ClusterLogging": {
                    "EnabledTypes": [
                        {"Type": t}
                        for t in ("api", "audit", "authenticator", "controllerManager", "scheduler")
                    ]
                }
            },
            "EncryptionConfig": [
                {"Provider": {"KeyArn": Match.any_value()}, "Resources": ["secrets"]}
            ],
            "ComputeConfig": {"Enabled": False},
        },
    )


def test_secrets_key_created_with_rotation_and_retained(synth: Synth) -> None:
    synth.templates["Default"].has_resource(
        "AWS::KMS::Key",
        {
            "Properties": {
                "EnableKeyRotation": True,
                "Description": "EKS secrets envelope encryption",
            },
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


def test_public_endpoint_only_for_listed_cidrs_and_given_key(synth: Synth) -> None:
    template = synth.templates["Custom"]
    template.has_resource_properties(
        "AWS::EKS::Cluster",
        {
            "Name": "fm-custom",
            "ResourcesVpcConfig": {
                "EndpointPrivateAccess": True,
                "EndpointPublicAccess": True,
                "PublicAccessCidrs": ["203.0.113.0/24"],
            },
        },
    )
    # The given key is used; no second key is created.
    template.resource_count_is("AWS::KMS::Key", 1)
    assert (
        "Description"
        not in next(iter(_of_type(synth.raw["Custom"], "AWS::KMS::Key").values()))["Properties"]
    )


def test_admin_access_entries_for_each_role(synth: Synth) -> None:
    entries = _of_type(synth.raw["Default"], "AWS::EKS::AccessEntry")
    principals = {json.dumps(v["Properties"]["PrincipalArn"]) for v in entries.values()}
    assert json.dumps(ADMIN) in principals and json.dumps(OPS) in principals
    for entry in entries.values():
        policies = entry["Properties"]["AccessPolicies"]
        assert policies[0]["AccessScope"] == {"Type": "cluster"}
        assert "AmazonEKSClusterAdminPolicy" in json.dumps(policies[0]["PolicyArn"])
    # Two given roles plus the kubectl provider's own entry.
    assert len(entries) == 3


def test_system_node_group_cpu_private_auto_repair(synth: Synth) -> None:
    synth.templates["Default"].has_resource_properties(
        "AWS::EKS::Nodegroup",
        {
            "AmiType": "AL2023_x86_64_STANDARD",
            "CapacityType": "ON_DEMAND",
            "InstanceTypes": ["m7i.xlarge"],
            "Labels": {"fm-constructs/workload": "system"},
            "NodeRepairConfig": {"Enabled": True},
            "ScalingConfig": {"MinSize": 2, "DesiredSize": 2, "MaxSize": 4},
            "Subnets": ["subnet-0a000000000000001", "subnet-0a000000000000002"],
        },
    )
    synth.templates["Custom"].has_resource_properties(
        "AWS::EKS::Nodegroup",
        {
            "InstanceTypes": ["m7i.2xlarge"],
            "ScalingConfig": {"MinSize": 3, "DesiredSize": 3, "MaxSize": 6},
        },
    )


def test_system_nodes_keep_pods_off_the_metadata_service(synth: Synth) -> None:
    """The system node group has its own launch template: IMDSv2 required with hop limit 1
    (pods outside the host network cannot take the node role) and an encrypted gp3 root
    volume; no AMI, instance type, security group or subnet, which the node group sets."""
    raw = synth.raw["Default"]["Resources"]
    (system,) = [
        r["Properties"]
        for r in raw.values()
        if r["Type"] == "AWS::EKS::Nodegroup"
        and r["Properties"].get("Labels", {}).get("fm-constructs/workload") == "system"
    ]
    template_id = system["LaunchTemplate"]["Id"]["Ref"]
    assert system["LaunchTemplate"]["Version"] == {
        "Fn::GetAtt": [template_id, "LatestVersionNumber"]
    }
    assert "DiskSize" not in system
    data = raw[template_id]["Properties"]["LaunchTemplateData"]
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpTokens": "required",
        "HttpPutResponseHopLimit": 1,
    }
    (volume,) = data["BlockDeviceMappings"]
    assert volume["DeviceName"] == "/dev/xvda"
    assert volume["Ebs"] == {
        "VolumeSize": 20,
        "VolumeType": "gp3",
        "Encrypted": True,
        "DeleteOnTermination": True,
    }
    assert not {"ImageId", "InstanceType", "SecurityGroupIds", "NetworkInterfaces"} & set(data)


def test_operators_by_name() -> None:
    assert WorkloadOperators.named(["kueue", "leader_worker_set"]) == WorkloadOperators(
        kueue=True, kubeflow_trainer=False, kuberay=False, leader_worker_set=True
    )
    assert WorkloadOperators.named([]) == WorkloadOperators(False, False, False, False)
    with pytest.raises(ValueError, match="unknown operators \\['keda'\\]"):
        WorkloadOperators.named(["kueue", "keda"])


# ----------------------------------------------------------------------------- add-ons


def test_managed_addons_overwrite_self_managed(synth: Synth) -> None:
    addons = _of_type(synth.raw["Default"], "AWS::EKS::Addon")
    names = {v["Properties"]["AddonName"]: v for v in addons.values()}
    assert set(names) == {
        "vpc-cni",
        "coredns",
        "kube-proxy",
        "eks-pod-identity-agent",
        "aws-fsx-csi-driver",
        "eks-node-monitoring-agent",
    }
    for addon in names.values():
        assert addon["Properties"]["ResolveConflicts"] == "OVERWRITE"
        # Versions are left to EKS unless pinned.
        assert "AddonVersion" not in addon["Properties"]


def test_pod_running_addons_wait_for_system_nodes(synth: Synth) -> None:
    raw = synth.raw["Default"]
    addons = {v["Properties"]["AddonName"]: v for v in _of_type(raw, "AWS::EKS::Addon").values()}
    system = next(
        k
        for k, v in _of_type(raw, "AWS::EKS::Nodegroup").items()
        if v["Properties"]["AmiType"] == "AL2023_x86_64_STANDARD"
    )
    for name in ("coredns", "aws-fsx-csi-driver", "eks-node-monitoring-agent"):
        assert system in addons[name]["DependsOn"], name
    for name in ("vpc-cni", "kube-proxy"):
        assert system not in addons[name].get("DependsOn", []), name


def test_fsx_csi_role_through_pod_identity(synth: Synth) -> None:
    template = synth.templates["Default"]
    template.has_resource_properties(
        "AWS::EKS::Addon",
        {
            "AddonName": "aws-fsx-csi-driver",
            "PodIdentityAssociations": [
                {"ServiceAccount": "fsx-csi-controller-sa", "RoleArn": Match.any_value()}
            ],
        },
    )
    template.has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {
                        "Action": ["sts:AssumeRole", "sts:TagSession"],
                        "Effect": "Allow",
                        "Principal": {"Service": "pods.eks.amazonaws.com"},
                    }
                ]
            }
        },
    )


def test_pinned_addon_version(synth: Synth) -> None:
    synth.templates["Custom"].has_resource_properties(
        "AWS::EKS::Addon", {"AddonName": "vpc-cni", "AddonVersion": "v1.20.4-eksbuild.1"}
    )


# ----------------------------------------------------------------------------- charts


def test_default_charts_pinned_from_public_repositories(synth: Synth) -> None:
    found = _charts(synth.raw["Default"])
    assert set(found) == {
        "nvidia-device-plugin",
        "dcgm-exporter",
        "aws-efa-k8s-device-plugin",
        "kueue",
        "kubeflow-trainer",
    }
    for spec in charts.ALL_CHARTS:
        if spec.release in found:
            props = found[spec.release]
            assert (props["Chart"], props["Repository"], props["Version"]) == (
                spec.chart,
                spec.repository,
                spec.version,
            )
            assert props["Namespace"] == spec.namespace
            assert props["Repository"].startswith(("https://", "oci://"))


def test_device_plugins_tolerate_every_taint(synth: Synth) -> None:
    """Per-node agents land on every accelerated node whatever taints its group adds (the RL
    rollout group's ``workload-role``, a user's own)."""
    found = _charts(synth.raw["Default"])
    every_taint = [{"operator": "Exists"}]
    nvidia = json.loads(found["nvidia-device-plugin"]["Values"])
    assert nvidia["tolerations"] == every_taint
    assert nvidia["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    efa = json.loads(found["aws-efa-k8s-device-plugin"]["Values"])
    assert efa["tolerations"] == every_taint
    assert efa["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    # The chart's own instance list predates p5en/p6; the catalog's EFA types replace it.
    for name in ("p5en.48xlarge", "p6-b300.48xlarge", "trn2.48xlarge"):
        assert name in efa["supportedInstanceLabels"]["values"]
    dcgm = json.loads(found["dcgm-exporter"]["Values"])
    assert dcgm["tolerations"] == every_taint
    addons = {
        r["Properties"]["AddonName"]: r["Properties"]
        for r in synth.raw["Default"]["Resources"].values()
        if r["Type"] == "AWS::EKS::Addon"
    }
    agent = json.loads(addons["eks-node-monitoring-agent"]["ConfigurationValues"])
    # Tolerations only: an affinity of ours would replace the add-on's default, which keeps the
    # agent off HyperPod nodes (their health-monitoring agent watches them).
    assert agent == {
        "dcgmAgent": {"tolerations": every_taint},
        "nodeAgent": {"tolerations": every_taint},
    }


def test_device_plugins_do_not_block_on_absent_gpu_nodes(synth: Synth) -> None:
    found = _charts(synth.raw["Default"])
    for release in ("nvidia-device-plugin", "dcgm-exporter", "aws-efa-k8s-device-plugin"):
        assert found[release].get("Wait", False) is False, release
    for release in ("kueue", "kubeflow-trainer"):
        assert found[release]["Wait"] is True, release


def test_operators_switchable(synth: Synth) -> None:
    found = _charts(synth.raw["Custom"])
    assert set(found) == {"kueue", "kubeflow-trainer", "kuberay-operator", "lws"}
    assert found["lws"]["Repository"] == "oci://registry.k8s.io/lws/charts/lws"


def test_neuron_node_group_enables_neuron_and_efa_plugins(synth: Synth) -> None:
    found = _charts(synth.raw["Neuron"])
    assert set(found) == {"neuron-helm-chart", "aws-efa-k8s-device-plugin"}
    values = json.loads(found["neuron-helm-chart"]["Values"])
    assert "trn2.48xlarge" in values["neuronInstances"]
    assert values["npd"] == {"enabled": False}
    assert values["devicePlugin"]["tolerations"] == [{"operator": "Exists"}]


def test_kubectl_layer_matches_kubernetes_version(synth: Synth) -> None:
    layers = _of_type(synth.raw["Default"], "AWS::Lambda::LayerVersion")
    descriptions = " ".join(v["Properties"].get("Description", "") for v in layers.values())
    assert "kubectl" in descriptions.lower() and "1.35" in descriptions


# ----------------------------------------------------------------------------- FSx for Lustre


def test_lustre_volume_manifest(synth: Synth) -> None:
    resources = _of_type(synth.raw["Default"], "Custom::AWSCDK-EKS-KubernetesResource")
    assert len(resources) == 1
    manifest = json.dumps(next(iter(resources.values()))["Properties"]["Manifest"])
    for fragment in (
        '\\"kind\\":\\"Namespace\\"',
        '\\"kind\\":\\"PersistentVolume\\"',
        '\\"kind\\":\\"PersistentVolumeClaim\\"',
        "fsx.csi.aws.com",
        '\\"namespace\\":\\"training\\"',
        '\\"name\\":\\"shared\\"',
    ):
        assert fragment in manifest, fragment


def test_lustre_ports_open_from_cluster_and_efa_nodes(synth: Synth) -> None:
    raw = synth.raw["Default"]
    fs_group = next(
        k
        for k, v in _of_type(raw, "AWS::EC2::SecurityGroup").items()
        if k.startswith("FsxSecurityGroup")
    )
    rules = [
        v["Properties"]
        for v in _of_type(raw, "AWS::EC2::SecurityGroupIngress").values()
        if v["Properties"]["GroupId"] == {"Fn::GetAtt": [fs_group, "GroupId"]}
    ]
    sources = {json.dumps(r["SourceSecurityGroupId"]) for r in rules if r.get("FromPort") == 988}
    assert any("ClusterSecurityGroupId" in s for s in sources)
    assert any("P5enEfaSecurityGroup" in s for s in sources)
    ports = {(r["FromPort"], r["ToPort"]) for r in rules}
    assert ports == {(988, 988), (1018, 1023)}


# ----------------------------------------------------------------------------- policy


@pytest.mark.parametrize("name", ["Default", "Custom", "Neuron"])
def test_cfn_lint_clean(synth: Synth, name: str) -> None:
    assert cfn_lint(synth.raw[name], ENVS.get(name, TEST_ENV).region) == []


def test_nag_clean_and_synth_fast(synth: Synth) -> None:
    # enable_nag fails synthesis on any unacknowledged finding; reaching here means clean.
    assert set(synth.raw) == {"Default", "Custom", "Neuron"}
    assert synth.seconds < 60, f"three clusters took {synth.seconds:.1f}s to synthesize"


# ----------------------------------------------------------------------------- bad input


@pytest.fixture
def vpc_stack() -> tuple[cdk.Stack, ec2.IVpc]:
    stack = cdk.Stack(cdk.App(), "Bad", env=TEST_ENV)
    return stack, _vpc(stack, "us-east-1a")


def test_unsupported_kubernetes_version_lists_supported(
    vpc_stack: tuple[cdk.Stack, ec2.IVpc],
) -> None:
    stack, vpc = vpc_stack
    with pytest.raises(
        FmValidationError, match=r"kubernetes_version: .*1\.34, 1\.35, 1\.36.*'1\.29'"
    ):
        GpuEksCluster(stack, "Eks", vpc=vpc, kubernetes_version="1.29")


def test_every_problem_reported_at_once(vpc_stack: tuple[cdk.Stack, ec2.IVpc]) -> None:
    stack, vpc = vpc_stack
    with pytest.raises(FmValidationError) as error:
        GpuEksCluster(
            stack,
            "Eks",
            vpc=vpc,
            kubernetes_version="2.0",
            admin_role_arns=["arn:aws:iam::111122223333:user/alice"],
            public_access_cidrs=["0.0.0.0/0", "not-a-cidr"],
            system_node_count=0,
        )
    problems = "\n".join(error.value.problems)
    for fragment in (
        "kubernetes_version",
        "admin_role_arns[0]",
        "public_access_cidrs[0]: must not open the API endpoint to the whole internet",
        "public_access_cidrs[1]",
        "system_node_count",
    ):
        assert fragment in problems, fragment


def test_bad_addon_versions(vpc_stack: tuple[cdk.Stack, ec2.IVpc]) -> None:
    stack, vpc = vpc_stack
    with pytest.raises(FmValidationError) as error:
        GpuEksCluster(
            stack,
            "Eks",
            vpc=vpc,
            addon_versions={
                "vpc-cni": "v1.16.0-eksbuild.1",
                "coredns": "latest",
                "aws-ebs-csi-driver": "v1.40.0-eksbuild.1",
            },
        )
    problems = "\n".join(error.value.problems)
    assert "addon_versions['vpc-cni']: must be v1.18.5 or newer" in problems
    assert "addon_versions['coredns']: must be an EKS add-on version" in problems
    assert "addon_versions['aws-ebs-csi-driver']: names an add-on this cluster does not manage" in (
        problems
    )


def test_bad_lustre_volume_names(synth: Synth) -> None:
    stack = cdk.Stack(cdk.App(), "BadLustre", env=TEST_ENV)
    vpc = _vpc(stack, "us-east-1a")
    cluster = GpuEksCluster(stack, "Eks", vpc=vpc, operators=WorkloadOperators(False, False))
    fs = LustreFileSystem(
        stack, "Fsx", vpc=vpc, subnet=vpc.private_subnets[0], data_bucket=DataBucket(stack, "D")
    )
    with pytest.raises(FmValidationError, match=r"namespace: must be a Kubernetes DNS label"):
        cluster.add_lustre_volume(fs, name="ok", namespace="Training_Data")


def test_node_group_outside_cluster_gpu_zone() -> None:
    stack = cdk.Stack(cdk.App(), "BadZone", env=TEST_ENV)
    vpc = _vpc(stack, "us-east-1a")
    cluster = GpuEksCluster(
        stack,
        "Eks",
        vpc=vpc,
        gpu_availability_zone="us-east-1a",
        operators=WorkloadOperators(kueue=False, kubeflow_trainer=False),
    )
    with pytest.raises(FmValidationError, match=r"subnet: must be in the cluster's GPU zone"):
        EfaNodeGroup(
            stack,
            "P5",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=vpc.private_subnets[1],  # us-east-1b
            node_count=1,
        )
