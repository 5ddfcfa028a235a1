"""AWS PCS compute node groups: the accelerated training nodes and the login node.

A node group launches from a launch template of ours (``CustomLaunchTemplate``) and an AMI
(``AmiId``); PCS derives its own template from ours and adds its registration steps to the
user data (PCS user guide, "Using Amazon EC2 launch templates with AWS PCS"). Both kinds run
the same user data (:mod:`fm_constructs.orchestration.pcs.user_data`): FSx for Lustre at
``/fsx``, containers on the instance NVMe.

- :meth:`PcsComputeNodeGroup.accelerated`: the library's :class:`GpuLaunchTemplate` (the same
  one EKS node groups use): every EFA card of the type wired from the catalog, the EFA
  security group on every interface and the cluster's on the primary one (security groups
  go on the interfaces, never at template level, as PCS requires with network interfaces),
  the capacity's reservation target and market type, a cluster placement group where the
  capacity allows one. Purchase option ``CAPACITY_BLOCK`` for a Capacity Block (PCS requires
  the block's reservation id and market type in the template, and at most the block's size
  as the group's maximum), ``ONDEMAND`` otherwise (an ODCR is targeted by the template).
- :meth:`PcsComputeNodeGroup.login`: one On-Demand instance of a general-purpose type with
  the cluster's security group, for ``sbatch`` and ``srun``; reached through Session Manager.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from aws_cdk import Fn
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_pcs as pcs
from constructs import Construct

from fm_constructs.catalog import get_instance_type
from fm_constructs.catalog.lookup import find_instance_type
from fm_constructs.compute import CapacitySource
from fm_constructs.compute.launch_template import GpuLaunchTemplate
from fm_constructs.compute.node_template import node_launch_template
from fm_constructs.compute.root_device import UBUNTU_ROOT_DEVICE
from fm_constructs.compute.user_data import UserDataMode
from fm_constructs.domain.defaults import ROOT_VOLUME_SIZE_GIB
from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.errors import Problems
from fm_constructs.network.efa_security_group import EfaSecurityGroup
from fm_constructs.orchestration.pcs.cluster import IPcsCluster
from fm_constructs.orchestration.pcs.role import IPcsInstanceProfile
from fm_constructs.orchestration.pcs.user_data import pcs_user_data
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.pcs_limits import LOGIN_INSTANCE_TYPE
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import pcs as pcs_rules

LOGIN_ROOT_VOLUME_GIB = 200


@runtime_checkable
class IPcsComputeNodeGroup(Protocol):
    """What a queue needs from a node group, created here or imported."""

    @property
    def compute_node_group_id(self) -> str: ...


def purchase_option(capacity: CapacitySource) -> str:
    """PCS's ``PurchaseOption`` for ``capacity``: ``CAPACITY_BLOCK`` for a Capacity Block,
    ``ONDEMAND`` for On-Demand and ODCRs (the launch template targets the reservation)."""
    return "CAPACITY_BLOCK" if capacity.kind is CapacityKind.CAPACITY_BLOCK else "ONDEMAND"


class PcsComputeNodeGroup(Construct):
    """One PCS compute node group; build it with :meth:`accelerated` or :meth:`login`.

    Attributes: :attr:`resource` (``AWS::PCS::ComputeNodeGroup``), :attr:`launch_template_id`,
    :attr:`compute_node_group_id`, :attr:`instance_type`, :attr:`max_count`,
    :attr:`efa_layout` (None on the login group).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.PCS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IPcsCluster,
        role: str,
        group_name: str,
        instance_type: str,
        min_count: int,
        max_count: int,
        subnet: ec2.ISubnet,
        instance_profile: IPcsInstanceProfile,
        ami_id: str,
        scripts_uri: str,
        capacity: CapacitySource | None = None,
        efa_layout: EfaLayout | None = None,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        root_volume_size_gib: int = ROOT_VOLUME_SIZE_GIB,
    ) -> None:
        super().__init__(scope, construct_id)
        capacity = capacity or CapacitySource.on_demand()
        problems = Problems.of(self)
        problems.adopt(
            pcs_rules.compute_node_group(
                group_name,
                (min_count, max_count),
                ami_id,
                capacity_kind=capacity.kind,
                training_plan_arn=capacity.training_plan_arn,
                capacity_instance_count=capacity.instance_count,
            )
        )
        problems.raise_if_any()
        self.instance_type = instance_type
        self.max_count = max_count
        self.efa_layout = efa_layout
        groups = [cluster.security_group, *security_groups]
        spec = find_instance_type(instance_type)
        user_data = pcs_user_data(
            role,
            group_name,
            scripts_uri,
            nvme_disks=spec.nvme.count if spec is not None and spec.nvme else 0,
        )
        self.launch_template: GpuLaunchTemplate | None = None
        if efa_layout is not None:
            template = GpuLaunchTemplate(
                self,
                "LaunchTemplate",
                instance_type=instance_type,
                efa_security_group=efa_security_group,
                security_groups=groups,
                efa_layout=efa_layout,
                capacity=capacity,
                subnet_availability_zone=subnet.availability_zone,
                node_count=max_count,
                root_volume_size_gib=root_volume_size_gib,
                root_volume_device_name=UBUNTU_ROOT_DEVICE,
                user_data_mode=UserDataMode.NONE,
            )
            # PCS user data is MIME multipart in PCS's order (see user_data.py).
            template.resource.add_property_override(
                "LaunchTemplateData.UserData", Fn.base64(user_data)
            )
            self.launch_template = template
            template_id, version = template.launch_template_id, template.latest_version_number
        else:
            plain = node_launch_template(
                self,
                "LaunchTemplate",
                root_device_name=UBUNTU_ROOT_DEVICE,
                root_volume_size_gib=root_volume_size_gib,
                security_group_ids=[g.security_group_id for g in groups],
                user_data=user_data,
            )
            template_id, version = plain.ref, plain.attr_latest_version_number
        self.launch_template_id = template_id
        self.resource = pcs.CfnComputeNodeGroup(
            self,
            "Resource",
            cluster_id=cluster.cluster_id,
            name=group_name,
            ami_id=ami_id,
            iam_instance_profile_arn=instance_profile.instance_profile_arn,
            instance_configs=[
                pcs.CfnComputeNodeGroup.InstanceConfigProperty(instance_type=instance_type)
            ],
            scaling_configuration=pcs.CfnComputeNodeGroup.ScalingConfigurationProperty(
                min_instance_count=min_count, max_instance_count=max_count
            ),
            subnet_ids=[subnet.subnet_id],
            custom_launch_template=pcs.CfnComputeNodeGroup.CustomLaunchTemplateProperty(
                template_id=template_id, version=version
            ),
            purchase_option=purchase_option(capacity),
        )

    @property
    def compute_node_group_id(self) -> str:
        return self.resource.attr_id

    @classmethod
    def accelerated(
        cls,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IPcsCluster,
        instance_type: str,
        node_count: int,
        subnet: ec2.ISubnet,
        instance_profile: IPcsInstanceProfile,
        ami_id: str,
        scripts_uri: str,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup,
        capacity: CapacitySource | None = None,
        efa_layout: EfaLayout = EfaLayout.EFA_ONLY,
        group_name: str = "accelerated",
        min_count: int | None = None,
        root_volume_size_gib: int = ROOT_VOLUME_SIZE_GIB,
    ) -> PcsComputeNodeGroup:
        """``node_count`` accelerated nodes of ``instance_type`` (EFA required). Static by
        default (``min_count`` = ``node_count``: On-Demand and ODCR nodes stay up, an ODCR is
        paid for either way); on a Capacity Block dynamic (``min_count`` 0): Slurm starts the
        nodes for jobs while the block is active, and none is kept trying to launch before
        it starts or after it ends."""
        get_instance_type(instance_type)  # an uncatalogued type fails here, with the catalog
        if min_count is None:
            block = capacity is not None and capacity.kind is CapacityKind.CAPACITY_BLOCK
            min_count = 0 if block else node_count
        return cls(
            scope,
            construct_id,
            cluster=cluster,
            role="compute",
            group_name=group_name,
            instance_type=instance_type,
            min_count=min_count,
            max_count=node_count,
            subnet=subnet,
            instance_profile=instance_profile,
            ami_id=ami_id,
            scripts_uri=scripts_uri,
            capacity=capacity,
            efa_layout=efa_layout,
            efa_security_group=efa_security_group,
            root_volume_size_gib=root_volume_size_gib,
        )

    @classmethod
    def login(
        cls,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IPcsCluster,
        subnet: ec2.ISubnet,
        instance_profile: IPcsInstanceProfile,
        ami_id: str,
        scripts_uri: str,
        instance_type: str = LOGIN_INSTANCE_TYPE,
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        group_name: str = "login",
    ) -> PcsComputeNodeGroup:
        """One static login node (On-Demand) with the cluster's security group."""
        return cls(
            scope,
            construct_id,
            cluster=cluster,
            role="login",
            group_name=group_name,
            instance_type=instance_type,
            min_count=1,
            max_count=1,
            subnet=subnet,
            instance_profile=instance_profile,
            ami_id=ami_id,
            scripts_uri=scripts_uri,
            security_groups=security_groups,
            root_volume_size_gib=LOGIN_ROOT_VOLUME_GIB,
        )

    @staticmethod
    def from_compute_node_group_attributes(
        scope: Construct, construct_id: str, *, compute_node_group_id: str
    ) -> IPcsComputeNodeGroup:
        """A node group created elsewhere, by id (for a queue of this app)."""
        return _ImportedNodeGroup(scope, construct_id, group_id=compute_node_group_id)


class _ImportedNodeGroup(Construct):
    def __init__(self, scope: Construct, construct_id: str, *, group_id: str) -> None:
        super().__init__(scope, construct_id)
        problems = Problems(
            context=f"PcsComputeNodeGroup.from_compute_node_group_attributes {self.node.path}",
            code=codes.PCS,
        )
        problems.adopt(
            pcs_rules.imported_id("compute_node_group_id", group_id, "must be the node group's id")
        )
        problems.raise_if_any()
        self.compute_node_group_id = group_id
