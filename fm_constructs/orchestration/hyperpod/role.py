"""The execution role of HyperPod instance groups, with least privilege.

What the nodes need, and nothing more:

- ``AmazonSageMakerClusterInstanceRolePolicy`` (AWS managed): the cluster agent, CloudWatch
  logs and metrics of ``/aws/sagemaker/Clusters``, and reads of ``sagemaker-*`` buckets only;
- the network-interface actions HyperPod uses to attach the instances to the VPC, limited to
  this VPC, subnet and security groups wherever IAM has resource-level permissions;
- ``fsx:DescribeFileSystems`` (Lustre over EFA looks up the file system's EFA settings);
- read of exactly the lifecycle-script prefix (granted by
  :class:`~fm_constructs.orchestration.hyperpod.lifecycle.LifecycleScripts`, because that
  bucket is not named ``sagemaker-*``);
- remote write to one Prometheus workspace (granted by the cluster);
- EKS only: ECR pulls and ``eks-auth:AssumeRoleForPodIdentity`` on the one EKS cluster, and
  the VPC CNI policy only where the cluster's ``aws-node`` takes the node's credentials. On a
  cluster whose vpc-cni add-on this app manages, ``aws-node`` has an EKS Pod Identity role of
  its own on every node, HyperPod's included, and the AWS SDK uses the container credentials
  endpoint alone once Pod Identity sets it (aws-sdk-go-v2 ``config/resolve_credentials.go``:
  the instance role is the last case, not a fallback), so the policy on this role would serve
  only the other processes of the node.

No access to the data bucket: nodes read and write data through the file system, whose data
repository association moves it to and from S3. The role is every node's instance role, so
any process of any cluster user can use its credentials; a grant on the data bucket would
open all of it to every user, past the file system's permissions. A deployment that wants
jobs to read ``s3://`` directly grants it itself (``bucket.grant_read(cluster.role, prefix)``).
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.orchestration.node_role import CNI_POLICY
from fm_constructs.policy import acknowledge
from fm_constructs.policy.nag_findings import flatten_reference

INSTANCE_ROLE_POLICY = "AmazonSageMakerClusterInstanceRolePolicy"
ECR_READ_ONLY_POLICY = "AmazonEC2ContainerRegistryReadOnly"

#: Describe calls HyperPod makes while attaching instances to the VPC; EC2 Describe* actions
#: have no resource-level permissions.
DESCRIBE_ACTIONS: tuple[str, ...] = (
    "ec2:DescribeDhcpOptions",
    "ec2:DescribeNetworkInterfaces",
    "ec2:DescribeSecurityGroups",
    "ec2:DescribeSubnets",
    "ec2:DescribeVpcs",
)
#: Actions on network interfaces HyperPod creates in the cluster VPC.
INTERFACE_ACTIONS: tuple[str, ...] = (
    "ec2:CreateNetworkInterfacePermission",
    "ec2:DeleteNetworkInterface",
    "ec2:DeleteNetworkInterfacePermission",
    "ec2:DetachNetworkInterface",
)


class HyperPodExecutionRole(Construct):
    """The IAM role every instance group of one HyperPod cluster assumes.

    Children: ``Resource`` (the role). Add grants with the usual ``grant_*`` methods of other
    constructs (``role`` is an ``iam.IGrantable``).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        security_groups: Sequence[ec2.ISecurityGroup],
        eks_cluster_arn: str | None = None,
        vpc_cni_policy: bool = True,
    ) -> None:
        """``vpc_cni_policy``: attach ``AmazonEKS_CNI_Policy`` (EKS only), for a cluster
        whose ``aws-node`` has no role of its own; False where it has one."""
        super().__init__(scope, construct_id)
        stack = Stack.of(self)
        managed = [iam.ManagedPolicy.from_aws_managed_policy_name(INSTANCE_ROLE_POLICY)]
        self.vpc_cni_policy = eks_cluster_arn is not None and vpc_cni_policy
        if self.vpc_cni_policy:
            managed.append(iam.ManagedPolicy.from_aws_managed_policy_name(CNI_POLICY))
        if eks_cluster_arn is not None:
            managed.append(iam.ManagedPolicy.from_aws_managed_policy_name(ECR_READ_ONLY_POLICY))
        self.role = iam.Role(
            self,
            "Resource",
            assumed_by=iam.ServicePrincipal("sagemaker.amazonaws.com"),
            description="SageMaker HyperPod instance groups (nodes) of one cluster",
            managed_policies=managed,
        )
        interfaces = stack.format_arn(
            service="ec2", resource="network-interface", resource_name="*"
        )
        instances = stack.format_arn(
            service="ec2", account="*", resource="instance", resource_name="*"
        )
        vpc_arn = stack.format_arn(service="ec2", resource="vpc", resource_name=vpc.vpc_id)
        subnet_arn = stack.format_arn(
            service="ec2", resource="subnet", resource_name=subnet.subnet_id
        )
        group_arns = [
            stack.format_arn(
                service="ec2", resource="security-group", resource_name=group.security_group_id
            )
            for group in security_groups
        ]
        statements = [
            iam.PolicyStatement(
                sid="CreateInterfacesInClusterSubnet",
                actions=["ec2:CreateNetworkInterface"],
                resources=[interfaces, subnet_arn, *group_arns],
            ),
            iam.PolicyStatement(
                sid="ManageInterfacesInClusterVpc",
                actions=list(INTERFACE_ACTIONS),
                resources=[interfaces],
                conditions={"ArnEquals": {"ec2:Vpc": vpc_arn}},
            ),
            # IAM evaluates ec2:DetachNetworkInterface on the instance as well as on the
            # interface (resource types [instance, network-interface] in the service
            # authorization reference); the interface side stays limited to the cluster VPC
            # above, the instance side is any instance (HyperPod instances live in SageMaker's
            # accounts, so neither their ids nor their account are known).
            iam.PolicyStatement(
                sid="DetachInterfacesFromInstances",
                actions=["ec2:DetachNetworkInterface"],
                resources=[instances],
            ),
            # As HyperPod's IAM guide grants it: ec2:CreateTags on network interfaces, without
            # an ec2:CreateAction condition (which would deny tagging an existing interface).
            iam.PolicyStatement(
                sid="TagInterfaces", actions=["ec2:CreateTags"], resources=[interfaces]
            ),
            iam.PolicyStatement(
                sid="DescribeNetwork", actions=list(DESCRIBE_ACTIONS), resources=["*"]
            ),
            iam.PolicyStatement(
                sid="DescribeFileSystems", actions=["fsx:DescribeFileSystems"], resources=["*"]
            ),
        ]
        if eks_cluster_arn is not None:
            statements.append(
                iam.PolicyStatement(
                    sid="PodIdentity",
                    actions=["eks-auth:AssumeRoleForPodIdentity"],
                    resources=[eks_cluster_arn],
                )
            )
        self.policy = iam.Policy(self, "Policy", statements=statements)
        self.policy.attach_to_role(self.role)
        self._acknowledge(stack, interfaces, instances, eks=eks_cluster_arn is not None)

    @property
    def role_arn(self) -> str:
        return self.role.role_arn

    def allow_image_pull(self, repository_arn: str) -> None:
        """Let the nodes pull images of one ECR repository (the EFA exporter on Slurm nodes;
        EKS nodes already hold the ECR read-only policy). ``ecr:GetAuthorizationToken`` has
        no resource-level permissions."""
        self.policy.add_statements(
            iam.PolicyStatement(
                sid="PullExporterImages",
                actions=["ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"],
                resources=[repository_arn],
            ),
            iam.PolicyStatement(
                sid="EcrLogin", actions=["ecr:GetAuthorizationToken"], resources=["*"]
            ),
        )

    def _acknowledge(self, stack: Stack, interfaces: str, instances: str, *, eks: bool) -> None:
        flat_interfaces = flatten_reference(stack.resolve(interfaces))
        acknowledge(
            self.policy,
            f"AwsSolutions-IAM5[Resource::{flatten_reference(stack.resolve(instances))}]",
            "IAM also evaluates ec2:DetachNetworkInterface on the instance; HyperPod instances "
            "run in SageMaker's accounts, so their ids and account are unknown. Only this one "
            "action is allowed on instances, and the interface side stays limited to the "
            "cluster VPC.",
        )
        acknowledge(
            self.policy,
            f"AwsSolutions-IAM5[Resource::{flat_interfaces}]",
            "HyperPod creates the node network interfaces itself, so their ids are unknown "
            "in advance; creation is limited to the cluster subnet and security groups, other "
            "actions to interfaces in the cluster VPC (ec2:Vpc condition), tagging to network "
            "interfaces.",
        )
        acknowledge(
            self.policy,
            "AwsSolutions-IAM5[Resource::*]",
            "EC2 Describe* actions, fsx:DescribeFileSystems and ecr:GetAuthorizationToken have "
            "no resource-level permissions; they only read descriptions or issue a registry "
            "login token (image pulls stay limited to one repository).",
        )
        partition = "arn:<AWS::Partition>:iam::aws:policy/"
        acknowledge(
            self.role,
            f"AwsSolutions-IAM4[Policy::{partition}{INSTANCE_ROLE_POLICY}]",
            "AmazonSageMakerClusterInstanceRolePolicy is the policy SageMaker HyperPod "
            "requires on instance-group roles (cluster agent, health reporting, logs).",
        )
        if self.vpc_cni_policy:
            acknowledge(
                self.role,
                f"AwsSolutions-IAM4[Policy::{partition}{CNI_POLICY}]",
                "The cluster's VPC CNI (aws-node) has no role of its own here, so on HyperPod "
                "nodes it assigns pod IPs with the node's AWS-managed CNI policy.",
            )
        if eks:
            acknowledge(
                self.role,
                f"AwsSolutions-IAM4[Policy::{partition}{ECR_READ_ONLY_POLICY}]",
                "HyperPod nodes in EKS pull system and add-on images from ECR with the "
                "AWS-managed read-only policy EKS documents for node roles.",
            )
