"""tools/diagrams.py on small hand-written templates: grouping, collapsing, edges, imports."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import diagrams  # noqa: E402

PLATFORM: dict[str, Any] = {
    "Resources": {
        "NetworkAB12CD34": {"Type": "AWS::EC2::VPC", "Properties": {}},
        "NetworkSubnet1ABCDEF12": {
            "Type": "AWS::EC2::Subnet",
            "Properties": {"VpcId": {"Ref": "NetworkAB12CD34"}},
        },
        "NetworkSubnet2ABCDEF12": {
            "Type": "AWS::EC2::Subnet",
            "Properties": {"VpcId": {"Ref": "NetworkAB12CD34"}},
        },
        "DataRoleAAAAAAAA": {"Type": "AWS::IAM::Role", "Properties": {}},
        "CDKMetadata": {"Type": "AWS::CDK::Metadata", "Properties": {}},
    },
    "Outputs": {
        "ExportsOutputRefSubnet": {
            "Value": {"Ref": "NetworkSubnet1ABCDEF12"},
            "Export": {"Name": "p-platform:ExportsOutputRefSubnet"},
        },
        "ExportsOutputRefVpc": {
            "Value": {"Ref": "NetworkAB12CD34"},
            "Export": {"Name": "p-platform:ExportsOutputRefVpc"},
        },
    },
}
WORKLOAD: dict[str, Any] = {
    "Resources": {
        "FsSecurityGroup11111111": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {"VpcId": {"Fn::ImportValue": "p-platform:ExportsOutputRefVpc"}},
        },
        "NodesSecurityGroup22222222": {
            "Type": "AWS::EC2::SecurityGroup",
            "Properties": {"VpcId": {"Fn::ImportValue": "p-platform:ExportsOutputRefVpc"}},
        },
        "FsIngress33333333": {
            "Type": "AWS::EC2::SecurityGroupIngress",
            "Properties": {
                "GroupId": {"Fn::GetAtt": ["FsSecurityGroup11111111", "GroupId"]},
                "SourceSecurityGroupId": {"Fn::GetAtt": ["NodesSecurityGroup22222222", "GroupId"]},
            },
        },
        "FileSystem44444444": {
            "Type": "AWS::FSx::FileSystem",
            "Properties": {
                "StorageCapacity": 2400,
                "SecurityGroupIds": [{"Fn::GetAtt": ["FsSecurityGroup11111111", "GroupId"]}],
                "SubnetIds": [{"Fn::ImportValue": "p-platform:ExportsOutputRefSubnet"}],
                "KmsKeyId": {"Fn::GetAtt": ["FsKey55555555", "Arn"]},
                "LustreConfiguration": {
                    "DeploymentType": "PERSISTENT_2",
                    "PerUnitStorageThroughput": 500,
                },
            },
        },
        "FsKey55555555": {"Type": "AWS::KMS::Key", "Properties": {}},
        "Addon166666666": {
            "Type": "AWS::EKS::Addon",
            "Properties": {"ClusterName": {"Ref": "Cluster77777777"}},
        },
        "Addon266666666": {
            "Type": "AWS::EKS::Addon",
            "Properties": {"ClusterName": {"Ref": "Cluster77777777"}},
        },
        "Cluster77777777": {"Type": "AWS::EKS::Cluster", "Properties": {"Version": "1.35"}},
        "Alarm88888888": {
            "Type": "AWS::CloudWatch::Alarm",
            "Properties": {"Dimensions": [{"Value": {"Fn::Sub": "${FileSystem44444444}"}}]},
        },
    }
}
TEMPLATES = {"p-platform": PLATFORM, "p-work": WORKLOAD}


def test_references_follow_ref_getatt_sub_and_import() -> None:
    value = {
        "a": {"Ref": "One"},
        "b": {"Fn::GetAtt": ["Two", "Arn"]},
        "c": {"Fn::Sub": "arn:${AWS::Partition}:x:${Three.Arn}/${Four}"},
        "d": {"Fn::ImportValue": "s:Export"},
        "e": {"Ref": "AWS::Region"},
    }
    assert sorted(diagrams.references(value)) == ["Four", "One", "Three", "Two", "import:s:Export"]


def test_collapses_repeated_and_plumbing_resources_and_drops_metadata() -> None:
    graph = diagrams.build_graph("p-platform", PLATFORM)
    assert graph.nodes["network:Subnets"].count == 2
    assert graph.nodes["plumbing:IAM roles and policies"].count == 1
    assert graph.resource_count == 4
    assert ("network:Subnets", "network:Network") in graph.edges


def test_security_group_rules_fold_into_their_group_as_an_edge() -> None:
    graph = diagrams.build_graph("p-work", WORKLOAD)
    assert graph.owner["FsIngress33333333"] == "interconnect:FsSecurityGroup"
    assert ("interconnect:FsSecurityGroup", "interconnect:NodesSecurityGroup") in graph.edges


def test_plumbing_has_no_edges_and_sub_references_count() -> None:
    graph = diagrams.build_graph("p-work", WORKLOAD)
    assert all("plumbing:" not in a and "plumbing:" not in b for a, b in graph.edges)
    assert ("observability:CloudWatch alarms", "storage:FileSystem") in graph.edges
    assert ("orchestration:EKS add-ons", "orchestration:Cluster") in graph.edges


def test_rendered_stack_shows_groups_details_and_cross_stack_imports() -> None:
    text = diagrams.render_stack("p-work", TEMPLATES)
    assert text.startswith("flowchart LR")
    assert 'subgraph g_storage["Storage"]' in text
    assert "PERSISTENT_2, 2,400 GiB<br/>500 MB/s/TiB" in text
    assert "EKS add-ons x2" in text
    assert 'subgraph s_p_platform["imported from p-platform"]' in text
    assert "n_storage_FileSystem -.-> x_p_platform_network_Subnets" in text
    assert "n_interconnect_FsSecurityGroup -.-> x_p_platform_network_Network" in text
    assert "-" not in text.split("subgraph s_p_platform")[1].split("[")[0]


def test_markdown_puts_the_platform_first_and_is_deterministic() -> None:
    first = diagrams.render_markdown(TEMPLATES)
    assert first.index("### p-platform") < first.index("### p-work")
    assert first == diagrams.render_markdown(dict(reversed(list(TEMPLATES.items()))))


def test_retained_resources_lists_only_retained() -> None:
    templates = {
        "s": {
            "Resources": {
                "Kept": {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Retain"},
                "Gone": {"Type": "AWS::S3::Bucket", "DeletionPolicy": "Delete"},
            }
        }
    }
    table = diagrams.retained_resources(templates)
    assert "`Kept`" in table
    assert "`Gone`" not in table
