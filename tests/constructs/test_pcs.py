"""AWS PCS constructs: the cluster, its login and accelerated node groups (the GPU launch
template with every EFA card), the queue, the node role's naming rule and permission; cfn-lint
(its AWS::PCS schemas) and cdk-nag over the result; the arguments PCS refuses."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2

from fm_constructs.catalog import get_instance_type
from fm_constructs.compute import CapacitySource
from fm_constructs.errors import FmValidationError
from fm_constructs.orchestration.pcs import (
    PcsCluster,
    PcsClusterSize,
    PcsComputeNodeGroup,
    PcsInstanceRole,
    PcsQueue,
)
from fm_constructs.orchestration.pcs.role import PCS_ROLE_PATH, REGISTER_ACTION
from fm_constructs.patterns.pcs_workload import PcsAcceleratedWorkload
from fm_constructs.planning.pcs_limits import cluster_size_for
from fm_constructs.storage import LustreFileSystem
from tests.support import TEST_ENV, cfn_lint, imported_vpc, synth_stack

AMI = "ami-0123456789abcdef0"
RESERVATION = "cr-0a1b2c3d4e5f60718"


def _workload(stack: cdk.Stack, capacity: CapacitySource | None = None, **kw: Any) -> Any:
    vpc = imported_vpc(stack)
    subnet = vpc.private_subnets[0]
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        stack,
        "Fsx",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group_ids=["sg-0123456789abcdef0"],
    )
    return PcsAcceleratedWorkload(
        stack,
        "Pcs",
        vpc=vpc,
        gpu_subnet=subnet,
        instance_type="p5.48xlarge",
        node_count=kw.pop("node_count", 4),
        ami_id=AMI,
        capacity=capacity,
        file_system=fs,
        **kw,
    )


@pytest.fixture(scope="module")
def odcr_template() -> Mapping[str, Any]:
    capacity = CapacitySource.odcr(
        reservation_id=RESERVATION, availability_zone="us-east-1a", instance_count=4
    )
    return synth_stack(lambda stack: _workload(stack, capacity)).to_json()


def _of(template: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


def test_cfn_lint_is_clean(odcr_template: Mapping[str, Any]) -> None:
    assert cfn_lint(odcr_template, "us-east-1") == []


def test_cluster_runs_the_pinned_slurm_with_accounting_sized_for_its_nodes(
    odcr_template: Mapping[str, Any],
) -> None:
    (cluster,) = _of(odcr_template, "AWS::PCS::Cluster").values()
    props = cluster["Properties"]
    assert props["Scheduler"] == {"Type": "SLURM", "Version": "25.05"}
    assert props["Size"] == "SMALL"  # 4 accelerated + 1 login
    assert props["SlurmConfiguration"]["Accounting"] == {"Mode": "STANDARD"}
    assert len(props["Networking"]["SubnetIds"]) == 1
    # HyperPod's job hooks as the cluster's Prolog and Epilog, at the absolute paths where every
    # compute node installs them (tests/unit/test_pcs_node.py runs them there).
    prefix = "/opt/aws/pcs/scheduler/slurm-25.05/etc/scripts"
    assert props["SlurmConfiguration"]["SlurmCustomSettings"] == [
        {"ParameterName": "Epilog", "ParameterValue": f"{prefix}/fm-epilog.sh"},
        {"ParameterName": "Prolog", "ParameterValue": f"{prefix}/fm-prolog.sh"},
    ]


def test_cluster_level_slurm_settings() -> None:
    def build(stack: cdk.Stack) -> None:
        vpc = imported_vpc(stack)
        PcsCluster(
            stack,
            "C",
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            node_count=2,
            slurm_settings={"Prolog": "/opt/site/prolog.sh"},
        )

    template = synth_stack(build).to_json()
    (cluster,) = _of(template, "AWS::PCS::Cluster").values()
    assert cluster["Properties"]["SlurmConfiguration"]["SlurmCustomSettings"] == [
        {"ParameterName": "Prolog", "ParameterValue": "/opt/site/prolog.sh"}
    ]
    assert cfn_lint(template, "us-east-1") == []


def test_size_tiers() -> None:
    assert cluster_size_for(32) is PcsClusterSize.SMALL
    assert cluster_size_for(33) is PcsClusterSize.MEDIUM
    assert cluster_size_for(2048) is PcsClusterSize.LARGE
    assert cluster_size_for(2049) is None


def test_accelerated_group_has_every_efa_card_and_targets_the_reservation(
    odcr_template: Mapping[str, Any],
) -> None:
    groups = _of(odcr_template, "AWS::PCS::ComputeNodeGroup")
    accelerated = next(g for g in groups.values() if g["Properties"]["Name"] == "accelerated")
    props = accelerated["Properties"]
    assert props["InstanceConfigs"] == [{"InstanceType": "p5.48xlarge"}]
    assert props["ScalingConfiguration"] == {"MinInstanceCount": 4, "MaxInstanceCount": 4}
    assert props["PurchaseOption"] == "ONDEMAND"
    assert props["AmiId"] == AMI
    template_id = props["CustomLaunchTemplate"]["TemplateId"]["Ref"]
    data = odcr_template["Resources"][template_id]["Properties"]["LaunchTemplateData"]
    interfaces = data["NetworkInterfaces"]
    spec = get_instance_type("p5.48xlarge")
    assert (
        sum(1 for i in interfaces if i["InterfaceType"] in ("efa", "efa-only"))
        == spec.max_efa_interfaces
        == 32
    )
    assert "SecurityGroupIds" not in data
    primary = next(i for i in interfaces if i["NetworkCardIndex"] == 0 and i["DeviceIndex"] == 0)
    assert len(primary["Groups"]) == 2  # EFA group + the cluster's
    assert data["CapacityReservationSpecification"]["CapacityReservationTarget"] == {
        "CapacityReservationId": RESERVATION
    }
    # A reservation is placed where it was made: no new cluster placement group over it
    # unless asked (a second group over reserved hosts can fail with insufficient capacity).
    assert "Placement" not in data
    assert _of(odcr_template, "AWS::EC2::PlacementGroup") == {}


def _user_data(template: Mapping[str, Any], group: str) -> Any:
    groups = _of(template, "AWS::PCS::ComputeNodeGroup")
    node_group = next(g for g in groups.values() if g["Properties"]["Name"] == group)
    template_id = node_group["Properties"]["CustomLaunchTemplate"]["TemplateId"]["Ref"]
    return template["Resources"][template_id]["Properties"]["LaunchTemplateData"]["UserData"]


def test_user_data_is_mime_with_cloud_config_before_the_shell_part(
    odcr_template: Mapping[str, Any],
) -> None:
    for group in ("accelerated", "login"):
        joined = _user_data(odcr_template, group)["Fn::Base64"]["Fn::Join"][1]
        text = "".join(p if isinstance(p, str) else "<token>" for p in joined)
        assert text.startswith("MIME-Version: 1.0\n")
        types = re.findall(r"^Content-Type: (\S+);", text, re.MULTILINE)
        assert types == ["multipart/mixed", "text/cloud-config", "text/x-shellscript"]
        role = "compute" if group == "accelerated" else "login"
        assert f'pcs_node.sh" {role} {group} "s3://<token>/hyperpod-lifecycle/' in text


def test_login_group_is_one_on_demand_node_with_the_cluster_group(
    odcr_template: Mapping[str, Any],
) -> None:
    groups = _of(odcr_template, "AWS::PCS::ComputeNodeGroup")
    login = next(g for g in groups.values() if g["Properties"]["Name"] == "login")
    assert login["Properties"]["ScalingConfiguration"] == {
        "MinInstanceCount": 1,
        "MaxInstanceCount": 1,
    }
    assert login["Properties"]["PurchaseOption"] == "ONDEMAND"


def test_queue_schedules_onto_the_accelerated_group(odcr_template: Mapping[str, Any]) -> None:
    (queue,) = _of(odcr_template, "AWS::PCS::Queue").values()
    configs = queue["Properties"]["ComputeNodeGroupConfigurations"]
    assert len(configs) == 1
    assert queue["Properties"]["Name"] == "accelerated"


def _role_actions(template: Mapping[str, Any]) -> dict[str, list[Any]]:
    """Role logical id -> the actions of the policies attached to it."""
    found: dict[str, list[Any]] = {}
    for policy in _of(template, "AWS::IAM::Policy").values():
        for role in policy["Properties"]["Roles"]:
            statements = policy["Properties"]["PolicyDocument"]["Statement"]
            found.setdefault(role["Ref"], []).extend(s["Action"] for s in statements)
    return found


def _group_roles(template: Mapping[str, Any]) -> dict[str, str]:
    """Node group name -> the logical id of the role of its instance profile."""
    profiles = _of(template, "AWS::IAM::InstanceProfile")
    out = {}
    for group in _of(template, "AWS::PCS::ComputeNodeGroup").values():
        arn = group["Properties"]["IamInstanceProfileArn"]["Fn::GetAtt"][0]
        out[group["Properties"]["Name"]] = profiles[arn]["Properties"]["Roles"][0]["Ref"]
    return out


def test_node_roles_meet_pcs_naming_rule_and_may_register(
    odcr_template: Mapping[str, Any],
) -> None:
    profiles = _of(odcr_template, "AWS::IAM::InstanceProfile")
    assert len(profiles) == 2
    roles = _of(odcr_template, "AWS::IAM::Role")
    actions = _role_actions(odcr_template)
    for profile in profiles.values():
        assert profile["Properties"]["Path"] == PCS_ROLE_PATH
        role = profile["Properties"]["Roles"][0]["Ref"]
        assert roles[role]["Properties"]["Path"] == PCS_ROLE_PATH
        assert REGISTER_ACTION in actions[role]


def test_only_the_login_node_takes_session_manager_shells(
    odcr_template: Mapping[str, Any],
) -> None:
    """Users reach the cluster on the login node; the accelerated nodes get no Systems
    Manager permission unless asked (``session_manager``), and no role carries
    AmazonSSMManagedInstanceCore (its parameter and document reads on ``*``)."""
    groups = _group_roles(odcr_template)
    assert set(groups) == {"login", "accelerated"} and groups["login"] != groups["accelerated"]
    actions = _role_actions(odcr_template)
    shell = "ssmmessages:OpenControlChannel"
    assert shell in json.dumps(actions[groups["login"]])
    assert "ssm" not in json.dumps(actions[groups["accelerated"]])
    assert not any(ssm in json.dumps(actions) for ssm in ("ssm:GetParameter", "ssm:GetDocument"))
    roles = _of(odcr_template, "AWS::IAM::Role")
    for role in groups.values():
        assert "ManagedPolicyArns" not in roles[role]["Properties"], role
    # With session_manager the accelerated nodes' role allows the shells (and passes cdk-nag).
    alone = synth_stack(lambda stack: PcsInstanceRole(stack, "Role", session_manager=True))
    assert shell in json.dumps(alone.to_json())
    stack = cdk.Stack(cdk.App(), "Wiring", env=TEST_ENV)
    workload = _workload(stack, session_manager=True)
    policy = workload.node_role.role.node.find_child("DefaultPolicy")
    assert shell in json.dumps(stack.resolve(policy.document.to_json()))


def test_capacity_block_uses_pcs_purchase_option_and_no_placement_group() -> None:
    capacity = CapacitySource.capacity_block(
        reservation_id=RESERVATION, availability_zone="us-east-1a", instance_count=4
    )
    template = synth_stack(lambda stack: _workload(stack, capacity)).to_json()
    groups = _of(template, "AWS::PCS::ComputeNodeGroup")
    accelerated = next(g for g in groups.values() if g["Properties"]["Name"] == "accelerated")
    assert accelerated["Properties"]["PurchaseOption"] == "CAPACITY_BLOCK"
    template_id = accelerated["Properties"]["CustomLaunchTemplate"]["TemplateId"]["Ref"]
    data = template["Resources"][template_id]["Properties"]["LaunchTemplateData"]
    assert accelerated["Properties"]["ScalingConfiguration"] == {
        "MinInstanceCount": 0,
        "MaxInstanceCount": 4,
    }
    assert data["InstanceMarketOptions"]["MarketType"] == "capacity-block"
    assert "Placement" not in data
    assert not _of(template, "AWS::EC2::PlacementGroup")
    assert cfn_lint(template, "us-east-1") == []


def test_a_capacity_block_smaller_than_the_group_is_refused() -> None:
    capacity = CapacitySource.capacity_block(
        reservation_id=RESERVATION, availability_zone="us-east-1a", instance_count=2
    )
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=TEST_ENV)
    with pytest.raises(FmValidationError, match="max_count"):
        _workload(stack, capacity, node_count=4)


def test_a_training_plan_and_a_bad_ami_are_refused() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=TEST_ENV)
    vpc = imported_vpc(stack)
    cluster = PcsCluster(stack, "C", vpc=vpc, subnet=vpc.private_subnets[0], node_count=2)
    role = PcsInstanceRole(stack, "R")
    plan = CapacitySource.training_plan("arn:aws:sagemaker:us-east-1:111122223333:training-plan/x")
    with pytest.raises(FmValidationError) as error:
        PcsComputeNodeGroup.accelerated(
            stack,
            "G",
            cluster=cluster,
            instance_type="p5.48xlarge",
            node_count=2,
            subnet=vpc.private_subnets[0],
            instance_profile=role,
            ami_id="latest",
            scripts_uri="s3://b/p/",
            efa_security_group=ec2.SecurityGroup(stack, "Efa", vpc=vpc),
            capacity=plan,
        )
    text = str(error.value)
    assert "ami_id" in text and "training plans" in text
    assert error.value.findings[0].code == "FM843"


def test_cluster_size_is_checked() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=TEST_ENV)
    vpc = imported_vpc(stack)
    with pytest.raises(FmValidationError, match="SMALL cluster runs at most 32"):
        PcsCluster(
            stack,
            "C",
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            node_count=40,
            size=PcsClusterSize.SMALL,
        )
    with pytest.raises(FmValidationError, match="PCS takes only"):
        PcsCluster(
            stack,
            "E",
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            node_count=2,
            slurm_settings={"SlurmctldTimeout": "300"},
        )
    with pytest.raises(FmValidationError, match="at most 2048"):
        PcsCluster(stack, "D", vpc=vpc, subnet=vpc.private_subnets[0], node_count=3000)


def test_imports_return_the_interfaces() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "S", env=TEST_ENV)
    cluster = PcsCluster.from_cluster_attributes(
        stack,
        "C",
        cluster_id="pcs_abc123",
        cluster_arn="arn:aws:pcs:us-east-1:111122223333:cluster/pcs_abc123",
        security_group_id="sg-0123456789abcdef0",
    )
    group = PcsComputeNodeGroup.from_compute_node_group_attributes(
        stack, "G", compute_node_group_id="pcs_group1"
    )
    queue = PcsQueue(stack, "Q", cluster=cluster, node_groups=[group], queue_name="queue-1")
    profile = PcsInstanceRole.from_instance_profile_attributes(
        stack,
        "P",
        instance_profile_arn="arn:aws:iam::111122223333:instance-profile/aws-pcs/x",
    )
    imported_queue = PcsQueue.from_queue_attributes(stack, "IQ", queue_id="q1", queue_name="q")
    assert cluster.cluster_id == "pcs_abc123"
    assert profile.role is None and imported_queue.queue_name == "q"
    template = cdk.assertions.Template.from_stack(stack).to_json()
    (resource,) = _of(template, "AWS::PCS::Queue").values()
    assert resource["Properties"]["ClusterId"] == "pcs_abc123"
    assert queue.queue_name == "queue-1"
    with pytest.raises(FmValidationError, match="queue_name"):
        PcsQueue(stack, "Bad", cluster=cluster, node_groups=[group], queue_name="pcs_queue")
