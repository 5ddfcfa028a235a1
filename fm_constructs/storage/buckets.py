"""The library's S3 buckets: KMS-encrypted, versioned, TLS-only, never public, logged.

The data bucket and the lifecycle-scripts bucket (HyperPod's, which PCS uses too) are the same
kind of bucket: encrypted with a customer key (S3 Bucket Key on), versioned, owner-enforced,
public access blocked, TLS required, and logging their requests to a log bucket of their own
(S3 object writes are CloudTrail data events, which are not logged unless a trail selects
them). The bucket, its log bucket with the acknowledgements it needs where the findings arise,
and the log delivery are each built here once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import DefaultStackSynthesizer, Fn, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct

from fm_constructs.policy import acknowledge
from fm_constructs.policy.checkov import acknowledge_checkov
from fm_constructs.policy.compliance import acknowledge_compliance

#: Why a log bucket is encrypted with S3-managed keys (cited where the finding arises).
SSE_S3_ONLY_REASON = (
    'Server access log destinations support SSE-S3 only (S3 user guide, "Enabling '
    'Amazon S3 server access logging").'
)


#: What a principal that writes and reads through S3 needs of the bucket's key (the KMS
#: developer guide's "key users" cryptographic actions).
KEY_USER_ACTIONS = (
    "kms:Encrypt",
    "kms:Decrypt",
    "kms:ReEncrypt*",
    "kms:GenerateDataKey*",
    "kms:DescribeKey",
)


def _private_bucket(
    scope: Construct,
    construct_id: str,
    *,
    removal_policy: RemovalPolicy,
    lifecycle_rules: Sequence[s3.LifecycleRule] | None,
    **encryption: Any,
) -> s3.Bucket:
    """A versioned bucket with owner-enforced ownership, public access blocked and TLS
    required, encrypted as ``encryption`` says."""
    return s3.Bucket(
        scope,
        construct_id,
        versioned=True,
        block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
        object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
        enforce_ssl=True,
        lifecycle_rules=list(lifecycle_rules) if lifecycle_rules else None,
        removal_policy=removal_policy,
        **encryption,
    )


def encrypted_bucket(
    scope: Construct,
    construct_id: str,
    *,
    key: kms.IKey,
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    minimum_tls_version: float | None = None,
    lifecycle_rules: Sequence[s3.LifecycleRule] | None = None,
) -> s3.Bucket:
    """A private bucket encrypted with ``key`` (S3 Bucket Key on, so KMS request costs stay
    flat), requiring at least ``minimum_tls_version`` when given."""
    return _private_bucket(
        scope,
        construct_id,
        removal_policy=removal_policy,
        lifecycle_rules=lifecycle_rules,
        encryption=s3.BucketEncryption.KMS,
        encryption_key=key,
        bucket_key_enabled=True,
        minimum_tls_version=minimum_tls_version,
    )


def access_log_bucket(
    scope: Construct,
    construct_id: str,
    *,
    logged: str,
    replication_reason: str,
    removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    lifecycle_rules: Sequence[s3.LifecycleRule] | None = None,
) -> s3.Bucket:
    """A private log bucket encrypted with S3-managed keys (all a server-access-log
    destination supports), that does not log itself; ``logged`` names the bucket whose logs it
    holds ("data bucket") in its acknowledgements, ``replication_reason`` says why it is not
    replicated."""
    bucket = _private_bucket(
        scope,
        construct_id,
        removal_policy=removal_policy,
        lifecycle_rules=lifecycle_rules,
        encryption=s3.BucketEncryption.S3_MANAGED,
    )
    acknowledge(
        bucket,
        "AwsSolutions-S1",
        f"This is the server-access-log destination of the {logged}; a log bucket "
        "logging to itself would log its own log deliveries without end.",
    )
    acknowledge_compliance(bucket, "S3DefaultEncryptionKMS", SSE_S3_ONLY_REASON)
    acknowledge_compliance(bucket, "S3BucketReplicationEnabled", replication_reason)
    acknowledge_checkov(
        bucket,
        "CKV_AWS_18",
        f"The server-access-log destination of the {logged}: its own access logs would be "
        "written into itself (S3 advises against a bucket that logs to itself).",
    )
    return bucket


def log_access(bucket: s3.Bucket, log_bucket: s3.IBucket, *, prefix: str, sid: str) -> None:
    """Deliver ``bucket``'s server access logs under ``prefix`` of ``log_bucket``.

    Set on the L1 and granted explicitly (the statement the S3 guide documents for the logging
    service principal, ``sid`` in the log bucket's policy) instead of the L2's
    ``server_access_logs_bucket``, whose behaviour depends on an app-level feature flag: without
    the flag it switches the log bucket to ACLs, which fails against BucketOwnerEnforced
    ownership.
    """
    cfn_bucket = bucket.node.default_child
    assert isinstance(cfn_bucket, s3.CfnBucket)
    cfn_bucket.logging_configuration = s3.CfnBucket.LoggingConfigurationProperty(
        destination_bucket_name=log_bucket.bucket_name,
        log_file_prefix=prefix,
    )
    log_bucket.add_to_resource_policy(
        iam.PolicyStatement(
            sid=sid,
            principals=[iam.ServicePrincipal("logging.s3.amazonaws.com")],
            actions=["s3:PutObject"],
            resources=[log_bucket.arn_for_objects(f"{prefix}*")],
            conditions={
                "ArnLike": {"aws:SourceArn": bucket.bucket_arn},
                "StringEquals": {"aws:SourceAccount": Stack.of(bucket).account},
            },
        )
    )


def cloudformation_execution_role_arn(stack: Stack) -> str | None:
    """The role CloudFormation deploys ``stack`` with (the bootstrap's ``cfn-exec-role``
    named by :class:`~aws_cdk.DefaultStackSynthesizer`), or None with another synthesizer."""
    synthesizer = stack.synthesizer
    if not isinstance(synthesizer, DefaultStackSynthesizer):
        return None
    arn = synthesizer.cloud_formation_execution_role_arn
    # The synthesizer spells account, region and partition as ${AWS::...} placeholders.
    return Fn.sub(arn) if "${" in arn else arn
