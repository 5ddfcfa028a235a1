"""An AWS Parallel Computing Service cluster: managed Slurm controller and accounting.

PCS runs slurmctld and slurmdbd in a service account and reaches the nodes through a network
interface in one subnet of this VPC (``AWS::PCS::Cluster`` ``Networking.SubnetIds``: one
subnet). Nodes and controller share :attr:`PcsCluster.security_group`, which allows all
traffic within itself (Slurm's controller, node and accounting ports, srun's ephemeral ports),
as the PCS user guide's cluster security group does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

import jsii
from aws_cdk import Names, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_pcs as pcs
from constructs import Construct

from fm_constructs import pins
from fm_constructs.errors import Problems
from fm_constructs.planning.pcs_limits import (
    CLUSTER_NAME_MAX,
    PcsClusterSize,
    cluster_size_for,
)
from fm_constructs.policy.compliance import acknowledge_compliance
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import pcs as pcs_rules

#: The slurm.conf settings PCS takes at cluster level (API reference, SlurmCustomSetting).
CLUSTER_SLURM_SETTINGS = pcs_rules.CLUSTER_SLURM_SETTINGS
#: Seconds an idle dynamic node stays up before PCS scales it down.
SCALE_DOWN_IDLE_SECONDS = 600


@runtime_checkable
class IPcsCluster(Protocol):
    """What node groups and queues need from a PCS cluster, created here or imported."""

    @property
    def cluster_id(self) -> str: ...

    @property
    def cluster_arn(self) -> str: ...

    @property
    def security_group(self) -> ec2.ISecurityGroup: ...

    @property
    def connections(self) -> ec2.Connections: ...


@jsii.implements(ec2.IConnectable)
class PcsCluster(Construct):
    """A PCS cluster on the pinned Slurm version, sized for ``node_count``, accounting on.

    - ``node_count``: every instance its node groups may run at once (login nodes included);
      picks the smallest size tier that holds them (``size`` overrides; it is create-only).
    - ``subnet``: where the controller's interface goes (the nodes' subnet).
    - ``accounting``: Slurm accounting managed by PCS (``sacct``, limits; Slurm 24.11+).
    - ``security_group``: bring your own (it must allow all traffic within itself); created
      when absent.
    - ``slurm_settings``: slurm.conf settings PCS takes at cluster level
      (:data:`CLUSTER_SLURM_SETTINGS`), such as the absolute path of a ``Prolog`` every node
      has (``PcsAcceleratedWorkload`` passes HyperPod's job hooks,
      :func:`~fm_constructs.orchestration.pcs.user_data.job_hook_settings`).

    Children: ``SecurityGroup`` (when created), ``Resource`` (``AWS::PCS::Cluster``).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.PCS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        node_count: int,
        size: PcsClusterSize | None = None,
        slurm_version: str | None = None,
        accounting: bool = True,
        scale_down_idle_seconds: int = SCALE_DOWN_IDLE_SECONDS,
        security_group: ec2.ISecurityGroup | None = None,
        cluster_name: str | None = None,
        slurm_settings: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        problems.adopt(
            pcs_rules.pcs_cluster(
                slurm_settings=list(slurm_settings or {}),
                node_count=node_count,
                size=size,
                cluster_name=cluster_name,
                scale_down_idle_seconds=scale_down_idle_seconds,
            )
        )
        chosen = size
        if not Token.is_unresolved(node_count):
            chosen = size or cluster_size_for(node_count)
        problems.raise_if_any()
        self.size: PcsClusterSize = chosen or PcsClusterSize.MEDIUM
        #: The cluster's name (metrics carry it as label ``cluster``).
        self.cluster_name: str = cluster_name or Names.unique_resource_name(
            self, max_length=CLUSTER_NAME_MAX, separator="-", allowed_special_characters="-"
        )
        self.slurm_version = slurm_version or pins.pcs().slurm_version
        if security_group is None:
            created = ec2.SecurityGroup(
                self,
                "SecurityGroup",
                vpc=vpc,
                description="AWS PCS controller and nodes: all traffic within the group (Slurm)",
                allow_all_outbound=True,
            )
            # A standalone rule resource, so it can carry its own acknowledgement.
            self_ingress = ec2.CfnSecurityGroupIngress(
                created,
                "SelfIngress",
                group_id=created.security_group_id,
                ip_protocol="-1",
                source_security_group_id=created.security_group_id,
                description="Slurm within the PCS cluster",
            )
            acknowledge_compliance(
                self_ingress,
                "EC2RestrictedCommonPorts",
                "The rule admits only members of this same security group (the PCS controller "
                "and the cluster's nodes, which Slurm connects on dynamic ports); no address "
                "range is opened.",
            )
            security_group = created
        self.security_group: ec2.ISecurityGroup = security_group
        self._connections = ec2.Connections(security_groups=[self.security_group])
        self.resource = pcs.CfnCluster(
            self,
            "Resource",
            name=self.cluster_name,
            size=self.size.value,
            scheduler=pcs.CfnCluster.SchedulerProperty(type="SLURM", version=self.slurm_version),
            networking=pcs.CfnCluster.NetworkingProperty(
                subnet_ids=[subnet.subnet_id],
                security_group_ids=[self.security_group.security_group_id],
            ),
            slurm_configuration=pcs.CfnCluster.SlurmConfigurationProperty(
                accounting=pcs.CfnCluster.AccountingProperty(
                    mode="STANDARD" if accounting else "NONE"
                ),
                scale_down_idle_time_in_seconds=scale_down_idle_seconds,
                slurm_custom_settings=[
                    pcs.CfnCluster.SlurmCustomSettingProperty(
                        parameter_name=name, parameter_value=value
                    )
                    for name, value in sorted((slurm_settings or {}).items())
                ]
                or None,
            ),
        )

    @property
    def cluster_id(self) -> str:
        return self.resource.attr_id

    @property
    def cluster_arn(self) -> str:
        return self.resource.attr_arn

    @property
    def connections(self) -> ec2.Connections:
        return self._connections

    @staticmethod
    def from_cluster_attributes(
        scope: Construct,
        construct_id: str,
        *,
        cluster_id: str,
        cluster_arn: str,
        security_group_id: str,
    ) -> IPcsCluster:
        """A PCS cluster created elsewhere: its id (``pcs_...``), ARN and the security group
        its nodes share with the controller."""
        return _ImportedPcsCluster(scope, construct_id, cluster_id, cluster_arn, security_group_id)


@jsii.implements(ec2.IConnectable)
class _ImportedPcsCluster(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        cluster_id: str,
        cluster_arn: str,
        security_group_id: str,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems(
            context=f"PcsCluster.from_cluster_attributes {self.node.path}", code=codes.PCS
        )
        problems.adopt(
            pcs_rules.imported_id("cluster_id", cluster_id, "must be the cluster's id (pcs_...)")
        )
        problems.raise_if_any()
        self.cluster_id = cluster_id
        self.cluster_arn = cluster_arn
        self.security_group = ec2.SecurityGroup.from_security_group_id(
            self, "SecurityGroup", security_group_id, mutable=False
        )
        self.connections = ec2.Connections(security_groups=[self.security_group])
