"""A VPC shaped for GPU clusters: few, large private subnets in named zones, flow logs on."""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import RemovalPolicy, Stack, Tags, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_logs as logs
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.planning.vpc_layout import MAX_ZONES as MAX_ZONES
from fm_constructs.planning.vpc_layout import PRIVATE_CLUSTER_ENDPOINT_NAMES, subnet_prefixes
from fm_constructs.policy import encrypted_log_group
from fm_constructs.policy.compliance import acknowledge_compliance
from fm_constructs.rules import constructs as codes
from fm_constructs.rules.vpc import vpc_arguments

#: Interface endpoints a private cluster's nodes use constantly: image pulls (ECR), node and
#: pod identity (STS, EKS Auth), the EKS and EC2 APIs, logs, metrics remote write, HyperPod,
#: and Session Manager instead of SSH. They keep that traffic inside the VPC, off the NAT
#: gateways. (S3 has a gateway endpoint.)
PRIVATE_CLUSTER_ENDPOINTS: dict[str, ec2.InterfaceVpcEndpointAwsService] = {
    "EcrApi": ec2.InterfaceVpcEndpointAwsService.ECR,
    "EcrDocker": ec2.InterfaceVpcEndpointAwsService.ECR_DOCKER,
    "Sts": ec2.InterfaceVpcEndpointAwsService.STS,
    "Eks": ec2.InterfaceVpcEndpointAwsService.EKS,
    "EksAuth": ec2.InterfaceVpcEndpointAwsService.EKS_AUTH,
    "Ec2": ec2.InterfaceVpcEndpointAwsService.EC2,
    "Logs": ec2.InterfaceVpcEndpointAwsService.CLOUDWATCH_LOGS,
    "PrometheusWorkspaces": ec2.InterfaceVpcEndpointAwsService.PROMETHEUS_WORKSPACES,
    "SageMakerApi": ec2.InterfaceVpcEndpointAwsService.SAGEMAKER_API,
    "Ssm": ec2.InterfaceVpcEndpointAwsService.SSM,
    "SsmMessages": ec2.InterfaceVpcEndpointAwsService.SSM_MESSAGES,
    "Ec2Messages": ec2.InterfaceVpcEndpointAwsService.EC2_MESSAGES,
}
if tuple(PRIVATE_CLUSTER_ENDPOINTS) != PRIVATE_CLUSTER_ENDPOINT_NAMES:
    raise AssertionError("PRIVATE_CLUSTER_ENDPOINTS must match vpc_layout's names")


class GpuClusterVpc(Construct):
    """VPC for accelerated clusters.

    One public and one private subnet per listed zone. ``availability_zones`` are names, not
    looked up, so synthesis needs no AWS account; the first GPU zone of a deployment must be one
    of them. An S3 gateway endpoint keeps dataset and checkpoint traffic off the NAT gateways;
    ``interface_endpoints`` adds the private-cluster endpoints (PRIVATE_CLUSTER_ENDPOINTS).
    ``pod_cidr`` (with ``pod_subnet_zone``) adds the secondary block and pod subnet of custom
    networking. ``node_subnet_cidrs`` (with ``node_subnet_zone``, the GPU zone) adds, per /16,
    a secondary block and one node subnet spanning it, routed like the zone's private subnet:
    room for node groups that outgrow it (:attr:`node_subnets`, in the order given; the
    profile's IP budget picks the blocks, :func:`~fm_constructs.planning.vpc_layout.
    node_cidr_blocks`).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.VPC

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        availability_zones: Sequence[str],
        cidr: str = "10.0.0.0/16",
        nat_gateways_per_az: bool = True,
        flow_log_retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
        interface_endpoints: bool = True,
        pod_cidr: str | None = None,
        pod_subnet_zone: str | None = None,
        node_subnet_cidrs: Sequence[str] = (),
        node_subnet_zone: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self._private_subnet_by_zone: dict[str, ec2.ISubnet] = {}
        region = Stack.of(self).region
        zones = list(availability_zones)
        node_subnet_cidrs = list(node_subnet_cidrs)
        findings = vpc_arguments(
            availability_zones,
            cidr,
            region=None if Token.is_unresolved(region) else region,
            pod_cidr=pod_cidr,
            pod_subnet_zone=pod_subnet_zone,
            node_subnet_cidrs=node_subnet_cidrs,
            node_subnet_zone=node_subnet_zone,
        )
        problems = Problems.of(self)
        problems.add_findings(findings)
        problems.raise_if_any()

        private_mask, public_mask = subnet_prefixes(cidr)
        self.private_subnet_prefix = private_mask
        self.vpc = ec2.Vpc(
            self,
            "Resource",
            ip_addresses=ec2.IpAddresses.cidr(cidr),
            availability_zones=zones,
            nat_gateways=len(zones) if nat_gateways_per_az else 1,
            restrict_default_security_group=True,
            subnet_configuration=[
                ec2.SubnetConfiguration(
                    name="Public", subnet_type=ec2.SubnetType.PUBLIC, cidr_mask=public_mask
                ),
                ec2.SubnetConfiguration(
                    name="Private",
                    subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS,
                    cidr_mask=private_mask,
                ),
            ],
            gateway_endpoints={
                "S3": ec2.GatewayVpcEndpointOptions(service=ec2.GatewayVpcEndpointAwsService.S3)
            },
        )
        # Subnet discovery for Kubernetes load balancers (internal NLBs for model endpoints).
        for subnet in self.vpc.private_subnets:
            Tags.of(subnet).add("kubernetes.io/role/internal-elb", "1")
        for subnet in self.vpc.public_subnets:
            Tags.of(subnet).add("kubernetes.io/role/elb", "1")
            acknowledge_compliance(
                subnet,
                "VPCSubnetAutoAssignPublicIpDisabled",
                "Public subnets hold only the NAT gateways and internet-facing load balancers "
                "(when a model endpoint is made internet-facing); no instance is launched in "
                "them.",
            )
            acknowledge_compliance(
                subnet,
                "VPCNoUnrestrictedRouteToIGW",
                "The route to the internet gateway is what makes these the NAT gateways' "
                "public subnets; the nodes' private subnets route through NAT only.",
            )
        self.interface_endpoints: dict[str, ec2.InterfaceVpcEndpoint] = {}
        if interface_endpoints:
            # One group for every endpoint: HTTPS from the VPC's own (literal) CIDR.
            endpoint_group = ec2.SecurityGroup(
                self,
                "EndpointSecurityGroup",
                vpc=self.vpc,
                description="HTTPS to the VPC interface endpoints from inside the VPC",
                allow_all_outbound=False,
            )
            endpoint_group.add_ingress_rule(
                ec2.Peer.ipv4(cidr), ec2.Port.tcp(443), "HTTPS from the VPC"
            )
            if pod_cidr is not None:
                endpoint_group.add_ingress_rule(
                    ec2.Peer.ipv4(pod_cidr), ec2.Port.tcp(443), "HTTPS from pods"
                )
            for name, service in PRIVATE_CLUSTER_ENDPOINTS.items():
                self.interface_endpoints[name] = self.vpc.add_interface_endpoint(
                    f"{name}Endpoint",
                    service=service,
                    private_dns_enabled=True,
                    open=False,
                    security_groups=[endpoint_group],
                    subnets=ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
                )
            for block in node_subnet_cidrs:
                endpoint_group.add_ingress_rule(
                    ec2.Peer.ipv4(block), ec2.Port.tcp(443), "HTTPS from the node subnets"
                )
        self.pod_subnet: ec2.CfnSubnet | None = None
        if pod_cidr is not None and pod_subnet_zone is not None:
            self.pod_subnet = self._pod_subnet(pod_cidr, pod_subnet_zone)
        #: Node subnets of the GPU zone beyond its private subnet, one per secondary block.
        self.node_subnets: list[ec2.ISubnet] = [
            self._node_subnet(index, block, node_subnet_zone)
            for index, block in enumerate(node_subnet_cidrs, start=1)
            if node_subnet_zone is not None
        ]
        flow_log_group = encrypted_log_group(
            self, "FlowLogs", retention=flow_log_retention, removal_policy=RemovalPolicy.RETAIN
        )
        flow_log = self.vpc.add_flow_log(
            "FlowLog",
            destination=ec2.FlowLogDestination.to_cloud_watch_logs(flow_log_group),
            traffic_type=ec2.FlowLogTrafficType.ALL,
        )
        # The delivery role aws-cdk-lib makes, assumable by the service only for this
        # account's flow logs (VPC user guide, "IAM role for publishing flow logs to
        # CloudWatch Logs": the confused-deputy keys). Same role, same flow log.
        stack = Stack.of(self)
        role = flow_log.iam_role.node.default_child if flow_log.iam_role else None
        if isinstance(role, iam.CfnRole):
            role.add_property_override(
                "AssumeRolePolicyDocument.Statement.0.Condition",
                {
                    "StringEquals": {"aws:SourceAccount": stack.account},
                    "ArnLike": {
                        "aws:SourceArn": stack.format_arn(
                            service="ec2", resource="vpc-flow-log", resource_name="*"
                        )
                    },
                },
            )

    def _pod_subnet(self, pod_cidr: str, zone: str) -> ec2.CfnSubnet:
        """The secondary CIDR block and the GPU zone's pod subnet spanning it, routed like
        that zone's private subnet (NAT gateway, S3 gateway endpoint)."""
        return self._secondary_subnet("PodCidrBlock", "PodSubnet", pod_cidr, zone)

    def _node_subnet(self, index: int, block: str, zone: str) -> ec2.ISubnet:
        """Secondary CIDR block ``block`` and one subnet spanning it in ``zone`` for GPU node
        groups, routed like that zone's private subnet (NAT gateway, S3 gateway endpoint)."""
        subnet = self._secondary_subnet(f"NodeCidrBlock{index}", f"NodeSubnet{index}", block, zone)
        route_table_id = self.private_subnet(zone).route_table.route_table_id
        return ec2.Subnet.from_subnet_attributes(
            self,
            f"NodeSubnet{index}Ref",
            subnet_id=subnet.ref,
            availability_zone=zone,
            ipv4_cidr_block=block,
            route_table_id=route_table_id,
        )

    def _secondary_subnet(
        self, block_id: str, subnet_id: str, cidr_block: str, zone: str
    ) -> ec2.CfnSubnet:
        """Secondary CIDR block ``cidr_block`` (``block_id``) and the subnet ``subnet_id``
        spanning it in ``zone``, routed through that zone's private route table."""
        block = ec2.CfnVPCCidrBlock(self, block_id, vpc_id=self.vpc.vpc_id, cidr_block=cidr_block)
        subnet = ec2.CfnSubnet(
            self,
            subnet_id,
            vpc_id=self.vpc.vpc_id,
            cidr_block=cidr_block,
            availability_zone=zone,
            map_public_ip_on_launch=False,
            tags=[{"key": "Name", "value": f"{self.node.path}/{subnet_id}"}],
        )
        subnet.node.add_dependency(block)
        ec2.CfnSubnetRouteTableAssociation(
            self,
            f"{subnet_id}RouteTable",
            subnet_id=subnet.ref,
            route_table_id=self.private_subnet(zone).route_table.route_table_id,
        )
        return subnet

    def eni_config_subnets(self) -> dict[str, str]:
        """Zone -> subnet id of the ENIConfig of every zone under custom networking: the pod
        subnet in its zone, each other zone's private subnet elsewhere (those zones hold only
        system nodes, whose pods fit their subnet)."""
        out = {subnet.availability_zone: subnet.subnet_id for subnet in self.vpc.private_subnets}
        if self.pod_subnet is not None:
            out[str(self.pod_subnet.availability_zone)] = self.pod_subnet.ref
        return out

    def private_subnet(self, availability_zone: str) -> ec2.ISubnet:
        """The private subnet in ``availability_zone`` (where GPU nodes and FSx go). The VPC's
        private subnets are fixed when it is created, so each zone's is looked up once (each
        subnet's zone is a read from the CDK's JavaScript, and the GPU zone's subnet is asked
        for by every part that places something there)."""
        known = self._private_subnet_by_zone
        if availability_zone in known:
            return known[availability_zone]
        for subnet in self.vpc.private_subnets:
            zone = subnet.availability_zone
            if not Token.is_unresolved(zone) and zone == availability_zone:
                known[availability_zone] = subnet
                return subnet
        zones = [s.availability_zone for s in self.vpc.private_subnets]
        problems = Problems.of(self)
        problems.add("availability_zone", availability_zone, f"must be one of {zones}")
        problems.raise_if_any()
        raise AssertionError("unreachable")
