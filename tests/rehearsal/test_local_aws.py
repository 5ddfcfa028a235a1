"""The local AWS's extensions, one behaviour each, through the CloudFormation API (change sets,
as the CDK CLI uses them) of the session's moto server."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.rehearsal.account import client
from tests.rehearsal.local_aws import engine, schemas
from tests.rehearsal.local_aws.server import LocalAws, NotLoopbackError, assert_loopback

REGION = "eu-west-1"


def deploy(local: LocalAws, template: dict[str, Any], name: str | None = None) -> dict[str, Any]:
    """Create a stack through a change set; return its description and its failure reasons."""
    cloudformation = client(local, "cloudformation", REGION)
    name = name or f"t-{uuid.uuid4().hex[:8]}"
    cloudformation.create_change_set(
        StackName=name,
        ChangeSetName="cs",
        ChangeSetType="CREATE",
        TemplateBody=json.dumps(template),
    )
    cloudformation.execute_change_set(StackName=name, ChangeSetName="cs")
    (stack,) = cloudformation.describe_stacks(StackName=name)["Stacks"]
    events = cloudformation.describe_stack_events(StackName=name)["StackEvents"]
    stack["Reasons"] = [
        e.get("ResourceStatusReason", "") for e in events if "FAILED" in e["ResourceStatus"]
    ]
    return stack


def test_loopback_only() -> None:
    assert_loopback("http://127.0.0.1:5000")
    assert_loopback("http://localhost:5000")
    with pytest.raises(NotLoopbackError):
        assert_loopback("https://cloudformation.us-east-1.amazonaws.com")


def test_environment_refuses_to_ignore_the_endpoint(local: LocalAws, tmp_path: Any) -> None:
    with pytest.raises(NotLoopbackError):
        local.environment(tmp_path, {"AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"})
    env = local.environment(tmp_path, {"AWS_PROFILE": "prod", "AWS_ENDPOINT_URL_EKS": "x"})
    assert "AWS_PROFILE" not in env and "AWS_ENDPOINT_URL_EKS" not in env


def test_schema_violations_read_like_the_handler() -> None:
    assert schemas.violations("AWS::EKS::Nodegroup", {"NodeRole": "r", "Subnets": []}) == [
        "#: required key [ClusterName] not found"
    ]
    ok = {"ClusterName": "c", "NodeRole": "r", "Subnets": ["s"], "DiskSize": "20"}
    assert schemas.violations("AWS::EKS::Nodegroup", ok) == []


def test_a_secrets_ref_is_its_arn_as_an_iam_policy_needs(local: LocalAws) -> None:
    """CloudFormation returns a secret's ARN for ``Ref``; a policy that grants it must get an
    ARN (IAM refuses anything else), as the model server's role does."""
    template = {
        "Resources": {
            "Key": {
                "Type": "AWS::SecretsManager::Secret",
                "Properties": {"GenerateSecretString": {"PasswordLength": 32}},
            },
            "Role": {
                "Type": "AWS::IAM::Role",
                "Properties": {
                    "AssumeRolePolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Principal": {"Service": "pods.eks.amazonaws.com"},
                                "Action": ["sts:AssumeRole", "sts:TagSession"],
                            }
                        ],
                    }
                },
            },
            "Read": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyName": "read",
                    "Roles": [{"Ref": "Role"}],
                    "PolicyDocument": {
                        "Version": "2012-10-17",
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": "secretsmanager:GetSecretValue",
                                "Resource": {"Ref": "Key"},
                            }
                        ],
                    },
                },
            },
        },
        "Outputs": {"Arn": {"Value": {"Ref": "Key"}}},
    }
    stack = deploy(local, template)
    assert stack["StackStatus"] == "CREATE_COMPLETE", stack["Reasons"]
    (output,) = stack["Outputs"]
    assert output["OutputValue"].startswith(f"arn:aws:secretsmanager:{REGION}:")
    assert ":secret:Key-" in output["OutputValue"]


def test_unresolved_references_are_found() -> None:
    template = {"Resources": {"A": {"Type": "X", "Properties": {"P": {"Ref": "Missing"}}}}}
    assert engine.unresolved(template) == {"Resources": ["Missing"]}


def test_unresolved_reference_fails_the_change_set(local: LocalAws) -> None:
    template = {
        "Resources": {
            "Topic": {"Type": "AWS::SNS::Topic", "Properties": {"DisplayName": {"Ref": "Nope"}}}
        }
    }
    with pytest.raises(Exception, match=r"Unresolved resource dependencies \[Nope\]"):
        deploy(local, template)


def test_node_group_needs_its_cluster_and_rolls_back(local: LocalAws) -> None:
    template = {
        "Resources": {
            "Topic": {"Type": "AWS::SNS::Topic"},
            "Nodes": {
                "Type": "AWS::EKS::Nodegroup",
                "Properties": {
                    "ClusterName": "no-such-cluster",
                    "NodeRole": "arn:aws:iam::123456789012:role/none",
                    "Subnets": ["subnet-1"],
                },
            },
        }
    }
    stack = deploy(local, template)
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert any("No cluster found for name: no-such-cluster." in r for r in stack["Reasons"])
    topics = client(local, "sns", REGION).list_topics()["Topics"]
    assert not [t for t in topics if stack["StackName"] in t["TopicArn"]]


def test_custom_resource_without_an_answer_fails(local: LocalAws) -> None:
    template = {
        "Resources": {
            "Thing": {
                "Type": "Custom::Unknown",
                "Properties": {"ServiceToken": "arn:aws:lambda:eu-west-1:123456789012:function:f"},
            }
        }
    }
    stack = deploy(local, template)
    assert stack["StackStatus"] == "ROLLBACK_COMPLETE"
    assert any(
        "no in-process answer for custom resource type Custom::Unknown" in r
        for r in stack["Reasons"]
    )


def test_export_in_use_cannot_be_deleted(local: LocalAws) -> None:
    name = f"x{uuid.uuid4().hex[:6]}"
    exporter = {
        "Resources": {"Topic": {"Type": "AWS::SNS::Topic"}},
        "Outputs": {"Arn": {"Value": {"Ref": "Topic"}, "Export": {"Name": name}}},
    }
    importer = {
        "Resources": {
            "Topic": {
                "Type": "AWS::SNS::Topic",
                "Properties": {"DisplayName": {"Fn::ImportValue": name}},
            }
        }
    }
    assert deploy(local, exporter, f"{name}-a")["StackStatus"] == "CREATE_COMPLETE"
    assert deploy(local, importer, f"{name}-b")["StackStatus"] == "CREATE_COMPLETE"
    with pytest.raises(Exception, match=f"Cannot delete export {name} as it is in use by {name}-b"):
        client(local, "cloudformation", REGION).delete_stack(StackName=f"{name}-a")
