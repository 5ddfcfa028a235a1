"""The data perimeter: who may read and write the data bucket's objects and use its key.

IAM alone decides who reads a bucket whose key keeps the default key policy (KMS developer
guide, "Default key policy"): any role of the account with broad S3 and KMS rights copies
every checkpoint and every served model. The perimeter adds a Deny to the bucket policy and
to the key policy for the data actions (object reads, writes, deletes and listings; encrypt,
decrypt and data keys) of every principal of the account except:

* the deployment's data roles: roles created under the perimeter's IAM path
  (:attr:`DataPerimeter.role_path`, ``/fm-constructs/<name>/data/``). The workload roles and
  the model server's role are created there (the data bucket hands them the path); creating a
  role under a path is ``iam:CreateRole``, which already gives its holder any permission;
* FSx for Lustre's service-linked roles ``AWSServiceRoleForFSxS3Access_fs-*`` (one per file
  system), which import and export the data repository associations;
* the break-glass role and any other role ARN the profile lists (``break_glass_role_arn``,
  ``data_perimeter_principals``);
* the stack's CloudFormation execution role, only for requests an AWS service makes on its
  behalf (``aws:ViaAWSService``): CloudFormation creates the data repository associations
  with it, and FSx may check the bucket with the caller's credentials when it does;
* AWS service principals (``aws:PrincipalIsAWSService``).

Configuration actions (bucket policy, encryption, lifecycle; key administration) are not
denied: the account's administrators can still change or remove the perimeter, and the root
user always can. The bucket's own roles cannot be named by ARN (they live in stacks that depend
on this one, and a reference back would be a cycle), hence the path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_iam as iam
from constructs import IConstruct

from fm_constructs.storage.buckets import cloudformation_execution_role_arn

#: Path prefix of the service-linked roles FSx for Lustre creates per file system
#: (AWSServiceRoleForFSxS3Access_fs-...) to read and write linked S3 buckets.
FSX_S3_ACCESS_ROLE_PATH = "role/aws-service-role/s3.data-source.lustre.fsx.amazonaws.com/"
FSX_S3_ACCESS_ROLE_PREFIX = "AWSServiceRoleForFSxS3Access_"

#: The bucket actions the perimeter denies outside it: every read, write, delete and listing
#: of objects (their versions, tags, ACLs and multipart uploads included).
DATA_ACTIONS = (
    "s3:GetObject*",
    "s3:PutObject*",
    "s3:DeleteObject*",
    "s3:RestoreObject",
    "s3:AbortMultipartUpload",
    "s3:ListBucket",
    "s3:ListBucketVersions",
    "s3:ListBucketMultipartUploads",
    "s3:ListMultipartUploadParts",
    "s3:ReplicateObject",
    "s3:ReplicateDelete",
    "s3:ReplicateTags",
)

#: The key actions the perimeter denies outside it (the cryptographic ones; administration and
#: DescribeKey stay with the key policy's other statements).
KEY_DATA_ACTIONS = (
    "kms:Decrypt",
    "kms:Encrypt",
    "kms:GenerateDataKey*",
    "kms:ReEncrypt*",
)

_PATH_PART = re.compile(r"^[A-Za-z0-9+=,.@_-]{1,128}$")


def perimeter_role_path(name: str) -> str:
    """The IAM path of the data roles of deployment ``name``: ``/fm-constructs/<name>/data/``."""
    if not _PATH_PART.match(name):
        raise ValueError(f"{name!r} cannot be part of an IAM path")
    return f"/fm-constructs/{name}/data/"


@dataclass(frozen=True)
class DataPerimeter:
    """Who may use the data bucket's objects and key beyond IAM: roles under ``role_path``,
    FSx's S3 access roles, ``principal_arns`` (a break-glass role and any role listed by
    hand) and, through AWS services only, the stack's CloudFormation execution role."""

    role_path: str
    principal_arns: tuple[str, ...] = ()

    @classmethod
    def of_deployment(cls, name: str, principal_arns: Sequence[str] = ()) -> DataPerimeter:
        """The perimeter of deployment ``name`` (its data roles under
        ``/fm-constructs/<name>/data/``)."""
        return cls(perimeter_role_path(name), tuple(principal_arns))

    def allowed_principal_arns(self, scope: IConstruct) -> list[str]:
        """ARN patterns (``aws:PrincipalArn``) of everyone inside, in ``scope``'s account."""
        stack = Stack.of(scope)
        account = f"arn:{stack.partition}:iam::{stack.account}:"
        return [
            f"{account}role{self.role_path}*",
            f"{account}{FSX_S3_ACCESS_ROLE_PATH}{FSX_S3_ACCESS_ROLE_PREFIX}*",
            *self.principal_arns,
        ]

    def deny_statements(
        self, scope: IConstruct, *, sid: str, actions: Sequence[str], resources: Sequence[str]
    ) -> list[iam.PolicyStatement]:
        """The resource-policy statements that deny ``actions`` on ``resources`` outside the
        perimeter: one for every principal not allowed, one for the CloudFormation execution
        role's direct calls (None with a synthesizer that names no such role)."""
        allowed = self.allowed_principal_arns(scope)
        deployer = cloudformation_execution_role_arn(Stack.of(scope))

        def deny(suffix: str, conditions: dict[str, Any]) -> iam.PolicyStatement:
            return iam.PolicyStatement(
                sid=f"{sid}{suffix}",
                effect=iam.Effect.DENY,
                principals=[iam.AnyPrincipal()],
                actions=list(actions),
                resources=list(resources),
                conditions=conditions,
            )

        outside = {
            "ArnNotLike": {"aws:PrincipalArn": [*allowed, *([deployer] if deployer else [])]},
            "BoolIfExists": {"aws:PrincipalIsAWSService": "false"},
        }
        out = [deny("OutsidePerimeter", outside)]
        if deployer:
            direct = {
                "ArnEquals": {"aws:PrincipalArn": deployer},
                "BoolIfExists": {"aws:ViaAWSService": "false"},
            }
            out.append(deny("DeployerOnlyThroughServices", direct))
        return out


def role_inside(role: iam.IRole, perimeter: DataPerimeter) -> bool | None:
    """Whether ``role`` is created under ``perimeter``'s path (None: not known here, such as
    an imported role)."""
    cfn_role = role.node.default_child if isinstance(role, iam.Role) else None
    if not isinstance(cfn_role, iam.CfnRole):
        return None
    return cfn_role.path == perimeter.role_path
