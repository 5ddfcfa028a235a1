"""GpuLaunchTemplate, EfaSecurityGroup, ClusterPlacementGroup and OnDemandCapacityReservation:
the synthesized EFA layout per family, capacity mappings, placement, hardening, tags, user
data, bad input, cfn-lint and cdk-nag. Every variant synthesizes once, as stacks of one App."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import botocore.session
import pytest
from aws_cdk import TagManager, TagType
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fm_constructs.catalog import get_instance_type
from fm_constructs.compute import (
    CapacitySource,
    ClusterPlacementGroup,
    GpuLaunchTemplate,
    NodeadmCluster,
    OnDemandCapacityReservation,
    UserDataMode,
)
from fm_constructs.compute.launch_template import MAX_GP3_VOLUME_GIB, _TagSpecifications
from fm_constructs.compute.root_device import root_device_for_parameter
from fm_constructs.errors import FmValidationError
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.planning.efa_layout import EfaLayout, efa_interface_layout
from fm_constructs.policy import enable_nag
from tests.support import TEST_ENV, cfn_lint

CR = "cr-0123456789abcdef0"
UBUNTU_DLAMI_PARAMETER = (
    "/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/latest/ami-id"
)
RG = "arn:aws:resource-groups:us-east-1:111122223333:group/gpu-reservations"

#: stack name -> instance type of its launch template (one stack per family).
FAMILIES = {
    "P4d": "p4d.24xlarge",
    "P5": "p5.48xlarge",
    "P5en": "p5en.48xlarge",
    "P6B200": "p6-b200.48xlarge",
    "P6B300": "p6-b300.48xlarge",
    "Trn2": "trn2.48xlarge",
    "G6e": "g6e.48xlarge",
    "G5": "g5.48xlarge",
}
#: Trn2 is offered in us-east-2, not us-east-1 (cfn-lint E3628 knows).
ENVS = {"Trn2": cdk.Environment(account=TEST_ENV.account, region="us-east-2")}
#: Extra variants, each its own stack.
VARIANTS = ("Legacy", "Inference", "Shell", "Existing")


def _vpc(stack: cdk.Stack) -> ec2.IVpc:
    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0123456789abcdef0"],
        private_subnet_route_table_ids=["rtb-0123456789abcdef0"],
    )


@dataclass
class Synth:
    templates: dict[str, Template]
    stacks: dict[str, cdk.Stack]
    launch_templates: dict[str, GpuLaunchTemplate]
    assembly: cdk.cx_api.CloudAssembly


@pytest.fixture(scope="module")
def synth() -> Iterator[Synth]:
    app = cdk.App()
    stacks: dict[str, cdk.Stack] = {}
    lts: dict[str, GpuLaunchTemplate] = {}

    def stack(name: str) -> cdk.Stack:
        stacks[name] = cdk.Stack(app, name, env=ENVS.get(name, TEST_ENV))
        return stacks[name]

    capacities: dict[str, CapacitySource] = {
        "P5": CapacitySource.capacity_block(
            CR, availability_zone="us-east-1a", instance_count=4, instance_type="p5.48xlarge"
        ),
        "P5en": CapacitySource.odcr(CR, availability_zone="us-east-1a", instance_count=16),
        "P4d": CapacitySource.odcr(resource_group_arn=RG),
        "P6B200": CapacitySource.odcr(CR, managed_placement=True),
    }
    for name, instance_type in FAMILIES.items():
        s = stack(name)
        vpc = _vpc(s)
        cluster_sg = ec2.SecurityGroup(s, "ClusterSg", vpc=vpc)
        capacity = capacities.get(name)
        if name == "Trn2":
            # An ODCR made in the cluster placement group (EC2's advice for clusters).
            reservation = OnDemandCapacityReservation(
                s,
                "Reservation",
                instance_type=instance_type,
                availability_zone="us-east-2a",
                instance_count=8,
                placement_group=ec2.PlacementGroup(
                    s, "Cluster", strategy=ec2.PlacementGroupStrategy.CLUSTER
                ),
            )
            capacity = reservation.capacity_source
        lts[name] = GpuLaunchTemplate(
            s,
            "Nodes",
            instance_type=instance_type,
            vpc=vpc,
            security_groups=[cluster_sg],
            capacity=capacity,
            subnet_availability_zone="us-east-2a" if name == "Trn2" else "us-east-1a",
            node_count=4,
            tags={"fm:node-group": name.lower()},
            # an ODCR that asks for a new cluster placement group gets one
            create_placement_group=True if name == "P5en" else None,
        )

    s = stack("Legacy")
    lts["Legacy"] = GpuLaunchTemplate(
        s, "Nodes", instance_type="p5.48xlarge", vpc=_vpc(s), efa_layout=EfaLayout.LEGACY
    )

    s = stack("Inference")
    lts["Inference"] = GpuLaunchTemplate(
        s, "Nodes", instance_type="g6e.xlarge", vpc=_vpc(s), efa_layout=None
    )

    s = stack("Shell")
    lts["Shell"] = GpuLaunchTemplate(
        s,
        "Nodes",
        instance_type="p4de.24xlarge",
        vpc=_vpc(s),
        user_data_mode=UserDataMode.SHELL,
        extra_user_data_script="echo ready > /tmp/ready",
        create_placement_group=False,
        root_volume_size_gib=500,
        # An Ubuntu DLAMI by its public SSM parameter: the root device is found from it.
        machine_image=ec2.MachineImage.from_ssm_parameter(UBUNTU_DLAMI_PARAMETER),
    )

    s = stack("Existing")
    vpc = _vpc(s)
    efa_group = EfaSecurityGroup(s, "Efa", vpc=vpc, allow_all_outbound=False)
    placement = ClusterPlacementGroup(s, "Placement", placement_group_name="trainers")
    lts["Existing"] = GpuLaunchTemplate(
        s,
        "Nodes",
        instance_type="trn1n.32xlarge",
        efa_security_group=efa_group.security_group,
        placement_group=placement.placement_group,
        nodeadm_cluster=NodeadmCluster(
            name="fm",
            api_server_endpoint="https://ABC.gr7.us-east-1.eks.amazonaws.com",
            certificate_authority="Q0EtREFUQQ==",
            cidr="172.20.0.0/16",
        ),
        extra_user_data_script="echo joined",
        launch_template_name="fm-trainers",
    )
    cdk.Tags.of(app).add("fm:project", "tests")

    enable_nag(app)
    assembly = app.synth()
    # From the one assembly: Template.from_stack would synthesize the app again per stack.
    templates = {
        name: Template.from_json(assembly.get_stack_by_name(name).template) for name in stacks
    }
    yield Synth(templates, stacks, lts, assembly)


def _data(synth: Synth, name: str) -> dict[str, Any]:
    template = synth.templates[name].find_resources("AWS::EC2::LaunchTemplate")
    (resource,) = template.values()
    data: dict[str, Any] = resource["Properties"]["LaunchTemplateData"]
    return data


def _group_logical_id(synth: Synth, name: str, path_part: str) -> str:
    groups = synth.templates[name].find_resources("AWS::EC2::SecurityGroup")
    (logical_id,) = [lid for lid in groups if path_part in lid]
    return logical_id


def _warnings(synth: Synth, name: str) -> list[Any]:
    messages = synth.assembly.get_stack_by_name(name).messages
    return [
        m
        for m in messages
        if m.level == cdk.cx_api.SynthesisMessageLevel.WARNING
        and "noSubnetRouteTableId" not in str(m.entry.data)
    ]


def _user_data(synth: Synth, name: str) -> str:
    return str(_data(synth, name)["UserData"]["Fn::Base64"])


# ----------------------------------------------------------------------------- EFA layout


@pytest.mark.parametrize("name", FAMILIES)
def test_interfaces_match_catalog_layout(synth: Synth, name: str) -> None:
    spec = get_instance_type(FAMILIES[name])
    interfaces = _data(synth, name)["NetworkInterfaces"]
    expected = efa_interface_layout(spec)
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in interfaces] == [
        (s.network_card_index, s.device_index, s.interface_type) for s in expected
    ]
    efa = [i for i in interfaces if i["InterfaceType"] in ("efa", "efa-only")]
    assert len(efa) == spec.max_efa_interfaces
    assert sorted(i["NetworkCardIndex"] for i in efa) == list(spec.efa_card_indexes)
    assert all(i["DeleteOnTermination"] is True for i in interfaces)
    # EC2 rejects AssociatePublicIpAddress with several interfaces; private subnets give none.
    assert all("AssociatePublicIpAddress" not in i for i in interfaces)
    assert all("SubnetId" not in i for i in interfaces)


@pytest.mark.parametrize("name", FAMILIES)
def test_groups_on_every_interface_never_template_level(synth: Synth, name: str) -> None:
    data = _data(synth, name)
    assert "SecurityGroupIds" not in data and "SecurityGroups" not in data
    efa_sg = {"Fn::GetAtt": [_group_logical_id(synth, name, "EfaSecurityGroup"), "GroupId"]}
    cluster_sg = {"Fn::GetAtt": [_group_logical_id(synth, name, "ClusterSg"), "GroupId"]}
    primary, *others = data["NetworkInterfaces"]
    assert primary["Groups"] == [efa_sg, cluster_sg]
    assert all(i["Groups"] == [efa_sg] for i in others)


def test_specific_layouts(synth: Synth) -> None:
    p6 = _data(synth, "P6B300")["NetworkInterfaces"]
    assert [(i["NetworkCardIndex"], i["DeviceIndex"]) for i in p6] == [(0, 0)] + [
        (card, 0) for card in range(1, 17)
    ]
    assert p6[0]["InterfaceType"] == "interface"
    p5en = _data(synth, "P5en")["NetworkInterfaces"]
    assert len(p5en) == 17
    assert (p5en[1]["NetworkCardIndex"], p5en[1]["DeviceIndex"]) == (0, 1)
    assert {i["NetworkCardIndex"] for i in p5en} == set(range(16))
    g5 = _data(synth, "G5")["NetworkInterfaces"]
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in g5] == [
        (0, 0, "interface"),
        (0, 1, "efa-only"),
    ]
    legacy = _data(synth, "Legacy")["NetworkInterfaces"]
    assert legacy[0]["InterfaceType"] == "efa"
    assert {(i["DeviceIndex"], i["InterfaceType"]) for i in legacy[1:]} == {(1, "efa")}
    assert len(legacy) == 32
    inference = _data(synth, "Inference")["NetworkInterfaces"]
    assert [(i["NetworkCardIndex"], i["DeviceIndex"], i["InterfaceType"]) for i in inference] == [
        (0, 0, "interface")
    ]
    assert synth.launch_templates["P5"].efa_interface_count == 32


def test_efa_security_group_rules(synth: Synth) -> None:
    template = synth.templates["P5"]
    sg = _group_logical_id(synth, "P5", "EfaSecurityGroup")
    ref = {"Fn::GetAtt": [sg, "GroupId"]}
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"GroupId": ref, "SourceSecurityGroupId": ref, "IpProtocol": "-1"},
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {"GroupId": ref, "DestinationSecurityGroupId": ref, "IpProtocol": "-1"},
    )
    template.has_resource_properties(
        "AWS::EC2::SecurityGroup",
        {"SecurityGroupEgress": [Match.object_like({"CidrIp": "0.0.0.0/0"})]},
    )
    # Tightened egress keeps the self rule and drops 0.0.0.0/0.
    existing = synth.templates["Existing"]
    efa = _group_logical_id(synth, "Existing", "Efa")
    existing.has_resource_properties(
        "AWS::EC2::SecurityGroupEgress",
        {"GroupId": {"Fn::GetAtt": [efa, "GroupId"]}, "IpProtocol": "-1"},
    )
    groups = existing.find_resources("AWS::EC2::SecurityGroup")
    assert "0.0.0.0/0" not in json.dumps(groups)


def test_efa_security_group_is_connectable(synth: Synth) -> None:
    stack = synth.stacks["Existing"]
    group = stack.node.find_child("Efa")
    assert isinstance(group, EfaSecurityGroup)
    assert group.connections.security_groups[0] is group.security_group


# ----------------------------------------------------------------------------- capacity


def test_capacity_block_mapping(synth: Synth) -> None:
    data = _data(synth, "P5")
    assert data["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
    assert data["CapacityReservationSpecification"] == {
        "CapacityReservationTarget": {"CapacityReservationId": CR}
    }
    assert synth.launch_templates["P5"].capacity.eks_capacity_type() == "CAPACITY_BLOCK"


def test_odcr_mappings(synth: Synth) -> None:
    p5en = _data(synth, "P5en")
    # Reserved capacity never silently falls back to On-Demand (billed on top of the ODCR).
    assert p5en["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": CR},
    }
    assert "InstanceMarketOptions" not in p5en
    p4d = _data(synth, "P4d")
    assert p4d["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationResourceGroupArn": RG},
    }
    trn2 = _data(synth, "Trn2")
    reservation = synth.templates["Trn2"].find_resources("AWS::EC2::CapacityReservation")
    (reservation_id,) = reservation
    assert trn2["CapacityReservationSpecification"] == {
        "CapacityReservationPreference": "capacity-reservations-only",
        "CapacityReservationTarget": {"CapacityReservationId": {"Ref": reservation_id}},
    }


def test_odcr_may_fall_back_only_when_asked() -> None:
    asked = CapacitySource.odcr(CR, fall_back_to_on_demand=True)
    assert asked.capacity_reservation_preference is None
    assert CapacitySource.odcr(CR).capacity_reservation_preference == "capacity-reservations-only"
    # A Capacity Block cannot fall back (market type capacity-block): no preference needed.
    assert CapacitySource.capacity_block(CR).capacity_reservation_preference is None
    with pytest.raises(FmValidationError, match="fall_back_to_on_demand: only an ODCR"):
        CapacitySource.capacity_block(CR, **{}).__class__(
            kind=CapacitySource.capacity_block(CR).kind,
            reservation_id=CR,
            fall_back_to_on_demand=True,
        )


def test_reservation_in_a_placement_group_brings_its_group(synth: Synth) -> None:
    template = synth.templates["Trn2"]
    (group,) = template.find_resources("AWS::EC2::PlacementGroup")  # no second group
    (reservation,) = template.find_resources("AWS::EC2::CapacityReservation").values()
    arn = reservation["Properties"]["PlacementGroupArn"]
    assert {"Fn::GetAtt": [group, "GroupName"]} in arn["Fn::Join"][1]
    assert reservation["Properties"]["Tenancy"] == "default"
    placement = _data(synth, "Trn2")["Placement"]["GroupName"]
    # the launch template launches into the reservation's group (name taken from its ARN)
    assert placement["Fn::Select"][0] == 1
    assert json.dumps({"Fn::GetAtt": [group, "GroupName"]}) in json.dumps(placement)
    assert synth.launch_templates["Trn2"].placement_group is not None


def test_reservation_with_its_own_placement_is_not_given_a_second_group() -> None:
    source = CapacitySource.odcr(
        CR,
        placement_group_arn="arn:aws:ec2:us-east-1:111122223333:placement-group/trainers",
    )
    assert not source.allows_placement_group
    assert source.placement_group_name == "trainers"
    with pytest.raises(FmValidationError, match="placement_group_arn: must be a placement group"):
        CapacitySource.odcr(CR, placement_group_arn="trainers")


def test_on_demand_has_no_capacity_settings(synth: Synth) -> None:
    data = _data(synth, "G6e")
    assert "CapacityReservationSpecification" not in data
    assert "InstanceMarketOptions" not in data


def test_created_reservation(synth: Synth) -> None:
    synth.templates["Trn2"].has_resource(
        "AWS::EC2::CapacityReservation",
        {
            "Properties": {
                "InstanceType": "trn2.48xlarge",
                "AvailabilityZone": "us-east-2a",
                "InstanceCount": 8,
                "InstanceMatchCriteria": "targeted",
                "InstancePlatform": "Linux/UNIX",
                "EndDateType": "unlimited",
            },
            "DeletionPolicy": "Retain",
            "UpdateReplacePolicy": "Retain",
        },
    )


# ----------------------------------------------------------------------------- placement


@pytest.mark.parametrize("name", ["P5en", "P6B300", "G6e", "Legacy"])
def test_placement_group_created(synth: Synth, name: str) -> None:
    """On-demand EFA nodes, and an ODCR that asks for one (P5en: create_placement_group)."""
    template = synth.templates[name]
    template.resource_properties_count_is("AWS::EC2::PlacementGroup", {"Strategy": "cluster"}, 1)
    (group,) = template.find_resources("AWS::EC2::PlacementGroup")
    assert _data(synth, name)["Placement"] == {"GroupName": {"Fn::GetAtt": [group, "GroupName"]}}
    assert synth.launch_templates[name].placement_group is not None


@pytest.mark.parametrize("name", ["P5", "P6B200"])
def test_placement_group_skipped_with_warning(synth: Synth, name: str) -> None:
    synth.templates[name].resource_count_is("AWS::EC2::PlacementGroup", 0)
    assert "Placement" not in _data(synth, name)
    assert any(
        "No cluster placement group" in str(message.entry.data)
        for message in _warnings(synth, name)
    )


def test_no_new_placement_group_over_a_reservation_unless_asked(synth: Synth) -> None:
    """P4d: a resource-group ODCR. Its hosts are already placed; a new cluster placement group
    over them can fail with InsufficientInstanceCapacity while the reservation idles."""
    synth.templates["P4d"].resource_count_is("AWS::EC2::PlacementGroup", 0)
    assert "Placement" not in _data(synth, "P4d")
    assert synth.launch_templates["P4d"].placement_group is None
    messages = synth.assembly.get_stack_by_name("P4d").messages
    assert any(
        m.level == cdk.cx_api.SynthesisMessageLevel.INFO
        and "No new cluster placement group" in str(m.entry.data)
        for m in messages
    )


def test_no_placement_group_when_not_needed(synth: Synth) -> None:
    for name in ("Inference", "Shell"):
        synth.templates[name].resource_count_is("AWS::EC2::PlacementGroup", 0)
        assert "Placement" not in _data(synth, name)
    assert _warnings(synth, "Shell") == []


def test_existing_placement_group_and_efa_group_reused(synth: Synth) -> None:
    template = synth.templates["Existing"]
    template.resource_count_is("AWS::EC2::PlacementGroup", 1)
    template.resource_count_is("AWS::EC2::SecurityGroup", 1)
    (group,) = template.find_resources("AWS::EC2::PlacementGroup")
    assert _data(synth, "Existing")["Placement"] == {
        "GroupName": {"Fn::GetAtt": [group, "GroupName"]}
    }
    template.has_resource_properties(
        "AWS::EC2::LaunchTemplate", {"LaunchTemplateName": "fm-trainers"}
    )


# ----------------------------------------------------------------------------- hardening


@pytest.mark.parametrize("name", [*FAMILIES, *VARIANTS])
def test_imdsv2_and_encrypted_root(synth: Synth, name: str) -> None:
    data = _data(synth, name)
    assert data["MetadataOptions"] == {
        "HttpEndpoint": "enabled",
        "HttpTokens": "required",
        "HttpPutResponseHopLimit": 1,
    }
    (root,) = data["BlockDeviceMappings"]
    assert root["Ebs"]["Encrypted"] is True and root["Ebs"]["VolumeType"] == "gp3"
    assert root["Ebs"]["DeleteOnTermination"] is True
    assert data["InstanceType"] == (
        FAMILIES.get(name) or synth.launch_templates[name].instance_spec.name
    )


def test_root_volume_limit_is_ec2s_gp3_maximum() -> None:
    size = (
        botocore.session.get_session()
        .get_service_model("ec2")
        .operation_model("CreateVolume")
        .input_shape.members["Size"]
    )
    limits = re.search(r"gp3:\s*1 - ([\d,]+)\s*GiB", re.sub(r"<[^>]+>", " ", size.documentation))
    assert limits is not None
    assert int(limits.group(1).replace(",", "")) == MAX_GP3_VOLUME_GIB == 65_536


def test_root_volume_settings(synth: Synth) -> None:
    default = _data(synth, "P5")["BlockDeviceMappings"][0]
    assert default["DeviceName"] == "/dev/xvda" and default["Ebs"]["VolumeSize"] == 200
    shell = _data(synth, "Shell")["BlockDeviceMappings"][0]
    assert shell["DeviceName"] == "/dev/sda1" and shell["Ebs"]["VolumeSize"] == 500


def test_tags_propagate_to_instances_volumes_interfaces(synth: Synth) -> None:
    specs = _data(synth, "P5")["TagSpecifications"]
    assert [s["ResourceType"] for s in specs] == ["instance", "volume", "network-interface"]
    for spec in specs:
        assert {"Key": "fm:project", "Value": "tests"} in spec["Tags"]
        assert {"Key": "fm:node-group", "Value": "p5"} in spec["Tags"]
    synth.templates["P5"].has_resource_properties(
        "AWS::EC2::LaunchTemplate",
        {
            "TagSpecifications": [
                {
                    "ResourceType": "launch-template",
                    "Tags": Match.array_with([{"Key": "fm:node-group", "Value": "p5"}]),
                }
            ]
        },
    )


def test_no_tags_renders_no_tag_specifications() -> None:
    untagged = TagManager(TagType.KEY_VALUE, "AWS::EC2::LaunchTemplate")
    assert _TagSpecifications(untagged, ("instance",)).produce() is None
    untagged.set_tag("team", "ml")
    (spec,) = _TagSpecifications(untagged, ("instance",)).produce()
    assert spec.resource_type == "instance"


# ----------------------------------------------------------------------------- user data


def test_nodeadm_raid0_user_data(synth: Synth) -> None:
    text = _user_data(synth, "P5")
    assert text.startswith("MIME-Version: 1.0\n")
    assert "Content-Type: application/node.eks.aws" in text
    assert "kind: NodeConfig" in text
    assert "localStorage:\n      strategy: RAID0" in text
    assert "cluster:" not in text and "x-shellscript" not in text


def test_nodeadm_with_cluster_and_script(synth: Synth) -> None:
    text = _user_data(synth, "Existing")
    assert 'apiServerEndpoint: "https://ABC.gr7.us-east-1.eks.amazonaws.com"' in text
    assert 'cidr: "172.20.0.0/16"' in text
    assert "text/x-shellscript" in text and "#!/bin/bash\necho joined" in text
    assert text.rstrip().endswith("--")


def test_shell_raid0_user_data(synth: Synth) -> None:
    text = _user_data(synth, "Shell")
    assert text.startswith("#!/bin/bash\nset -euo pipefail\n")
    assert "mdadm --create" in text and "/opt/dlami/nvme" in text
    # p4de.24xlarge has 8 disks; the unit rebuilds the array at every boot, nothing in fstab.
    assert "Environment=FM_NVME_DISKS=8" in text
    assert "systemctl enable --now fm-nvme-raid0.service" in text
    assert ">> /etc/fstab" not in text
    assert text.rstrip().endswith("echo ready > /tmp/ready")


def test_single_disk_type_still_gets_local_storage(synth: Synth) -> None:
    # g6e.xlarge has one NVMe disk: nodeadm's RAID0 strategy also formats a single disk.
    assert "strategy: RAID0" in _user_data(synth, "Inference")


# ----------------------------------------------------------------------------- attributes


def test_attributes(synth: Synth) -> None:
    lt = synth.launch_templates["P5"]
    stack = synth.stacks["P5"]
    (logical_id,) = synth.templates["P5"].find_resources("AWS::EC2::LaunchTemplate")
    assert stack.resolve(lt.launch_template_id) == {"Ref": logical_id}
    assert stack.resolve(lt.latest_version_number) == {
        "Fn::GetAtt": [logical_id, "LatestVersionNumber"]
    }
    assert stack.resolve(lt.default_version_number) == {
        "Fn::GetAtt": [logical_id, "DefaultVersionNumber"]
    }
    assert lt.resource.node.id == "Resource"
    assert lt.instance_spec.name == "p5.48xlarge"
    assert lt.placement_group is None
    assert len(lt.interfaces) == 33


# ----------------------------------------------------------------------------- policy


@pytest.mark.parametrize("name", [*FAMILIES, *VARIANTS])
def test_cfn_lint_clean(synth: Synth, name: str) -> None:
    template = json.dumps(synth.assembly.get_stack_by_name(name).template)
    region = ENVS.get(name, TEST_ENV).region
    assert cfn_lint(template, region) == []


def test_nag_ran_clean(synth: Synth) -> None:
    # enable_nag fails synthesis on any unacknowledged finding; reaching here means clean.
    assert set(synth.stacks) == set(FAMILIES) | set(VARIANTS)


# ----------------------------------------------------------------------------- bad input


@pytest.fixture
def stack() -> cdk.Stack:
    """A throwaway stack for construction-time errors (nothing is synthesized)."""
    return cdk.Stack(cdk.App(), "Errors", env=TEST_ENV)


def test_non_efa_type_rejected(stack: cdk.Stack) -> None:
    with pytest.raises(FmValidationError, match=r"'g6e\.2xlarge', which has no EFA"):
        GpuLaunchTemplate(stack, "Lt", instance_type="g6e.2xlarge", vpc=_vpc(stack))


def test_unknown_type_rejected(stack: cdk.Stack) -> None:
    with pytest.raises(FmValidationError, match=r"got 'p5\.96xlarge'"):
        GpuLaunchTemplate(stack, "Lt", instance_type="p5.96xlarge", vpc=_vpc(stack))


def test_imds_hop_limit_other_than_one_or_two_rejected(stack: cdk.Stack) -> None:
    with pytest.raises(FmValidationError, match=r"imds_hop_limit: .*must be 1"):
        GpuLaunchTemplate(
            stack, "Lt", instance_type="p5.48xlarge", vpc=_vpc(stack), imds_hop_limit=3
        )


def test_malformed_reservation_id_rejected() -> None:
    with pytest.raises(FmValidationError, match="cr- followed by 17 lowercase hex digits"):
        CapacitySource.capacity_block("cr-12345")


def test_capacity_block_without_id_rejected() -> None:
    with pytest.raises(FmValidationError, match="a Capacity Block needs its reservation id"):
        CapacitySource.capacity_block(None)  # type: ignore[arg-type]


def test_az_mismatch_and_oversized_node_count(stack: cdk.Stack) -> None:
    block = CapacitySource.capacity_block(CR, availability_zone="us-east-1a", instance_count=4)
    with pytest.raises(FmValidationError, match="2 problems") as caught:
        GpuLaunchTemplate(
            stack,
            "Lt",
            instance_type="p5.48xlarge",
            vpc=_vpc(stack),
            capacity=block,
            subnet_availability_zone="us-east-1c",
            node_count=8,
        )
    message = str(caught.value)
    assert "reservation is in us-east-1a" in message and "'us-east-1c'" in message
    assert "8 nodes exceed" in message


def test_explicit_placement_group_with_capacity_block(stack: cdk.Stack) -> None:
    placement = ClusterPlacementGroup(stack, "Pg")
    vpc = _vpc(stack)
    with pytest.raises(FmValidationError, match="placement_group: must be unset with a Capacity"):
        GpuLaunchTemplate(
            stack,
            "Lt",
            instance_type="p5.48xlarge",
            vpc=vpc,
            capacity=CapacitySource.capacity_block(CR),
            placement_group=placement.placement_group,
        )
    with pytest.raises(FmValidationError, match="create_placement_group: cannot be True"):
        GpuLaunchTemplate(
            stack,
            "Lt2",
            instance_type="p5.48xlarge",
            vpc=vpc,
            capacity=CapacitySource.capacity_block(CR),
            create_placement_group=True,
        )


def test_security_group_inputs(stack: cdk.Stack) -> None:
    vpc = _vpc(stack)
    with pytest.raises(FmValidationError, match="pass vpc"):
        GpuLaunchTemplate(stack, "Lt", instance_type="p5.48xlarge")
    group = EfaSecurityGroup(stack, "Efa", vpc=vpc)
    with pytest.raises(FmValidationError, match="pass one, not both"):
        GpuLaunchTemplate(
            stack,
            "Lt2",
            instance_type="p5.48xlarge",
            vpc=vpc,
            efa_security_group=group.security_group,
        )


def test_training_plan_and_volume_and_nodeadm_misuse(stack: cdk.Stack) -> None:
    plan = CapacitySource.training_plan(
        "arn:aws:sagemaker:us-east-1:111122223333:training-plan/pretrain-64"
    )
    with pytest.raises(FmValidationError, match="3 problems") as caught:
        GpuLaunchTemplate(
            stack,
            "Lt",
            instance_type="p5.48xlarge",
            vpc=_vpc(stack),
            capacity=plan,
            root_volume_size_gib=4,
            user_data_mode=UserDataMode.SHELL,
            nodeadm_cluster=NodeadmCluster("fm", "https://x", "Q0E=", "10.100.0.0/16"),
        )
    message = str(caught.value)
    assert "HyperPod" in message and "root_volume_size_gib" in message
    assert "nodeadm_cluster" in message


def test_root_device_of_an_ami_id_must_be_given(stack: cdk.Stack) -> None:
    image = ec2.MachineImage.generic_linux({"us-east-1": "ami-0123456789abcdef0"})
    vpc = _vpc(stack)
    with pytest.raises(FmValidationError, match="root_volume_device_name") as caught:
        GpuLaunchTemplate(
            stack,
            "Lt",
            instance_type="p4de.24xlarge",
            vpc=vpc,
            user_data_mode=UserDataMode.SHELL,
            machine_image=image,
        )
    assert "/dev/sda1" in str(caught.value) and "RootDeviceName" in str(caught.value)
    given = GpuLaunchTemplate(
        stack,
        "Given",
        instance_type="p4de.24xlarge",
        vpc=vpc,
        user_data_mode=UserDataMode.SHELL,
        machine_image=image,
        root_volume_device_name="/dev/sda1",
    )
    assert given.root_device_name == "/dev/sda1"


@pytest.mark.parametrize(
    ("parameter", "device"),
    [
        (UBUNTU_DLAMI_PARAMETER, "/dev/sda1"),
        (
            "/aws/service/canonical/ubuntu/server/22.04/stable/current/amd64/hvm/ebs-gp2/ami-id",
            "/dev/sda1",
        ),
        (
            "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/recommended/image_id",
            "/dev/xvda",
        ),
        ("/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64", "/dev/xvda"),
        ("/my-team/golden-image", None),
    ],
)
def test_root_device_from_the_image_parameter(parameter: str, device: str | None) -> None:
    assert root_device_for_parameter(parameter) == device


def test_reservation_construct_validation(stack: cdk.Stack) -> None:
    with pytest.raises(FmValidationError, match="4 problems") as caught:
        OnDemandCapacityReservation(
            stack,
            "R",
            instance_type="p5.48xlarge",
            availability_zone="use1-az4",
            instance_count=0,
            end_date="tomorrow",
            tenancy="host",
        )
    assert "tenancy" in str(caught.value) and "default, dedicated" in str(caught.value)


def test_efa_security_group_works_as_connectable_peer(stack: cdk.Stack) -> None:
    vpc = _vpc(stack)
    efa = EfaSecurityGroup(stack, "Efa", vpc=vpc)
    lustre = ec2.SecurityGroup(stack, "Lustre", vpc=vpc, allow_all_outbound=False)
    lustre.connections.allow_from(efa, ec2.Port.tcp(988), "Lustre from EFA nodes")
    Template.from_stack(stack).has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "FromPort": 988,
            "SourceSecurityGroupId": {
                "Fn::GetAtt": [
                    stack.get_logical_id(efa.security_group.node.default_child),
                    "GroupId",
                ]  # type: ignore[arg-type]
            },
        },
    )


def test_reservation_end_date_must_be_in_the_future(stack: cdk.Stack) -> None:
    with pytest.raises(FmValidationError, match="end_date: must be in the future"):
        OnDemandCapacityReservation(
            stack,
            "Past",
            instance_type="p5.48xlarge",
            availability_zone="us-east-1a",
            instance_count=1,
            end_date="2020-01-01T11:30:00Z",
        )
