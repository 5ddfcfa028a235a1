"""The durable tier: an S3 bucket for datasets, checkpoints and model artifacts.

Encrypted with a customer-managed KMS key (S3 Bucket Key on, so KMS request costs stay flat
when millions of shards and checkpoint files are read), versioned so an overwritten or deleted
checkpoint can be recovered, TLS-only, never public, with server access logs (to a versioned
log bucket). Noncurrent checkpoint versions expire so versioning does not silently double the
bill of every run that overwrites its checkpoints, but the newest ``checkpoints_to_keep``
noncurrent versions of every object are kept whatever their age, so the last checkpoints stay
recoverable even when a run overwrites or deletes them.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from aws_cdk import Annotations, Duration, RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from constructs import Construct, IConstruct

from fm_constructs.errors import Problems
from fm_constructs.policy.compliance import acknowledge_compliance
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import storage as storage_rules
from fm_constructs.storage.buckets import (
    KEY_USER_ACTIONS,
    access_log_bucket,
    encrypted_bucket,
    log_access,
)
from fm_constructs.storage.data_perimeter import (
    DATA_ACTIONS,
    FSX_S3_ACCESS_ROLE_PATH,
    FSX_S3_ACCESS_ROLE_PREFIX,
    KEY_DATA_ACTIONS,
    DataPerimeter,
    role_inside,
)

#: Why the FSx statement of the data key names "any principal" (kept next to the resource as
#: a Checkov suppression): FSx reads a linked bucket with a service-linked role per file system
#: that exists only after the first association, and a key policy cannot name a principal
#: that does not exist; the statement is limited to that role path, this account, S3 in this
#: Region and S3 encryption contexts. It cannot name the bucket: the bucket references the key,
#: and a reference back is a dependency cycle; a fixed bucket name would collide on redeploy.
FSX_KEY_STATEMENT_REASON = (
    "Principal * is limited by aws:PrincipalArn to this account's AWSServiceRoleForFSxS3Access_* "
    "service-linked roles (created per file system at its first association, so they cannot be "
    "named), kms:CallerAccount, kms:ViaService s3 in this Region and the S3 encryption context."
)

#: Key prefix of the data bucket's server access logs in the log bucket.
ACCESS_LOG_PREFIX = "data-bucket/"

#: Noncurrent versions of each checkpoint object kept whatever their age (the FSx sizing
#: default of complete checkpoints kept on Lustre, plus the one being written).
DEFAULT_CHECKPOINTS_TO_KEEP = 3
#: S3 lifecycle NewerNoncurrentVersions upper bound.
MAX_NEWER_NONCURRENT_VERSIONS = storage_rules.MAX_NEWER_NONCURRENT_VERSIONS

#: Incomplete multipart uploads (interrupted checkpoint or dataset uploads) are aborted after:
ABORT_INCOMPLETE_MULTIPART_UPLOAD_DAYS = 7


#: Why the buckets have no cross-Region replication (HIPAA and NIST packs).
REPLICATION_REASON = (
    "Cross-Region replication is the operator's decision (a second Region, its data-residency "
    "rules and the cost of a second copy of every checkpoint); the bucket is versioned, "
    "retained on stack deletion and keeps noncurrent versions, and a replication rule can be "
    "added to it without replacing it."
)


@runtime_checkable
class IDataBucket(Protocol):
    """What storage consumers need from a data bucket, created here or imported."""

    @property
    def bucket(self) -> s3.IBucket: ...

    @property
    def key(self) -> kms.IKey | None: ...

    @property
    def bucket_name(self) -> str: ...

    @property
    def bucket_arn(self) -> str: ...

    @property
    def perimeter(self) -> DataPerimeter | None:
        """Who may use the objects and the key beyond IAM (None: IAM alone decides)."""
        ...

    @property
    def role_path(self) -> str | None:
        """The IAM path of the roles inside the perimeter (None without one)."""
        ...

    @property
    def key_allows_fsx_data_repositories(self) -> bool:
        """True when FSx for Lustre data repository associations can use the bucket's key
        (no customer-managed key, or its policy carries the FSx statement)."""
        ...

    def grant_read(self, grantee: iam.IGrantable, objects_key_pattern: str = "*") -> iam.Grant:
        """Let ``grantee`` list the bucket and read (and decrypt) objects."""
        ...

    def grant_read_write(
        self, grantee: iam.IGrantable, objects_key_pattern: str = "*"
    ) -> iam.Grant:
        """Let ``grantee`` read, write and delete objects (and use the key for both)."""
        ...


class _DataBucketBase(Construct):
    """Grants shared by created and imported data buckets (both go through the L2 bucket, which
    also grants the matching KMS permissions when the bucket has a key)."""

    bucket: s3.IBucket
    key: kms.IKey | None
    key_allows_fsx_data_repositories: bool
    perimeter: DataPerimeter | None = None

    @property
    def role_path(self) -> str | None:
        """The IAM path a role needs to reach the objects (None without a perimeter): create
        every role you grant under it (``iam.Role(..., path=bucket.role_path)``)."""
        return self.perimeter.role_path if self.perimeter is not None else None

    def _check_inside(self, grantee: iam.IGrantable) -> None:
        """Warn when a role granted access is outside the perimeter (the grant would be
        denied by the bucket and key policies)."""
        principal = grantee.grant_principal
        if self.perimeter is None or not isinstance(principal, iam.Role):
            return
        if role_inside(principal, self.perimeter) is False:
            Annotations.of(principal).add_warning_v2(
                "fm:data-perimeter-outside",
                f"{principal.node.path} is granted the data bucket but is not under the data "
                f"perimeter's path {self.perimeter.role_path}: the bucket and key policies deny "
                "it. Create it with path=data_bucket.role_path, or list its ARN in the "
                "perimeter's principal_arns (platform.data_perimeter_principals).",
            )

    @property
    def bucket_name(self) -> str:
        return self.bucket.bucket_name

    @property
    def bucket_arn(self) -> str:
        return self.bucket.bucket_arn

    def grant_read(self, grantee: iam.IGrantable, objects_key_pattern: str = "*") -> iam.Grant:
        """Let ``grantee`` list the bucket and read (and decrypt) matching objects."""
        self._check_inside(grantee)
        return self.bucket.grant_read(grantee, objects_key_pattern)

    def grant_read_write(
        self, grantee: iam.IGrantable, objects_key_pattern: str = "*"
    ) -> iam.Grant:
        """Let ``grantee`` read, write and delete matching objects, using the key both ways."""
        self._check_inside(grantee)
        return self.bucket.grant_read_write(grantee, objects_key_pattern)


class DataBucket(_DataBucketBase):
    """S3 bucket for datasets (``datasets/``), checkpoints (``checkpoints/``) and artifacts.

    Children (construct ids are a contract: they fix the logical ids):
      * ``Resource``: the bucket; ``Key``: its KMS key when created here;
        ``AccessLogs``: the server-access-log bucket when none is given.

    When the key is created here its policy also lets FSx for Lustre data repository
    associations (through S3, for this bucket only) encrypt and decrypt objects, as the FSx
    guide documents for SSE-KMS buckets. With ``encryption_key=`` given, add that statement to
    your key's policy yourself (:meth:`fsx_data_repository_key_statement` renders it);
    ``key_allows_fsx_data_repositories`` is then False and the Lustre construct warns.

    ``perimeter`` (on by default; see :mod:`fm_constructs.storage.data_perimeter`): the bucket
    policy and, for a key created here, the key policy deny the data actions to every
    principal of the account outside the perimeter. Roles granted the bucket must be created
    under :attr:`role_path` (``/fm-constructs/<stack name>/data/`` by default, a
    :class:`DataPerimeter` of your own names another) or be listed in its ``principal_arns``;
    a role granted here from outside gets a ``fm:data-perimeter-outside`` warning.
    ``perimeter=False`` leaves access to IAM alone.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        encryption_key: kms.IKey | None = None,
        access_logs_bucket: s3.IBucket | None = None,
        noncurrent_version_expiration_days: int = 30,
        checkpoints_to_keep: int = DEFAULT_CHECKPOINTS_TO_KEEP,
        checkpoint_prefix: str = "checkpoints/",
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        perimeter: DataPerimeter | bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems(context="DataBucket", code=codes.DATA_BUCKET)
        problems.adopt(
            storage_rules.data_bucket(
                noncurrent_version_expiration_days, checkpoints_to_keep, checkpoint_prefix
            )
        )
        problems.raise_if_any()

        self.checkpoint_prefix = checkpoint_prefix
        self.key_created = encryption_key is None
        if encryption_key is None:
            created_key = kms.Key(
                self,
                "Key",
                description=f"Data bucket {self.node.path}: datasets, checkpoints, artifacts",
                enable_key_rotation=True,
                removal_policy=removal_policy,
            )
            self.key = created_key
        else:
            self.key = encryption_key

        if access_logs_bucket is None:
            log_bucket = access_log_bucket(
                self,
                "AccessLogs",
                logged="data bucket",
                replication_reason=REPLICATION_REASON,
                removal_policy=removal_policy,
                lifecycle_rules=[
                    s3.LifecycleRule(
                        id="ExpireNoncurrentLogs",
                        noncurrent_version_expiration=Duration.days(
                            noncurrent_version_expiration_days
                        ),
                    )
                ],
            )
            self.access_logs_bucket: s3.IBucket = log_bucket
        else:
            self.access_logs_bucket = access_logs_bucket

        self.bucket = encrypted_bucket(
            self,
            "Resource",
            key=self.key,
            minimum_tls_version=1.2,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="AbortIncompleteMultipartUploads",
                    abort_incomplete_multipart_upload_after=Duration.days(
                        ABORT_INCOMPLETE_MULTIPART_UPLOAD_DAYS
                    ),
                ),
                s3.LifecycleRule(
                    id="ExpireNoncurrentCheckpoints",
                    prefix=checkpoint_prefix,
                    noncurrent_version_expiration=Duration.days(noncurrent_version_expiration_days),
                    noncurrent_versions_to_retain=checkpoints_to_keep,
                    expired_object_delete_marker=True,
                ),
            ],
            removal_policy=removal_policy,
        )
        self.resource: s3.Bucket = self.bucket
        acknowledge_compliance(self.bucket, "S3BucketReplicationEnabled", REPLICATION_REASON)
        log_access(
            self.bucket,
            self.access_logs_bucket,
            prefix=ACCESS_LOG_PREFIX,
            sid="AllowDataBucketServerAccessLogs",
        )

        if perimeter is True:
            perimeter = DataPerimeter.of_deployment(Stack.of(self).stack_name)
        self.perimeter = perimeter or None
        if self.perimeter is not None:
            self._enclose(self.perimeter, created_key if encryption_key is None else None)

        self.key_allows_fsx_data_repositories = False
        if encryption_key is None:
            result = self.key.add_to_resource_policy(self.fsx_data_repository_key_statement(self))
            self.key_allows_fsx_data_repositories = bool(result.statement_added)
            cfn_key = created_key.node.default_child
            assert isinstance(cfn_key, kms.CfnKey)
            cfn_key.add_metadata(
                "checkov",
                {
                    "skip": [
                        {
                            "id": "CKV_AWS_33",
                            "comment": FSX_KEY_STATEMENT_REASON,
                        }
                    ]
                },
            )

    def _enclose(self, perimeter: DataPerimeter, key: kms.Key | None) -> None:
        """The perimeter's denies on the bucket policy and, when the key is created here, on
        the key policy (a key given by ARN keeps its own policy: add
        ``perimeter.deny_statements`` to it yourself)."""
        for statement in perimeter.deny_statements(
            self,
            sid="DenyData",
            actions=DATA_ACTIONS,
            resources=[self.bucket.bucket_arn, self.bucket.arn_for_objects("*")],
        ):
            self.bucket.add_to_resource_policy(statement)
        if key is not None:
            for statement in perimeter.deny_statements(
                self, sid="DenyKeyUse", actions=KEY_DATA_ACTIONS, resources=["*"]
            ):
                key.add_to_resource_policy(statement)

    @staticmethod
    def fsx_data_repository_key_statement(
        scope: IConstruct, bucket_arn: str | None = None
    ) -> iam.PolicyStatement:
        """The key-policy statement that lets FSx for Lustre link an SSE-KMS bucket.

        FSx reads and writes a linked bucket with a per-file-system service-linked role
        (``AWSServiceRoleForFSxS3Access_fs-...``) that carries no KMS permissions, so the key
        policy must allow it. The role only exists once an association is created, and a key
        policy cannot name a principal that does not exist yet, so the statement allows any
        principal whose ARN matches that role path, only in this account and only through S3
        in this Region. With ``bucket_arn`` it is also limited to that bucket's encryption
        context (the bucket ARN with S3 Bucket Keys, the object ARN without); the data bucket's
        own key omits it, because the bucket already references the key and a reference back
        would be a dependency cycle, and that key encrypts nothing but this bucket.
        """
        stack = Stack.of(scope)
        s3_arns = (
            [bucket_arn, f"{bucket_arn}/*"] if bucket_arn else [f"arn:{stack.partition}:s3:::*"]
        )
        return iam.PolicyStatement(
            sid="AllowFsxLustreDataRepositoriesThroughS3",
            principals=[iam.AnyPrincipal()],
            actions=list(KEY_USER_ACTIONS),
            resources=["*"],
            conditions={
                "StringEquals": {
                    "kms:CallerAccount": stack.account,
                    "kms:ViaService": f"s3.{stack.region}.{stack.url_suffix}",
                },
                "ArnLike": {
                    "aws:PrincipalArn": (
                        f"arn:{stack.partition}:iam::{stack.account}:"
                        f"{FSX_S3_ACCESS_ROLE_PATH}{FSX_S3_ACCESS_ROLE_PREFIX}*"
                    )
                },
                "StringLike": {"kms:EncryptionContext:aws:s3:arn": s3_arns},
            },
        )

    @classmethod
    def from_data_bucket_attributes(
        cls,
        scope: Construct,
        construct_id: str,
        *,
        bucket_name: str,
        key_arn: str | None = None,
    ) -> IDataBucket:
        """Use a bucket that already exists; ``key_arn`` is its SSE-KMS key, if any.

        The imported key's policy cannot be changed from here: add
        :meth:`fsx_data_repository_key_statement` to it before linking the bucket to Lustre.
        """
        return _ImportedDataBucket(scope, construct_id, bucket_name=bucket_name, key_arn=key_arn)


class _ImportedDataBucket(_DataBucketBase):
    """A data bucket created outside this app (see DataBucket.from_data_bucket_attributes)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        bucket_name: str,
        key_arn: str | None,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems(
            context="DataBucket.from_data_bucket_attributes", code=codes.DATA_BUCKET
        )
        problems.adopt(storage_rules.imported_data_bucket(bucket_name=bucket_name, key_arn=key_arn))
        problems.raise_if_any()
        self.key = kms.Key.from_key_arn(self, "Key", key_arn) if key_arn else None
        self.bucket = s3.Bucket.from_bucket_attributes(
            self, "Resource", bucket_name=bucket_name, encryption_key=self.key
        )
        # Without a customer-managed key (SSE-S3) FSx needs nothing from a key policy.
        self.key_allows_fsx_data_repositories = self.key is None
