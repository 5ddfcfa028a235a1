"""Over every profile: what runs as root and what workloads write cannot be changed by a
principal that should not (the HyperPod lifecycle bucket writable only by the deployment, with
a key only it may encrypt with, access-logged)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.iam_policies import (
    ACCOUNT,
    Templates,
    resource_policy_denies,
    statements,
)
from tests.stacks.profiles import profile_params, synthesize

#: A principal with broad S3 and KMS rights in the account (an administrator, a CI role).
OTHER = f"arn:aws:iam::{ACCOUNT}:role/Administrator"


def _cfn_exec_role(region: str) -> str:
    """The bootstrap role CloudFormation deploys with (DefaultStackSynthesizer, default
    qualifier)."""
    return f"arn:aws:iam::{ACCOUNT}:role/cdk-hnb659fds-cfn-exec-role-{ACCOUNT}-{region}"


def _lifecycle_buckets(templates: Templates) -> list[tuple[str, str]]:
    """(stack, logical id) of every HyperPod lifecycle bucket the profile creates."""
    return [
        (stack, logical_id)
        for stack, template in templates.templates.items()
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == "AWS::S3::Bucket" and "LifecycleBucket" in logical_id
    ]


def _bucket_policy(templates: Templates, stack: str, bucket_id: str) -> dict[str, Any]:
    for resource in templates.templates[stack]["Resources"].values():
        if resource["Type"] == "AWS::S3::BucketPolicy" and resource["Properties"]["Bucket"] == {
            "Ref": bucket_id
        }:
            policy: dict[str, Any] = templates.render(stack, resource["Properties"])
            return policy["PolicyDocument"]
    raise AssertionError(f"{stack}/{bucket_id} has no bucket policy")


def _deployment_role(templates: Templates, stack: str) -> str:
    """The ARN of the stack's BucketDeployment handler role."""
    found = [
        logical_id
        for logical_id, resource in templates.templates[stack]["Resources"].items()
        if resource["Type"] == "AWS::IAM::Role"
        and logical_id.startswith("CustomCDKBucketDeployment")
    ]
    assert len(found) == 1, found
    return f"arn:aws:iam::{ACCOUNT}:role/{found[0]}"


@pytest.mark.parametrize("profile", profile_params())
def test_lifecycle_bucket_is_written_only_by_the_deployment(profile: str) -> None:
    result = synthesize(profile)
    templates = Templates(result.templates)
    buckets = _lifecycle_buckets(templates)
    on_hyperpod = any(
        w.orchestrator.value.startswith("hyperpod") for w in result.profile.enabled_workloads
    )
    cfn_exec = _cfn_exec_role(result.profile.platform.region)
    assert bool(buckets) == on_hyperpod
    for stack, bucket_id in buckets:
        arn = f"arn:aws:s3:::{bucket_id}"
        objects = f"{arn}/hyperpod-lifecycle/x/on_create.sh"
        policy = statements(_bucket_policy(templates, stack, bucket_id))
        writer = _deployment_role(templates, stack)
        for action in ("s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion"):
            assert resource_policy_denies(policy, OTHER, action, objects), (stack, action)
            assert resource_policy_denies(policy, cfn_exec, action, objects), (stack, action)
            assert not resource_policy_denies(policy, writer, action, objects), (stack, action)
        for action in (
            "s3:PutBucketPolicy",
            "s3:DeleteBucketPolicy",
            "s3:PutEncryptionConfiguration",
            "s3:PutBucketLogging",
            "s3:DeleteBucket",
        ):
            assert resource_policy_denies(policy, OTHER, action, arn), (stack, action)
            assert resource_policy_denies(policy, writer, action, arn), (stack, action)
            assert not resource_policy_denies(policy, cfn_exec, action, arn), (stack, action)
        # Reading stays with IAM: the policy denies no read.
        assert not resource_policy_denies(policy, OTHER, "s3:GetObject", objects)

        bucket = templates.resource(stack, bucket_id)["Properties"]
        (rule,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        assert rule["ServerSideEncryptionByDefault"]["SSEAlgorithm"] == "aws:kms"
        key_id = rule["ServerSideEncryptionByDefault"]["KMSMasterKeyID"]["Fn::GetAtt"][0]
        key = templates.render(stack, templates.resource(stack, key_id)["Properties"]["KeyPolicy"])
        encryptors = [
            statement["Principal"]
            for statement in key["Statement"]
            if statement["Effect"] == "Allow"
            and any(
                a in ("kms:*", "kms:Encrypt", "kms:GenerateDataKey*", "kms:GenerateDataKey")
                for a in (
                    statement["Action"]
                    if isinstance(statement["Action"], list)
                    else [statement["Action"]]
                )
            )
        ]
        assert encryptors == [{"AWS": writer}], (stack, encryptors)

        logging = bucket["LoggingConfiguration"]
        log_bucket = logging["DestinationBucketName"]["Ref"]
        assert templates.resource(stack, log_bucket)["Type"] == "AWS::S3::Bucket"
        assert templates.resource(stack, log_bucket)["DeletionPolicy"] == "Retain"
