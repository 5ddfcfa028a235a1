"""AWS Load Balancer Controller for a GPU EKS cluster: the Network Load Balancers of Services.

The in-tree cloud provider of EKS makes a load balancer for every ``type: LoadBalancer``
Service with instance targets on every node and rules in the node security group. The AWS Load
Balancer Controller instead registers the pods themselves (``ip`` targets), puts the load
balancer behind a security group of its own (the frontend group, open to
``loadBalancerSourceRanges``) and opens the pod port only from that load balancer (a backend
group, rules in the one security group of each target ENI tagged
``kubernetes.io/cluster/<cluster>``: the EKS cluster security group). A Service is its when
annotated ``service.beta.kubernetes.io/aws-load-balancer-type: external``
(:func:`~fm_constructs.kubernetes.model_server.service_manifest`); the in-tree provider
leaves such Services alone.

Scope: Services only. The controller's Ingress (ALB) add-ons are switched off (Shield, WAF,
WAFv2, the default IngressClass) and so is its Service mutating webhook, which would make it
the default for every LoadBalancer Service of the cluster and, with ``failurePolicy: Fail``,
hold the creation of any such Service while the controller is down.

Identity: EKS Pod Identity. The policy (:func:`controller_policy_statements`) is written from
the controller's published policy at the pinned release
(``docs/install/iam_policy.json`` at the chart's appVersion) and narrowed: the ALB-only
services (Cognito, ACM, IAM server certificates, WAF, Shield) and the ALB listener rules are
left out; every resource is of this account and Region, load balancers of type ``net`` only;
security-group rules only in this cluster's VPC; changes and deletions only of what carries the
controller's ``elbv2.k8s.aws/cluster=<cluster name>`` tag (the tag it sets on everything it
creates). The Region and VPC are given to the controller, so it never reads them from the
instance metadata service (system nodes allow one hop, which pods cannot use).
"""

from __future__ import annotations

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.pod_identity import chart_with_identity, pod_identity_role
from fm_constructs.policy import acknowledge

#: Id of the controller in its cluster's add-on registry (and its construct id).
ADDON_ID = "AwsLoadBalancerController"
#: Tag the controller puts on every load balancer, target group, listener and security group
#: it creates, with the cluster name as value (``pkg/deploy/tracking/provider.go``).
CLUSTER_TAG = "elbv2.k8s.aws/cluster"

#: Read-only calls (no resource-level permissions exist for them).
DESCRIBE_ACTIONS: tuple[str, ...] = (
    "ec2:DescribeAccountAttributes",
    "ec2:DescribeAddresses",
    "ec2:DescribeAvailabilityZones",
    "ec2:DescribeInternetGateways",
    "ec2:DescribeVpcs",
    "ec2:DescribeVpcPeeringConnections",
    "ec2:DescribeSubnets",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeInstances",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeTags",
    "ec2:GetSecurityGroupsForVpc",
    "ec2:DescribeIpamPools",
    "ec2:DescribeRouteTables",
    "elasticloadbalancing:DescribeLoadBalancers",
    "elasticloadbalancing:DescribeLoadBalancerAttributes",
    "elasticloadbalancing:DescribeListeners",
    "elasticloadbalancing:DescribeListenerCertificates",
    "elasticloadbalancing:DescribeSSLPolicies",
    "elasticloadbalancing:DescribeRules",
    "elasticloadbalancing:DescribeTargetGroups",
    "elasticloadbalancing:DescribeTargetGroupAttributes",
    "elasticloadbalancing:DescribeTargetHealth",
    "elasticloadbalancing:DescribeTags",
    "elasticloadbalancing:DescribeTrustStores",
    "elasticloadbalancing:DescribeListenerAttributes",
    "elasticloadbalancing:DescribeCapacityReservation",
)
#: Changes to a load balancer, target group or listener the controller created.
MODIFY_ACTIONS: tuple[str, ...] = (
    "elasticloadbalancing:ModifyLoadBalancerAttributes",
    "elasticloadbalancing:SetIpAddressType",
    "elasticloadbalancing:SetSecurityGroups",
    "elasticloadbalancing:SetSubnets",
    "elasticloadbalancing:DeleteLoadBalancer",
    "elasticloadbalancing:ModifyTargetGroup",
    "elasticloadbalancing:ModifyTargetGroupAttributes",
    "elasticloadbalancing:DeleteTargetGroup",
    "elasticloadbalancing:ModifyListenerAttributes",
)


class _Arns:
    """ARN patterns of this account and Region."""

    def __init__(self, stack: Stack) -> None:
        self._prefix = f"arn:{stack.partition}"
        self._region = stack.region
        self._account = stack.account

    def ec2(self, resource: str) -> str:
        return f"{self._prefix}:ec2:{self._region}:{self._account}:{resource}"

    def elb(self, resource: str) -> str:
        return f"{self._prefix}:elasticloadbalancing:{self._region}:{self._account}:{resource}"

    @property
    def security_groups(self) -> str:
        return self.ec2("security-group/*")

    @property
    def network_load_balancers(self) -> str:
        return self.elb("loadbalancer/net/*/*")

    @property
    def target_groups(self) -> str:
        return self.elb("targetgroup/*/*")

    @property
    def network_listeners(self) -> str:
        return self.elb("listener/net/*/*/*")

    def service_linked_role(self) -> str:
        return (
            f"{self._prefix}:iam::{self._account}:role/aws-service-role/"
            "elasticloadbalancing.amazonaws.com/AWSServiceRoleForElasticLoadBalancing"
        )


def controller_policy_statements(
    stack: Stack, *, cluster_name: str, vpc_id: str
) -> list[iam.PolicyStatement]:
    """The controller's permissions for Network Load Balancers of Services in ``vpc_id``."""
    arns = _Arns(stack)
    vpc_arn = arns.ec2(f"vpc/{vpc_id}")
    owned = {f"aws:ResourceTag/{CLUSTER_TAG}": cluster_name}
    tagged_on_create = {f"aws:RequestTag/{CLUSTER_TAG}": cluster_name}
    no_new_cluster_tag = {"Null": {f"aws:RequestTag/{CLUSTER_TAG}": "true"}}
    return [
        # The ELB service-linked role, created on the first load balancer of an account.
        iam.PolicyStatement(
            actions=["iam:CreateServiceLinkedRole"],
            resources=[arns.service_linked_role()],
            conditions={
                "StringEquals": {"iam:AWSServiceName": "elasticloadbalancing.amazonaws.com"}
            },
        ),
        iam.PolicyStatement(actions=list(DESCRIBE_ACTIONS), resources=["*"]),
        # Security groups of the load balancers: created in this VPC, tagged at creation.
        iam.PolicyStatement(actions=["ec2:CreateSecurityGroup"], resources=[vpc_arn]),
        iam.PolicyStatement(
            actions=["ec2:CreateSecurityGroup"],
            resources=[arns.security_groups],
            conditions={"StringEquals": tagged_on_create},
        ),
        iam.PolicyStatement(
            actions=["ec2:CreateTags"],
            resources=[arns.security_groups],
            conditions={
                "StringEquals": {"ec2:CreateAction": "CreateSecurityGroup", **tagged_on_create}
            },
        ),
        iam.PolicyStatement(
            actions=["ec2:CreateTags", "ec2:DeleteTags"],
            resources=[arns.security_groups],
            conditions={"StringEquals": owned, **no_new_cluster_tag},
        ),
        # Rules in its own groups and, from the backend group, in the cluster security group of
        # the pods' interfaces: only in this cluster's VPC.
        iam.PolicyStatement(
            actions=["ec2:AuthorizeSecurityGroupIngress", "ec2:RevokeSecurityGroupIngress"],
            resources=[arns.security_groups],
            conditions={"ArnEquals": {"ec2:Vpc": vpc_arn}},
        ),
        iam.PolicyStatement(
            actions=["ec2:DeleteSecurityGroup"],
            resources=[arns.security_groups],
            conditions={"StringEquals": owned},
        ),
        # Network Load Balancers and target groups, tagged with the cluster at creation.
        iam.PolicyStatement(
            actions=[
                "elasticloadbalancing:CreateLoadBalancer",
                "elasticloadbalancing:CreateTargetGroup",
            ],
            resources=[arns.network_load_balancers, arns.target_groups],
            conditions={"StringEquals": tagged_on_create},
        ),
        iam.PolicyStatement(
            actions=["elasticloadbalancing:AddTags"],
            resources=[arns.network_load_balancers, arns.target_groups],
            conditions={
                "StringEquals": {
                    "elasticloadbalancing:CreateAction": [
                        "CreateTargetGroup",
                        "CreateLoadBalancer",
                    ],
                    **tagged_on_create,
                }
            },
        ),
        iam.PolicyStatement(
            actions=["elasticloadbalancing:AddTags", "elasticloadbalancing:RemoveTags"],
            resources=[arns.network_load_balancers, arns.target_groups],
            conditions={"StringEquals": owned, **no_new_cluster_tag},
        ),
        iam.PolicyStatement(
            actions=list(MODIFY_ACTIONS),
            resources=[arns.network_load_balancers, arns.target_groups, arns.network_listeners],
            conditions={"StringEquals": owned},
        ),
        # Listeners of network load balancers (no ALB rules) and their targets.
        iam.PolicyStatement(
            actions=["elasticloadbalancing:CreateListener"],
            resources=[arns.network_load_balancers],
        ),
        iam.PolicyStatement(
            actions=[
                "elasticloadbalancing:DeleteListener",
                "elasticloadbalancing:ModifyListener",
                "elasticloadbalancing:AddTags",
                "elasticloadbalancing:RemoveTags",
            ],
            resources=[arns.network_listeners],
        ),
        iam.PolicyStatement(
            actions=[
                "elasticloadbalancing:RegisterTargets",
                "elasticloadbalancing:DeregisterTargets",
            ],
            resources=[arns.target_groups],
        ),
    ]


def _acknowledge_wildcards(role: iam.Role, stack: Stack) -> None:
    """One acknowledgement per wildcard resource, each with its own reason."""
    from fm_constructs.policy.nag_findings import flatten_reference

    arns = _Arns(stack)
    reasons = {
        "*": "Describe and Get calls of EC2 and Elastic Load Balancing have no resource-level "
        "permissions; they are read-only.",
        arns.security_groups: "The controller creates its security groups (only with its "
        "cluster tag), changes rules only in this cluster's VPC (ec2:Vpc) and tags or deletes "
        "only groups carrying its cluster tag; their ids are not known before.",
        arns.network_load_balancers: "Network load balancers of this account and Region that "
        "the controller creates (with its cluster tag) for Services; created, changed and "
        "deleted only with the cluster tag, listeners on them are its own.",
        arns.target_groups: "Target groups the controller creates for Services (with its "
        "cluster tag, required to create, change or delete them); it registers the pods of "
        "the Service in them.",
        arns.network_listeners: "Listeners of the controller's network load balancers in this "
        "account and Region (their ids are not known before).",
    }
    policy = role.node.try_find_child("DefaultPolicy")
    assert policy is not None
    for resource, reason in reasons.items():
        flat = flatten_reference(stack.resolve(resource))
        acknowledge(policy, f"AwsSolutions-IAM5[Resource::{flat}]", reason)


class AwsLoadBalancerController(Construct):
    """The AWS Load Balancer Controller chart on the system nodes of ``cluster``, with its
    IAM role through EKS Pod Identity.

    Use :meth:`enable` (once per cluster, through the cluster's add-on registry). Attributes:
    ``role``, ``pod_identity`` (the ``kube-system/aws-load-balancer-controller`` association),
    ``values`` and ``chart``.
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, cluster: IGpuCluster, vpc: ec2.IVpc
    ) -> None:
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        self.role = pod_identity_role(
            self,
            "Role",
            description="AWS Load Balancer Controller (EKS Pod Identity): network load "
            "balancers of this cluster's Services",
        )
        for statement in controller_policy_statements(
            stack, cluster_name=cluster.cluster_name, vpc_id=vpc.vpc_id
        ):
            self.role.add_to_policy(statement)
        _acknowledge_wildcards(self.role, stack)
        self.values = charts.aws_load_balancer_controller_values(
            cluster_name=cluster.cluster_name, region=stack.region, vpc_id=vpc.vpc_id
        )
        self.pod_identity, self.chart = chart_with_identity(
            self,
            cluster,
            charts.AWS_LOAD_BALANCER_CONTROLLER,
            self.values,
            service_account=charts.AWS_LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT,
            role=self.role,
        )

    @classmethod
    def enable(cls, cluster: IGpuCluster, vpc: ec2.IVpc) -> AwsLoadBalancerController:
        """The cluster's controller, installed on the first call (later calls return it)."""
        return cluster.addon_registry.install(
            ADDON_ID,
            lambda scope, construct_id: cls(scope, construct_id, cluster=cluster, vpc=vpc),
        )
