"""A launch template for accelerated nodes: every EFA card wired, capacity targeted, hardened.

aws-cdk-lib's ``LaunchTemplate`` L2 cannot express several network interfaces or capacity
reservations, so this construct builds the ``AWS::EC2::LaunchTemplate`` L1 in one place from
the instance catalog, the EFA layout and a :class:`CapacitySource`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jsii
from aws_cdk import (
    Annotations,
    CfnTag,
    Fn,
    IStableAnyProducer,
    ITaggable,
    Lazy,
    TagManager,
    TagType,
)
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from constructs import Construct

from fm_constructs.catalog import InstanceSpec, catalogued_spec
from fm_constructs.compute.capacity import CapacitySource
from fm_constructs.compute.node_template import encrypted_root_volume, imds_v2_options
from fm_constructs.compute.placement import ClusterPlacementGroup
from fm_constructs.compute.root_device import (
    AMAZON_LINUX_ROOT_DEVICE,
    UBUNTU_ROOT_DEVICE,
    root_device_name,
)
from fm_constructs.compute.user_data import NodeadmCluster, UserDataMode, render_user_data
from fm_constructs.domain.defaults import (
    ROOT_VOLUME_MAX_GIB,
    ROOT_VOLUME_MIN_GIB,
    ROOT_VOLUME_SIZE_GIB,
)
from fm_constructs.errors import Problems
from fm_constructs.network.efa_security_group import EfaSecurityGroup
from fm_constructs.planning.efa_layout import (
    PRIMARY_ENA,
    EfaLayout,
    NetworkInterfaceSlot,
    efa_interface_layout,
)
from fm_constructs.rules import compute as compute_rules
from fm_constructs.rules import constructs as codes

#: Security groups per network interface before a quota increase.
DEFAULT_GROUPS_PER_INTERFACE = 5
MIN_ROOT_VOLUME_GIB = ROOT_VOLUME_MIN_GIB
MAX_GP3_VOLUME_GIB = ROOT_VOLUME_MAX_GIB
INSTANCE_RESOURCE_TYPES = ("instance", "volume", "network-interface")


@jsii.implements(IStableAnyProducer)
class _TagSpecifications:
    """Renders the construct's tags (explicit + ``Tags.of()``) into the template lazily, after
    the tag aspects have run."""

    def __init__(
        self, tags: TagManager, resource_types: Sequence[str], *, launch_template: bool = False
    ) -> None:
        self._tags = tags
        self._resource_types = tuple(resource_types)
        self._struct: Any = (
            ec2.CfnLaunchTemplate.LaunchTemplateTagSpecificationProperty
            if launch_template
            else ec2.CfnLaunchTemplate.TagSpecificationProperty
        )

    def produce(self) -> Any:
        rendered = [
            CfnTag(key=tag["Key"], value=tag["Value"])
            for tag in self._tags.render_tags() or ()  # None when there are no tags
        ]
        if not rendered:
            return None
        # Struct objects, not plain dicts: jsii passes dicts returned from a producer as
        # opaque objects that render empty.
        return [self._struct(resource_type=kind, tags=rendered) for kind in self._resource_types]


@jsii.implements(ITaggable)
class GpuLaunchTemplate(Construct):
    """Launch template for EFA-connected GPU/Trainium nodes (EKS node groups, ASGs, PCS).

    * Instance type from the catalog; EFA required unless ``efa_layout=None``.
    * Network interfaces from :func:`efa_interface_layout` (EFA count == the type's maximum),
      no public IP, deleted on termination. The EFA security group goes on every interface;
      ``security_groups`` (e.g. the EKS cluster security group) go on the primary interface.
      Groups are set per interface, never at launch-template level.
    * Capacity from ``capacity``: reservation target and ``capacity-block`` market type.
    * A cluster placement group is created for on-demand EFA nodes. Over a reservation none is
      created unless ``create_placement_group=True`` (its hosts are already placed; an ODCR
      made in a placement group brings that group); with a Capacity Block or a reservation
      with its own placement it is never added (a warning says so).
    * IMDSv2 required, hop limit ``imds_hop_limit`` (default 1): a pod outside the host
      network is one hop further away, so it cannot reach the metadata service and take the
      node role's credentials. Every AWS consumer this library installs gets its own role
      through EKS Pod Identity (FSx CSI controller, cluster autoscaler, KEDA, workload and
      model-server service accounts) or runs in the host network (VPC CNI, Pod Identity
      agent), where one hop is enough. Give 2 only for pods that rely on the node role.
    * Encrypted gp3 root volume on the image's root device (``root_volume_device_name``, or
      found from the image: ``/dev/xvda`` for EKS's Amazon Linux images, ``/dev/sda1`` for an
      Ubuntu image published in SSM; an AMI id needs it given). NVMe instance store
      assembled as RAID0 (nodeadm on AL2023 EKS nodes; otherwise a systemd unit that
      assembles or recreates the array at every boot, see :mod:`fm_constructs.compute.user_data`).
    * Tags (``tags`` and ``Tags.of(...)``) propagate to instances, volumes and interfaces.

    No subnet is set: the node group or Auto Scaling group chooses it. Pass
    ``subnet_availability_zone`` and ``node_count`` so the capacity's zone and size are checked.
    ``efa_security_group`` takes an :class:`~fm_constructs.network.EfaSecurityGroup` or any
    security group with the EFA self-rules, as :class:`~fm_constructs.orchestration.EfaNodeGroup`
    does; without one, ``vpc`` is where a new one is created.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.LAUNCH_TEMPLATE

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        instance_type: str,
        vpc: ec2.IVpc | None = None,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None = None,
        security_groups: Sequence[ec2.ISecurityGroup] = (),
        efa_layout: EfaLayout | None = EfaLayout.EFA_ONLY,
        capacity: CapacitySource | None = None,
        placement_group: ec2.IPlacementGroup | None = None,
        create_placement_group: bool | None = None,
        subnet_availability_zone: str | None = None,
        node_count: int | None = None,
        root_volume_size_gib: int = ROOT_VOLUME_SIZE_GIB,
        root_volume_device_name: str | None = None,
        root_volume_kms_key: kms.IKey | None = None,
        nvme_raid0: bool = True,
        user_data_mode: UserDataMode = UserDataMode.EKS_NODEADM,
        nodeadm_cluster: NodeadmCluster | None = None,
        extra_user_data_script: str | None = None,
        max_pods: int | None = None,
        machine_image: ec2.IMachineImage | None = None,
        instance_profile: iam.IInstanceProfile | None = None,
        launch_template_name: str | None = None,
        tags: Mapping[str, str] | None = None,
        imds_hop_limit: int = 1,
    ) -> None:
        super().__init__(scope, construct_id)
        capacity = capacity or CapacitySource.on_demand()
        problems = Problems.of(self)
        found = catalogued_spec(problems, instance_type, efa=efa_layout is not None)
        if found is None:
            problems.raise_if_any()  # the catalog's finding, under this construct
        assert found is not None
        spec: InstanceSpec = found
        self.instance_spec = spec
        self.capacity = capacity
        self.efa_layout = efa_layout

        problems.adopt(
            compute_rules.launch_template(
                vpc_given=vpc is not None,
                capacity_kind=capacity.kind,
                efa_security_group_given=efa_security_group is not None,
                training_plan_arn=capacity.training_plan_arn,
                placement_group_given=placement_group is not None,
                capacity_allows_placement_group=capacity.allows_placement_group,
                create_placement_group=create_placement_group,
                capacity_placement_group_arn=capacity.placement_group_arn,
                reserved=compute_rules.Placement(
                    capacity.instance_count, capacity.availability_zone, capacity.instance_type
                ),
                nodes=compute_rules.Placement(node_count, subnet_availability_zone, spec.name),
                root_volume_size_gib=root_volume_size_gib,
                nodeadm_cluster_name=None if nodeadm_cluster is None else nodeadm_cluster.name,
                nodeadm_user_data=user_data_mode is UserDataMode.EKS_NODEADM,
                imds_hop_limit=imds_hop_limit,
            )
        )
        root_device = root_volume_device_name or root_device_name(self, machine_image)
        problems.adopt(
            compute_rules.root_device(
                root_device,
                ubuntu_device=UBUNTU_ROOT_DEVICE,
                amazon_linux_device=AMAZON_LINUX_ROOT_DEVICE,
            )
        )
        problems.raise_if_any()
        assert root_device is not None
        self.root_device_name: str = root_device

        self.interfaces: tuple[NetworkInterfaceSlot, ...] = (
            efa_interface_layout(spec, efa_layout) if efa_layout is not None else (PRIMARY_ENA,)
        )
        #: The EFA security group on every interface (the ``efa_security_group`` given, as a
        #: plain security group, or the one created in ``vpc``).
        self.efa_security_group: ec2.ISecurityGroup = (
            efa_security_group.security_group
            if isinstance(efa_security_group, EfaSecurityGroup)
            else efa_security_group or self._create_efa_group(vpc)
        )
        self.security_groups = tuple(security_groups)
        self.placement_group = self._choose_placement_group(
            capacity, placement_group, create_placement_group, efa_layout is not None
        )
        self._warn_on_group_count()

        self._tags = TagManager(TagType.KEY_VALUE, "AWS::EC2::LaunchTemplate")
        for key, value in (tags or {}).items():
            self._tags.set_tag(key, value)

        user_data = render_user_data(
            user_data_mode,
            raid0=nvme_raid0 and spec.nvme is not None,
            cluster=nodeadm_cluster,
            extra_script=extra_user_data_script,
            max_pods=max_pods,
            nvme_disks=spec.nvme.count if spec.nvme else 0,
        )
        self.user_data: str | None = user_data

        data = ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            instance_type=spec.name,
            image_id=machine_image.get_image(self).image_id if machine_image else None,
            iam_instance_profile=(
                ec2.CfnLaunchTemplate.IamInstanceProfileProperty(
                    arn=instance_profile.instance_profile_arn
                )
                if instance_profile
                else None
            ),
            network_interfaces=self._interfaces(),
            placement=(
                ec2.CfnLaunchTemplate.PlacementProperty(
                    group_name=self.placement_group.placement_group_name
                )
                if self.placement_group
                else None
            ),
            capacity_reservation_specification=(
                capacity.launch_template_capacity_reservation_specification()
            ),
            instance_market_options=capacity.launch_template_instance_market_options(),
            metadata_options=imds_v2_options(imds_hop_limit),
            block_device_mappings=[
                encrypted_root_volume(
                    root_device,
                    root_volume_size_gib,
                    kms_key_arn=root_volume_kms_key.key_arn if root_volume_kms_key else None,
                )
            ],
            user_data=Fn.base64(user_data) if user_data else None,
            tag_specifications=Lazy.any(_TagSpecifications(self._tags, INSTANCE_RESOURCE_TYPES)),
        )
        self.resource = ec2.CfnLaunchTemplate(
            self,
            "Resource",
            launch_template_name=launch_template_name,
            launch_template_data=data,
            tag_specifications=Lazy.any(
                _TagSpecifications(self._tags, ("launch-template",), launch_template=True)
            ),
        )

    # ---- attributes ---------------------------------------------------------------------------

    @property
    def tags(self) -> TagManager:
        """Tags for the template and, through it, every instance, volume and interface."""
        return self._tags

    @property
    def launch_template_id(self) -> str:
        return self.resource.ref

    @property
    def latest_version_number(self) -> str:
        return self.resource.attr_latest_version_number

    @property
    def default_version_number(self) -> str:
        return self.resource.attr_default_version_number

    @property
    def efa_interface_count(self) -> int:
        return sum(1 for slot in self.interfaces if slot.is_efa)

    # ---- building blocks ----------------------------------------------------------------------

    def _create_efa_group(self, vpc: ec2.IVpc | None) -> ec2.ISecurityGroup:
        assert vpc is not None  # guaranteed by compute_rules.launch_template
        return EfaSecurityGroup(self, "EfaSecurityGroup", vpc=vpc).security_group

    def _choose_placement_group(
        self,
        capacity: CapacitySource,
        placement_group: ec2.IPlacementGroup | None,
        create_placement_group: bool | None,
        efa: bool,
    ) -> ec2.IPlacementGroup | None:
        if placement_group is not None:
            return placement_group
        reservation_group = capacity.placement_group_name
        if reservation_group is not None:
            # The ODCR was made in this cluster placement group: launch into it, add no other.
            return ec2.PlacementGroup.from_placement_group_name(
                self, "ReservationPlacementGroup", reservation_group
            )
        if create_placement_group is False:
            return None
        if not capacity.allows_placement_group:
            if efa:
                Annotations.of(self).add_warning_v2(
                    "fm:placement-group-skipped",
                    f"No cluster placement group for {self.instance_spec.name}: the capacity "
                    f"({capacity.kind.value}) already decides placement, and a second "
                    f"placement group fails with insufficient capacity.",
                )
            return None
        if create_placement_group is None and capacity.is_reserved:
            if capacity.create_placement_group:
                return ClusterPlacementGroup(self, "PlacementGroup").placement_group
            if efa:
                # Reserved hosts are already placed: a new cluster placement group asks them to
                # share one more locality and can fail with InsufficientInstanceCapacity while
                # the paid reservation idles (EC2 User Guide, placement groups: reserve the
                # capacity within the cluster placement group instead).
                Annotations.of(self).add_info(
                    f"No new cluster placement group for {self.instance_spec.name}: the "
                    f"{capacity.kind.value} reservation's instances are already placed. Give "
                    f"the group the reservation was made in (placement_group_arn), or "
                    f"create_placement_group=True to ask for a new one."
                )
            return None
        if create_placement_group is None and not efa:
            return None
        return ClusterPlacementGroup(self, "PlacementGroup").placement_group

    def _warn_on_group_count(self) -> None:
        primary_groups = 1 + len(self.security_groups)
        if primary_groups > DEFAULT_GROUPS_PER_INTERFACE:
            Annotations.of(self).add_warning_v2(
                "fm:groups-per-interface",
                f"The primary interface gets {primary_groups} security groups; the default "
                f"quota is {DEFAULT_GROUPS_PER_INTERFACE} per interface. Raise the quota or "
                f"merge groups, or the launch fails.",
            )

    def _interfaces(self) -> list[ec2.CfnLaunchTemplate.NetworkInterfaceProperty]:
        """One entry per interface slot: the EFA group on each, the extra groups on the primary.
        The group IDs are read once (each read is a call into the CDK's JavaScript, and a
        p5.48xlarge has 32 slots)."""
        efa_group = [self.efa_security_group.security_group_id]
        primary_groups = efa_group + [group.security_group_id for group in self.security_groups]
        return [
            ec2.CfnLaunchTemplate.NetworkInterfaceProperty(
                network_card_index=slot.network_card_index,
                device_index=slot.device_index,
                interface_type=slot.interface_type,
                groups=list(primary_groups if slot.is_primary else efa_group),
                delete_on_termination=True,
            )
            for slot in self.interfaces
        ]
