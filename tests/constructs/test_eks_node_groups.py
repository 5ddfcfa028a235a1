"""EfaNodeGroup per accelerator family: explicit AL2023 NVIDIA/Neuron AMI type with the instance
type only in the launch template (aws-cdk-lib's eks_v2 GPU check does not know p5/p5en/p6/trn),
every EFA interface, capacity types, taints, labels, auto repair, connections, and bad input.
One App, synthesized once: one stack per family over an imported cluster, plus variants."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Template

from fm_constructs.catalog import get_instance_type
from fm_constructs.compute import CapacitySource
from fm_constructs.errors import FmValidationError
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.orchestration import EfaNodeGroup, GpuEksCluster, node_labels
from fm_constructs.orchestration.cluster_interface import IGpuCluster, is_gpu_cluster
from fm_constructs.planning.capacity_block import SYNTH_TIME_CONTEXT
from fm_constructs.policy import enable_nag
from tests.iam_policies import Templates, identity_allows, role_statements
from tests.support import PLAIN_CLUSTER_GROUP, TEST_ENV, cfn_lint, imported_vpc, plain_eks_cluster

CR = "cr-0123456789abcdef0"
#: stack name -> (instance type, expected AMI type)
FAMILIES = {
    "P4d": ("p4d.24xlarge", "AL2023_x86_64_NVIDIA"),
    "P5": ("p5.48xlarge", "AL2023_x86_64_NVIDIA"),
    "P5en": ("p5en.48xlarge", "AL2023_x86_64_NVIDIA"),
    "P6B200": ("p6-b200.48xlarge", "AL2023_x86_64_NVIDIA"),
    "P6B300": ("p6-b300.48xlarge", "AL2023_x86_64_NVIDIA"),
    "Trn2": ("trn2.48xlarge", "AL2023_x86_64_NEURON"),
    "G6e": ("g6e.48xlarge", "AL2023_x86_64_NVIDIA"),
}
VARIANTS = ("CapacityBlock", "GivenGroup")
#: Trn2 is offered in us-east-2, not us-east-1 (cfn-lint E3628 knows).
ENVS = {"Trn2": cdk.Environment(account=TEST_ENV.account, region="us-east-2")}


def _zone(name: str) -> str:
    return "us-east-2a" if name == "Trn2" else "us-east-1a"


def _cluster(stack: cdk.Stack, zone: str) -> tuple[eks.ICluster, ec2.IVpc]:
    vpc = imported_vpc(stack, zone)
    cluster = plain_eks_cluster(stack, vpc)
    return cluster, vpc


@dataclass
class Synth:
    raw: dict[str, dict[str, Any]]
    templates: dict[str, Template]
    groups: dict[str, EfaNodeGroup]


#: The synthesis moment of these tests, before the test block starts (a fixed clock).
BEFORE_THE_BLOCK = "2026-12-01T00:00:00Z"


@pytest.fixture(scope="module")
def synth() -> Iterator[Synth]:
    app = cdk.App(context={SYNTH_TIME_CONTEXT: BEFORE_THE_BLOCK})
    stacks: dict[str, cdk.Stack] = {}
    groups: dict[str, EfaNodeGroup] = {}
    for name, (instance_type, _) in FAMILIES.items():
        stack = stacks[name] = cdk.Stack(app, name, env=ENVS.get(name, TEST_ENV))
        cluster, vpc = _cluster(stack, _zone(name))
        groups[name] = EfaNodeGroup(
            stack,
            "Nodes",
            cluster=cluster,
            instance_type=instance_type,
            subnet=vpc.private_subnets[0],
            node_count=2,
            max_node_count=4,
            labels={"team": "pretraining"},
        )

    stack = stacks["CapacityBlock"] = cdk.Stack(app, "CapacityBlock", env=TEST_ENV)
    cluster, vpc = _cluster(stack, "us-east-1a")
    groups["CapacityBlock"] = EfaNodeGroup(
        stack,
        "Nodes",
        cluster=cluster,
        instance_type="p5en.48xlarge",
        subnet=vpc.private_subnets[0],
        node_count=8,
        min_node_count=0,
        capacity=CapacitySource.capacity_block(
            CR,
            availability_zone="us-east-1a",
            instance_count=8,
            instance_type="p5en.48xlarge",
            start_time="2027-01-04T11:30:00Z",
            end_time="2027-01-18T11:30:00Z",
        ),
        nodegroup_name="p5en-block",
        max_parallel_repairs=2,
    )

    stack = stacks["GivenGroup"] = cdk.Stack(app, "GivenGroup", env=TEST_ENV)
    cluster, vpc = _cluster(stack, "us-east-1a")
    efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
    groups["GivenGroup"] = EfaNodeGroup(
        stack,
        "Nodes",
        cluster=cluster,
        instance_type="p5.48xlarge",
        subnet=vpc.private_subnets[0],
        node_count=1,
        efa_security_group=efa,
        auto_repair=False,
        launch_template_version=3,
        session_manager=True,
    )

    enable_nag(app)
    assembly = app.synth()
    raw = {name: assembly.get_stack_by_name(name).template for name in stacks}
    yield Synth(
        raw=raw, templates={n: Template.from_json(t) for n, t in raw.items()}, groups=groups
    )


def _one(raw: dict[str, Any], kind: str) -> dict[str, Any]:
    found = [v for v in raw["Resources"].values() if v["Type"] == kind]
    assert len(found) == 1, kind
    props: dict[str, Any] = found[0]["Properties"]
    return props


# ----------------------------------------------------------------------------- per family


@pytest.mark.parametrize("name", list(FAMILIES))
def test_ami_type_explicit_and_no_instance_types(synth: Synth, name: str) -> None:
    instance_type, ami_type = FAMILIES[name]
    group = _one(synth.raw[name], "AWS::EKS::Nodegroup")
    assert group["AmiType"] == ami_type
    assert "InstanceTypes" not in group
    lt = _one(synth.raw[name], "AWS::EC2::LaunchTemplate")
    assert lt["LaunchTemplateData"]["InstanceType"] == instance_type
    assert "Ref" in group["LaunchTemplate"]["Id"]
    assert group["LaunchTemplate"]["Version"]["Fn::GetAtt"][1] == "LatestVersionNumber"


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_efa_interface_in_launch_template(synth: Synth, name: str) -> None:
    spec = get_instance_type(FAMILIES[name][0])
    lt = _one(synth.raw[name], "AWS::EC2::LaunchTemplate")
    interfaces = lt["LaunchTemplateData"]["NetworkInterfaces"]
    efa = [i for i in interfaces if i["InterfaceType"] in ("efa", "efa-only")]
    assert len(efa) == spec.max_efa_interfaces
    # The cluster security group rides on the primary interface next to the EFA group.
    primary = next(i for i in interfaces if i["NetworkCardIndex"] == 0 and i["DeviceIndex"] == 0)
    assert PLAIN_CLUSTER_GROUP in primary["Groups"]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_taint_labels_and_single_subnet(synth: Synth, name: str) -> None:
    spec = get_instance_type(FAMILIES[name][0])
    group = _one(synth.raw[name], "AWS::EKS::Nodegroup")
    taint_key = "aws.amazon.com/neuron" if spec.eks_ami_family == "NEURON" else "nvidia.com/gpu"
    assert group["Taints"] == [{"Effect": "NO_SCHEDULE", "Key": taint_key, "Value": "true"}]
    assert group["Labels"] == node_labels(spec, {"team": "pretraining"})
    assert group["Labels"]["vpc.amazonaws.com/efa.present"] == "true"
    assert group["Subnets"] == ["subnet-0a000000000000001"]
    assert group["CapacityType"] == "ON_DEMAND"
    assert group["ScalingConfig"] == {"MinSize": 2, "DesiredSize": 2, "MaxSize": 4}
    assert group["NodeRepairConfig"] == {"Enabled": True, "MaxParallelNodesRepairedCount": 1}
    assert group["UpdateConfig"] == {"MaxUnavailable": 1}


def test_on_demand_families_get_a_placement_group(synth: Synth) -> None:
    for name in FAMILIES:
        synth.templates[name].resource_count_is("AWS::EC2::PlacementGroup", 1)


# ----------------------------------------------------------------------------- variants


def test_capacity_block(synth: Synth) -> None:
    raw = synth.raw["CapacityBlock"]
    group = _one(raw, "AWS::EKS::Nodegroup")
    assert group["CapacityType"] == "CAPACITY_BLOCK"
    assert group["NodegroupName"] == "p5en-block"
    # Created empty (deployable before the block is active); the schedules size it.
    assert group["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 0, "MaxSize": 8}
    schedules = synth.templates["CapacityBlock"].find_resources("AWS::Scheduler::Schedule")
    by_expression = {
        s["Properties"]["ScheduleExpression"]: json.loads(
            json.dumps(s["Properties"]["Target"]["Input"])
        )
        for s in schedules.values()
    }
    # up at the block's start; down 40 minutes before its end (EC2 acts at -30 minutes)
    assert sorted(by_expression) == ["at(2027-01-04T11:30:00)", "at(2027-01-18T10:50:00)"]
    for schedule in schedules.values():
        props = schedule["Properties"]
        assert props["ScheduleExpressionTimezone"] == "UTC"
        assert props["Target"]["Arn"] == "arn:aws:scheduler:::aws-sdk:eks:updateNodegroupConfig"
    up = json.dumps(by_expression["at(2027-01-04T11:30:00)"])
    down = json.dumps(by_expression["at(2027-01-18T10:50:00)"])
    assert '\\"desiredSize\\":8' in up and '\\"desiredSize\\":0' in down
    assert group["NodeRepairConfig"]["MaxParallelNodesRepairedCount"] == 2
    data = _one(raw, "AWS::EC2::LaunchTemplate")["LaunchTemplateData"]
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": CR}
    }
    # A cluster placement group on top of a Capacity Block fails: none is created.
    synth.templates["CapacityBlock"].resource_count_is("AWS::EC2::PlacementGroup", 0)


def _block_group(now: str) -> tuple[dict[str, Any], dict[str, Any], cdk.Stack]:
    app = cdk.App(context={SYNTH_TIME_CONTEXT: now})
    stack = cdk.Stack(app, "Block", env=TEST_ENV)
    cluster, vpc = _cluster(stack, "us-east-1a")
    EfaNodeGroup(
        stack,
        "Nodes",
        cluster=cluster,
        instance_type="p5en.48xlarge",
        subnet=vpc.private_subnets[0],
        node_count=8,
        capacity=CapacitySource.capacity_block(
            CR,
            availability_zone="us-east-1a",
            instance_count=8,
            instance_type="p5en.48xlarge",
            start_time="2027-01-04T11:30:00Z",
            end_time="2027-01-18T11:30:00Z",
        ),
    )
    template = Template.from_stack(stack)
    (group,) = template.find_resources("AWS::EKS::Nodegroup").values()
    return group["Properties"], template.find_resources("AWS::Scheduler::Schedule"), stack


def test_a_block_deployed_after_its_start_gets_its_size_and_the_scale_down_only() -> None:
    """A one-time schedule in the past would never scale the group up: created at the block's
    size, with the scale-down alone, and a warning."""
    from aws_cdk.assertions import Annotations, Match

    group, schedules, stack = _block_group("2027-01-10T08:00:00Z")
    assert group["ScalingConfig"] == {"MinSize": 0, "DesiredSize": 8, "MaxSize": 8}
    ((logical_id, schedule),) = schedules.items()
    assert "ScaleDown" in logical_id
    assert schedule["Properties"]["ScheduleExpression"] == "at(2027-01-18T10:50:00)"
    Annotations.from_stack(stack).has_warning(
        "/Block/Nodes", Match.string_like_regexp("created with 8 nodes at once")
    )


def test_a_block_past_its_scale_down_is_created_empty_without_schedules() -> None:
    from aws_cdk.assertions import Annotations, Match

    group, schedules, stack = _block_group("2027-01-18T11:00:00Z")
    assert group["ScalingConfig"]["DesiredSize"] == 0 and schedules == {}
    Annotations.from_stack(stack).has_warning(
        "/Block/Nodes", Match.string_like_regexp("scale-down time .* has passed")
    )


def test_a_block_ahead_keeps_both_schedules_and_starts_empty() -> None:
    group, schedules, _ = _block_group("2027-01-04T11:29:00Z")
    assert group["ScalingConfig"]["DesiredSize"] == 0 and len(schedules) == 2


def test_reserved_groups_terminate_first_a_fifth_at_once(synth: Synth) -> None:
    """A fully used reservation has no spare instance: EKS's MINIMAL strategy terminates old
    nodes first (EKS API NodegroupUpdateConfig), 20 % of the group at once."""
    group = _one(synth.raw["CapacityBlock"], "AWS::EKS::Nodegroup")
    assert group["UpdateConfig"] == {"MaxUnavailablePercentage": 20, "UpdateStrategy": "MINIMAL"}
    policy = synth.groups["CapacityBlock"].update_policy
    assert policy.parallel_nodes(8) == 1 and policy.parallel_nodes(342) == 68


@pytest.mark.parametrize("name", list(FAMILIES))
def test_on_demand_groups_keep_the_eks_default_update(synth: Synth, name: str) -> None:
    group = _one(synth.raw[name], "AWS::EKS::Nodegroup")
    assert group["UpdateConfig"] == {"MaxUnavailable": 1}


def test_an_odcr_group_takes_given_parallelism_and_warns_on_default(
    bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc],
) -> None:
    from aws_cdk.assertions import Annotations, Match

    from fm_constructs.planning.node_updates import UpdateStrategy

    stack, cluster, vpc = bad
    EfaNodeGroup(
        stack,
        "Odcr",
        cluster=cluster,
        instance_type="p5en.48xlarge",
        subnet=vpc.private_subnets[0],
        node_count=300,
        capacity=CapacitySource.odcr(CR, instance_count=300),
        max_unavailable=50,
    )
    EfaNodeGroup(
        stack,
        "OdcrDefault",
        cluster=cluster,
        instance_type="p5en.48xlarge",
        subnet=vpc.private_subnets[0],
        node_count=2,
        capacity=CapacitySource.odcr(CR, instance_count=2),
        update_strategy=UpdateStrategy.DEFAULT,
    )
    groups = Template.from_stack(stack).find_resources("AWS::EKS::Nodegroup")
    configs = sorted(
        json.dumps(g["Properties"]["UpdateConfig"], sort_keys=True) for g in groups.values()
    )
    assert configs == [
        '{"MaxUnavailable": 50, "UpdateStrategy": "MINIMAL"}',
        '{"MaxUnavailablePercentage": 20, "UpdateStrategy": "DEFAULT"}',
    ]
    Annotations.from_stack(stack).has_warning(
        "/Bad/OdcrDefault", Match.string_like_regexp("launches new nodes before terminating")
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_unavailable": 2, "max_unavailable_percentage": 10}, "give one of them"),
        ({"max_unavailable": 101}, r"max_unavailable: must be 1 to 100"),
        ({"max_unavailable_percentage": 0}, r"max_unavailable_percentage: must be 1 to 100"),
    ],
)
def test_bad_update_parallelism_is_refused(
    bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc], options: dict[str, int], message: str
) -> None:
    stack, cluster, vpc = bad
    with pytest.raises(FmValidationError, match=message):
        EfaNodeGroup(
            stack,
            "Parallel",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=vpc.private_subnets[0],
            node_count=4,
            **options,  # type: ignore[arg-type]
        )


def test_given_efa_group_and_repair_off(synth: Synth) -> None:
    raw = synth.raw["GivenGroup"]
    synth.templates["GivenGroup"].resource_count_is("AWS::EC2::SecurityGroup", 1)
    group = _one(raw, "AWS::EKS::Nodegroup")
    assert "NodeRepairConfig" not in group
    node_group = synth.groups["GivenGroup"]
    ids = {
        json.dumps(cdk.Stack.of(node_group).resolve(g.security_group_id))
        for g in node_group.connections.security_groups
    }
    assert f'"{PLAIN_CLUSTER_GROUP}"' in ids and len(ids) == 2


def test_the_launch_template_version_follows_the_newest_unless_pinned(synth: Synth) -> None:
    """Unpinned, any change to the launch template rolls the group; pinned, the nodes stay on
    the given version until it is moved."""
    latest = _one(synth.raw["CapacityBlock"], "AWS::EKS::Nodegroup")["LaunchTemplate"]
    assert latest["Version"] == {"Fn::GetAtt": [latest["Id"]["Ref"], "LatestVersionNumber"]}
    pinned = _one(synth.raw["GivenGroup"], "AWS::EKS::Nodegroup")["LaunchTemplate"]
    assert pinned["Version"] == "3" and "Ref" in pinned["Id"]


def test_connections_cover_efa_and_cluster_groups(synth: Synth) -> None:
    group = synth.groups["P5"]
    assert group.connections.security_groups[0] is group.efa_security_group
    assert group.efa_security_group.node.path.startswith("P5/Nodes/EfaSecurityGroup")


# ----------------------------------------------------------------------------- policy


@pytest.mark.parametrize("name", [*FAMILIES, *VARIANTS])
def test_cfn_lint_clean(synth: Synth, name: str) -> None:
    region = ENVS.get(name, TEST_ENV).region
    assert cfn_lint(synth.raw[name], region) == []


def test_nag_ran_clean(synth: Synth) -> None:
    assert set(synth.raw) == set(FAMILIES) | set(VARIANTS)


# ----------------------------------------------------------------------------- bad input


@pytest.fixture
def bad() -> tuple[cdk.Stack, eks.ICluster, ec2.IVpc]:
    stack = cdk.Stack(cdk.App(), "Bad", env=TEST_ENV)
    cluster, vpc = _cluster(stack, "us-east-1a")
    return stack, cluster, vpc


def test_type_without_efa(bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc]) -> None:
    stack, cluster, vpc = bad
    with pytest.raises(FmValidationError, match=r"instance_type: must support EFA.*'g6\.xlarge'"):
        EfaNodeGroup(
            stack,
            "N",
            cluster=cluster,
            instance_type="g6.xlarge",
            subnet=vpc.private_subnets[0],
            node_count=1,
        )


def test_subnet_outside_reservation_zone(bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc]) -> None:
    stack, cluster, vpc = bad
    with pytest.raises(FmValidationError, match=r"reservation's zone us-east-1a"):
        EfaNodeGroup(
            stack,
            "N",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=vpc.private_subnets[1],  # us-east-1b
            node_count=1,
            capacity=CapacitySource.odcr(CR, availability_zone="us-east-1a"),
        )


def test_public_subnet_training_plan_sizes_and_labels(
    bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc],
) -> None:
    stack, cluster, vpc = bad
    with pytest.raises(FmValidationError) as error:
        EfaNodeGroup(
            stack,
            "N",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=vpc.public_subnets[0],
            node_count=4,
            max_node_count=2,
            capacity=CapacitySource.training_plan(
                "arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5-plan"
            ),
            labels={"nvidia.com/gpu.present": "false"},
            max_parallel_repairs=0,
        )
    problems = "\n".join(error.value.problems)
    for fragment in (
        "subnet: must be a private subnet",
        "capacity: a SageMaker training plan feeds HyperPod",
        "min_node_count/node_count/max_node_count",
        "labels['nvidia.com/gpu.present']",
        "max_parallel_repairs",
    ):
        assert fragment in problems, fragment


def test_imported_cluster_without_security_group(
    bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc],
) -> None:
    stack, _, vpc = bad
    cluster = eks.Cluster.from_cluster_attributes(stack, "NoSg", cluster_name="gpu", vpc=vpc)
    with pytest.raises(FmValidationError, match=r"cluster_security_group_id"):
        EfaNodeGroup(
            stack,
            "N",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=vpc.private_subnets[0],
            node_count=1,
        )


def test_an_imported_eks_cluster_is_told_from_a_gpu_cluster_without_reading_it(
    bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc],
) -> None:
    """Reading ``clusterSecurityGroup`` of a cluster imported without one throws in the CDK:
    the check must not read any member (isinstance against the runtime protocol read them in
    the order of a set, so it threw under some hash seeds)."""
    stack, _, vpc = bad
    imported = eks.Cluster.from_cluster_attributes(stack, "NoSg", cluster_name="gpu", vpc=vpc)
    with pytest.raises(RuntimeError, match="clusterSecurityGroup"):
        _ = imported.cluster_security_group
    assert not is_gpu_cluster(imported)
    ours = GpuEksCluster.from_gpu_eks_cluster_attributes(
        stack, "Ours", cluster_name="gpu", vpc=vpc, cluster_security_group_id="sg-0cluster"
    )
    assert is_gpu_cluster(ours)
    assert isinstance(ours, IGpuCluster)

    def read(_: object) -> object:
        raise RuntimeError("a member was read")

    members = [name for name in vars(IGpuCluster) if not name.startswith("_")]
    every_member = type("EveryMember", (), {name: property(read) for name in members})
    assert is_gpu_cluster(every_member())
    assert not is_gpu_cluster(type("OneMissing", (), dict.fromkeys(members[1:]))())


# ----------------------------------------------------------------------------- option names


def test_the_former_size_names_are_gone(
    bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc],
) -> None:
    """desired_size/min_size/max_size (the names before node_count/min_node_count/
    max_node_count) are no longer options."""
    stack, cluster, vpc = bad
    for former in ("desired_size", "min_size", "max_size"):
        with pytest.raises(TypeError, match=former):
            EfaNodeGroup(
                stack,
                f"Former-{former}",
                cluster=cluster,
                instance_type="p5.48xlarge",
                subnet=vpc.private_subnets[0],
                node_count=2,
                **{former: 2},
            )


def test_node_count_is_required(bad: tuple[cdk.Stack, eks.ICluster, ec2.IVpc]) -> None:
    stack, cluster, vpc = bad
    with pytest.raises(FmValidationError, match=r"node_count: is required"):
        EfaNodeGroup(
            stack,
            "None",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=vpc.private_subnets[0],
        )


def _node_role_statements(raw: dict[str, Any]) -> tuple[str, list[Any]]:
    group = _one(raw, "AWS::EKS::Nodegroup")
    role_id = group["NodeRole"]["Fn::GetAtt"][0]
    templates = Templates({"S": raw})
    managed = json.dumps(raw["Resources"][role_id]["Properties"]["ManagedPolicyArns"])
    return managed, role_statements(templates, "S", role_id)


def test_node_roles_hold_what_the_kubelet_needs_and_session_manager_is_opt_in(
    synth: Synth,
) -> None:
    for name in ("P5", "GivenGroup"):
        managed, found = _node_role_statements(synth.raw[name])
        assert "AmazonEKSWorkerNodePolicy" in managed and "ContainerRegistryReadOnly" in managed
        assert "AmazonEKS_CNI_Policy" not in managed, name
        assert "AmazonSSMManagedInstanceCore" not in managed, name
        assert not identity_allows(found, "ssm:GetParameter", "*"), name
        shell = identity_allows(found, "ssmmessages:OpenDataChannel", "*")
        assert shell == (name == "GivenGroup"), name
