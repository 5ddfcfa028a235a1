"""The security group EFA needs: all traffic in and out to and from itself.

EFA's OS-bypass traffic only flows between interfaces whose security group allows all
inbound and outbound traffic to and from the group itself (EC2 user guide, "Prepare an
EFA-enabled security group"); HyperPod refuses to create nodes ("EFA health checks did not run
successfully") when a group lacks these rules. The self egress rule is written explicitly, not
left implied by an allow-all egress, so it survives when a user tightens outbound traffic.
"""

from __future__ import annotations

import jsii
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.policy.compliance import acknowledge_compliance


@jsii.implements(ec2.IConnectable)
class EfaSecurityGroup(Construct):
    """A security group for EFA interfaces, attached to every interface of a GPU node.

    ``allow_all_outbound`` (default True) adds an egress rule to 0.0.0.0/0: nodes pull images
    from ECR, read S3 and talk to the EKS/SageMaker endpoints. Set it to False when all of that
    goes through VPC endpoints and you add your own egress rules; the self egress rule EFA
    needs stays either way.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        description: str | None = None,
        allow_all_outbound: bool = True,
    ) -> None:
        super().__init__(scope, construct_id)
        self.security_group = ec2.SecurityGroup(
            self,
            "Resource",
            vpc=vpc,
            description=description
            or "EFA: all traffic to and from members of this group (OS-bypass)",
            allow_all_outbound=allow_all_outbound,
        )
        # Both self rules are standalone L1 resources: inline they would make the group
        # reference itself (a dependency cycle), and the L2 refuses (or, with
        # allow_all_outbound, silently skips) an all-traffic egress rule. This way the self
        # egress rule is present whatever the outbound policy.
        self.self_ingress = ec2.CfnSecurityGroupIngress(
            self,
            "SelfIngress",
            group_id=self.security_group.security_group_id,
            ip_protocol="-1",
            source_security_group_id=self.security_group.security_group_id,
            description="EFA: all traffic from members of this group",
        )
        acknowledge_compliance(
            self.self_ingress,
            "EC2RestrictedCommonPorts",
            "The rule admits only members of this same security group (EFA's OS-bypass "
            "traffic needs every protocol between them); no address range is opened.",
        )
        self.self_egress = ec2.CfnSecurityGroupEgress(
            self,
            "SelfEgress",
            group_id=self.security_group.security_group_id,
            ip_protocol="-1",
            destination_security_group_id=self.security_group.security_group_id,
            description="EFA: all traffic to members of this group",
        )

    @staticmethod
    def from_efa_security_group_attributes(
        scope: Construct, construct_id: str, *, security_group_id: str, mutable: bool = False
    ) -> ec2.ISecurityGroup:
        """Use an existing group that already carries the EFA self rules (all traffic in and
        out among its members); node groups and HyperPod clusters take it as
        ``efa_security_group``. Immutable by default, so this app adds no rules to it."""
        return ec2.SecurityGroup.from_security_group_id(
            scope, construct_id, security_group_id, mutable=mutable
        )

    @property
    def security_group_id(self) -> str:
        return self.security_group.security_group_id

    @property
    def connections(self) -> ec2.Connections:
        """Connections of the group, for ``allow_from``/``allow_to`` between constructs."""
        return self.security_group.connections
