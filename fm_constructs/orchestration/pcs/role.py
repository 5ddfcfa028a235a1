"""The IAM role and instance profile every AWS PCS node runs with.

PCS accepts an instance profile only when its role's name starts with ``AWSPCS`` or the role
has the path ``/aws-pcs/``, and the role must allow ``pcs:RegisterComputeNodeGroupInstance``
(PCS user guide, "IAM instance profiles for AWS PCS"; API reference, ``ComputeNodeGroup``
``iamInstanceProfileArn``). The role created here takes the path (so CloudFormation still
names it) and that one permission, plus Systems Manager's managed instance policy, which is
how users reach login nodes without SSH keys or an open port.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import jsii
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.orchestration.node_role import allow_session_manager
from fm_constructs.policy import acknowledge
from fm_constructs.policy.checkov import acknowledge_default_policy

#: The role path PCS accepts instead of an ``AWSPCS`` name prefix.
PCS_ROLE_PATH = "/aws-pcs/"
#: The role name prefix PCS accepts.
PCS_ROLE_NAME_PREFIX = "AWSPCS"
REGISTER_ACTION = "pcs:RegisterComputeNodeGroupInstance"


@runtime_checkable
class IPcsInstanceProfile(Protocol):
    """What a PCS node group needs: the instance profile's ARN, and the role to grant to."""

    @property
    def instance_profile_arn(self) -> str: ...

    @property
    def role(self) -> iam.IRole | None: ...


def pcs_accepts_role(name: str | None, path: str | None) -> bool:
    """Whether PCS accepts a role of this name and path (a token passes: unknown here)."""
    return (path or "/").startswith(PCS_ROLE_PATH) or (name or "").startswith(PCS_ROLE_NAME_PREFIX)


@jsii.implements(iam.IGrantable)
class PcsInstanceRole(Construct):
    """A node role PCS accepts (path ``/aws-pcs/``) with its instance profile.

    Grants ``pcs:RegisterComputeNodeGroupInstance`` (PCS resolves the cluster from the
    instance, so the action takes no resource narrower than ``*``) and, with
    ``session_manager``, Session Manager shells (its agent's actions only: no parameter or
    document reads, unlike ``AmazonSSMManagedInstanceCore``): how users reach the login node.
    Other grants go to :attr:`role` (``grant_read`` of the node scripts, the FSx describe
    calls).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, session_manager: bool = False
    ) -> None:
        super().__init__(scope, construct_id)
        self.role = iam.Role(
            self,
            "Role",
            assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"),
            path=PCS_ROLE_PATH,
            description="AWS PCS nodes: register with the cluster"
            + (", Session Manager" if session_manager else ""),
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=[REGISTER_ACTION], resources=["*"])
        )
        self.instance_profile = iam.InstanceProfile(
            self, "InstanceProfile", role=self.role, path=PCS_ROLE_PATH
        )
        if session_manager:
            allow_session_manager(self.role)
        shell = (
            " The Session Manager agent's calls (ssmmessages channels, "
            "ssm:UpdateInstanceInformation) take no resource either."
            if session_manager
            else ""
        )
        acknowledge_default_policy(
            self.role,
            "CKV_AWS_111",
            "pcs:RegisterComputeNodeGroupInstance takes no resource (the PCS user guide's "
            "instance-profile policy grants it on *; PCS finds the node group from the calling "
            "instance), nor does ecr:GetAuthorizationToken." + shell + " Every other statement "
            "of this policy names its resources.",
        )
        acknowledge(
            self.role,
            "AwsSolutions-IAM5[Resource::*]",
            "pcs:RegisterComputeNodeGroupInstance names no resource type to scope it to; PCS "
            "finds the node group from the calling instance (PCS user guide, minimal instance "
            "profile policy); ecr:GetAuthorizationToken has no resource-level permissions "
            "(image pulls stay scoped to the exporter repository)." + shell,
        )

    def allow_image_pull(self, repository_arn: str) -> None:
        """Let the nodes pull images of one ECR repository (the EFA exporter).
        ``ecr:GetAuthorizationToken`` has no resource-level permissions."""
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                resources=[repository_arn],
            )
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(actions=["ecr:GetAuthorizationToken"], resources=["*"])
        )

    @property
    def grant_principal(self) -> iam.IPrincipal:
        return self.role

    @property
    def instance_profile_arn(self) -> str:
        return self.instance_profile.instance_profile_arn

    @staticmethod
    def from_instance_profile_attributes(
        scope: Construct, construct_id: str, *, instance_profile_arn: str
    ) -> IPcsInstanceProfile:
        """An instance profile made elsewhere (its role must already meet PCS's naming rule
        and hold the registration permission; PCS refuses the node group otherwise)."""
        return _ImportedInstanceProfile(scope, construct_id, instance_profile_arn)


class _ImportedInstanceProfile(Construct):
    def __init__(self, scope: Construct, construct_id: str, arn: str) -> None:
        super().__init__(scope, construct_id)
        self.instance_profile_arn = arn
        self.role: iam.IRole | None = None
