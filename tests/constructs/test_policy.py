"""cdk-nag wiring: an unacknowledged AwsSolutions finding fails synthesis; an acknowledged one
with a reason does not; the HIPAA and NIST 800-53 R5 packs do the same, and their class-wide
acknowledgements reach only the resources of their class."""

from __future__ import annotations

import tempfile
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_sns as sns

from fm_constructs.policy import acknowledge, acknowledge_compliance, enable_compliance_packs
from fm_constructs.policy.checkov import acknowledge_checkov
from tests.support import synth_stack


def test_unacknowledged_finding_fails_synthesis() -> None:
    with pytest.raises(RuntimeError, match="AwsSolutions-SNS3"):
        synth_stack(lambda stack: sns.Topic(stack, "Plain"))


def test_acknowledged_finding_passes() -> None:
    def build(stack: cdk.Stack) -> None:
        topic = sns.Topic(stack, "Plain")
        acknowledge(topic, "AwsSolutions-SNS3", "test topic without publishers")

    synth_stack(build).resource_count_is("AWS::SNS::Topic", 1)


def test_acknowledgement_needs_a_reason() -> None:
    with pytest.raises(ValueError, match="needs a reason"):
        synth_stack(lambda stack: acknowledge(sns.Topic(stack, "T"), "AwsSolutions-SNS3", " "))


def _compliance_synth(build: Any) -> None:
    app = cdk.App(outdir=tempfile.mkdtemp())
    build(cdk.Stack(app, "S"))
    enable_compliance_packs(app)
    app.synth()


def _bucket(stack: cdk.Stack) -> s3.Bucket:
    return s3.Bucket(
        stack,
        "B",
        enforce_ssl=True,
        versioned=True,
        encryption=s3.BucketEncryption.KMS,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        server_access_logs_prefix="logs/",
    )


def test_compliance_packs_fail_synthesis_until_acknowledged_at_the_resource() -> None:
    # The packs report the missing replication; acknowledged at the bucket, synthesis passes.
    with pytest.raises(RuntimeError, match=r"HIPAA\.Security-S3BucketReplicationEnabled"):
        _compliance_synth(_bucket)

    def acknowledged(stack: cdk.Stack) -> None:
        bucket = _bucket(stack)
        acknowledge_compliance(bucket, "S3BucketReplicationEnabled", "test bucket")

    _compliance_synth(acknowledged)


def test_grant_policies_and_handler_findings_are_acknowledged_by_class() -> None:
    def build(stack: cdk.Stack) -> None:
        role = iam.Role(stack, "R", assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"))
        role.add_to_policy(iam.PolicyStatement(actions=["s3:GetObject"], resources=["*"]))
        shared = iam.CfnPolicy(
            stack,
            "Shared",
            policy_name="shared",
            policy_document={"Version": "2012-10-17", "Statement": []},
            roles=[role.role_name, "other-role"],
        )
        assert shared

    with pytest.raises(RuntimeError) as raised:
        _compliance_synth(build)
    report = str(raised.value)
    # The role's own DefaultPolicy is acknowledged; the policy shared by two roles is not.
    assert "S/Shared" in report
    assert "S/R/DefaultPolicy" not in report
    with pytest.raises(ValueError, match="needs a reason"):
        acknowledge_compliance(cdk.Stack(), "LambdaDLQ", "")


def _skips(resource: dict[str, Any]) -> dict[str, str]:
    skip = resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    return {entry["id"]: entry["comment"] for entry in skip}


def test_checkov_acknowledgement_lands_on_the_resource_with_its_reason() -> None:
    def build(stack: cdk.Stack) -> None:
        topic = sns.Topic(stack, "Plain")
        acknowledge(topic, "AwsSolutions-SNS3", "test topic without publishers")
        acknowledge_checkov(topic, "CKV_AWS_26", "a test topic that carries no data")
        acknowledge_checkov(topic, "CKV_AWS_26", "acknowledged twice: the last reason stands")

    topics = synth_stack(build).find_resources("AWS::SNS::Topic")
    (topic,) = topics.values()
    assert _skips(topic) == {"CKV_AWS_26": "acknowledged twice: the last reason stands"}
    with pytest.raises(ValueError, match="needs a reason"):
        synth_stack(lambda stack: acknowledge_checkov(sns.Topic(stack, "T"), "CKV_AWS_26", ""))


def test_custom_resource_handlers_carry_the_checks_that_apply_to_them() -> None:
    # aws-cdk-lib's VPC default-group provider (a plain CfnResource: no VPC, no environment)
    # and a handler of this library's with environment variables, outside the VPC.
    from aws_cdk import Duration
    from aws_cdk import aws_ec2 as ec2
    from aws_cdk import aws_lambda as lambda_
    from aws_cdk import aws_logs as logs

    from fm_constructs.policy.handler_function import handler_function

    def build(stack: cdk.Stack) -> None:
        vpc = ec2.Vpc(stack, "Vpc", max_azs=1, nat_gateways=0, restrict_default_security_group=True)
        acknowledge(vpc, "AwsSolutions-VPC7", "test VPC without flow logs")
        handler = handler_function(
            stack,
            role_description="test",
            description="test handler",
            runtime=lambda_.Runtime.PYTHON_3_14,
            code=lambda_.Code.from_inline("def handler(event, context):\n    return {}\n"),
            timeout=Duration.seconds(30),
            memory_size=128,
            log_retention=logs.RetentionDays.ONE_WEEK,
        )
        handler.function.add_environment("MODE", "test")

    functions = synth_stack(build).find_resources("AWS::Lambda::Function")
    by_id = {name: _skips(resource) for name, resource in functions.items()}
    provider = next(skips for name, skips in by_id.items() if "CustomVpcRestrictDefaultSG" in name)
    ours = next(skips for name, skips in by_id.items() if name.startswith("Function"))
    assert set(provider) == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117"}
    assert set(ours) == {"CKV_AWS_115", "CKV_AWS_116", "CKV_AWS_117", "CKV_AWS_173"}
    assert all(len(reason) > 40 for reason in (*provider.values(), *ours.values()))


def test_guard_aspects_visit_what_an_aspect_of_the_app_visits_in_the_same_order() -> None:
    # The guards walk the app themselves, from one construct the CDK calls once: each
    # construct once, in the tree's order, none inside a nested Stage (which synthesizes with
    # aspects of its own), exactly as an aspect added to the app is called.
    import jsii
    from constructs import Construct, IConstruct

    from fm_constructs.policy import enable_nag
    from fm_constructs.policy.nag import add_guard_aspect

    @jsii.implements(cdk.IAspect)
    class Record:
        def __init__(self) -> None:
            self.paths: list[str] = []

        def visit(self, node: IConstruct) -> None:
            self.paths.append(node.node.path)

    def app_with(record: Record, *, guarded: bool) -> cdk.App:
        app = cdk.App(outdir=tempfile.mkdtemp())
        enable_nag(app)
        for name in ("A", "B"):
            stack = cdk.Stack(app, name)
            inner = Construct(Construct(stack, "Outer"), "Inner")
            cdk.CfnResource(inner, "Handle", type="AWS::CloudFormation::WaitConditionHandle")
        # Each stack holds a resource: the template validation warns about an empty one.
        nested = cdk.Stack(cdk.Stage(app, "Nested"), "C")
        cdk.CfnResource(nested, "Handle", type="AWS::CloudFormation::WaitConditionHandle")
        if guarded:
            add_guard_aspect(app, record)
        else:
            cdk.Aspects.of(app).add(record)
        return app

    guarded, plain = Record(), Record()
    app_with(guarded, guarded=True).synth()
    app_with(plain, guarded=False).synth()
    assert "B/Outer/Inner" in plain.paths
    assert not any(path.startswith("Nested") for path in plain.paths)
    assert guarded.paths == plain.paths
