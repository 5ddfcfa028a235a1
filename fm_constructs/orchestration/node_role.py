"""What an EKS node role holds: what the kubelet needs, and nothing a pod could borrow.

A pod on the host network (the exporters, the EFA and device plugins) or one that escapes its
container uses the node's instance profile. So the node roles keep only
``AmazonEKSWorkerNodePolicy`` and ``AmazonEC2ContainerRegistryReadOnly`` (EKS user guide,
"Amazon EKS node IAM role"); the VPC CNI's ``AmazonEKS_CNI_Policy`` goes to its own EKS Pod
Identity role on the ``aws-node`` service account (the guide's recommendation), and Session
Manager access is an opt-in statement without the parameter reads of
``AmazonSSMManagedInstanceCore`` (``ssm:GetParameter(s)`` on every parameter).
"""

from __future__ import annotations

import json

from aws_cdk import Stack
from aws_cdk import aws_iam as iam

from fm_constructs.policy.checkov import acknowledge_default_policy

#: The managed policy that moves off node roles to the CNI's Pod Identity role.
CNI_POLICY = "AmazonEKS_CNI_Policy"
#: The actions the SSM Agent needs for Session Manager shells (Session Manager user guide,
#: "Create a custom IAM instance profile for Session Manager"): no Run Command, no inventory,
#: no parameter reads.
SESSION_MANAGER_ACTIONS = (
    "ssm:UpdateInstanceInformation",
    "ssmmessages:CreateControlChannel",
    "ssmmessages:CreateDataChannel",
    "ssmmessages:OpenControlChannel",
    "ssmmessages:OpenDataChannel",
)


def remove_cni_policy(role: iam.IRole) -> None:
    """Drop ``AmazonEKS_CNI_Policy`` from a node role made by aws-cdk-lib (its logical id and
    the node group stay as they are: only the role's policy list changes). Call it once the
    role's managed policies are complete: the list is fixed from then on."""
    cfn_role = role.node.default_child
    if not isinstance(cfn_role, iam.CfnRole):
        return
    stack = Stack.of(role)
    resolved = stack.resolve(cfn_role.managed_policy_arns) or []
    names = [_aws_managed_name(arn) for arn in resolved]
    if CNI_POLICY not in names:
        return
    if None in names:
        raise ValueError(f"{role.node.path}: a managed policy that is not AWS-managed: {resolved}")
    cfn_role.managed_policy_arns = [
        iam.ManagedPolicy.from_aws_managed_policy_name(name).managed_policy_arn
        for name in names
        if name is not None and name != CNI_POLICY
    ]


def _aws_managed_name(arn: object) -> str | None:
    """``AmazonEKSWorkerNodePolicy`` of the resolved ARN of an AWS managed policy."""
    text = json.dumps(arn)
    marker = ":iam::aws:policy/"
    if marker not in text:
        return None
    return text.split(marker, 1)[1].split('"', 1)[0]


def allow_session_manager(role: iam.IRole) -> None:
    """Let nodes of ``role`` take Session Manager shells (and nothing else of Systems
    Manager)."""
    role.add_to_principal_policy(
        iam.PolicyStatement(
            sid="SessionManagerShell",
            actions=list(SESSION_MANAGER_ACTIONS),
            resources=["*"],
        )
    )
    acknowledge_default_policy(
        role,
        "CKV_AWS_111",
        "Session Manager's agent calls (the ssmmessages channel actions and "
        "ssm:UpdateInstanceInformation) take no resource; AWS grants them on * in "
        "AmazonSSMManagedInstanceCore. Every other statement of this policy names its resources.",
    )
