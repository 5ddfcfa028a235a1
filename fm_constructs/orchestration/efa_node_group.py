"""An EKS managed node group of EFA-connected GPU or Trainium nodes in one subnet.

The node group is built over :class:`~fm_constructs.compute.GpuLaunchTemplate`, which carries
the instance type, every EFA interface, the placement group, the capacity reservation and the
NVMe RAID0 user data. The node group itself sets no ``instance_types``: aws-cdk-lib's eks_v2
classifies p5/p5e/p5en/p6/trn types as non-GPU and then either rejects the NVIDIA/Neuron AMI
type or silently picks a CPU AMI. The AMI type is set explicitly from the catalog instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

import jsii
from aws_cdk import Annotations, Fn, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.catalog import EksAmiFamily, InstanceSpec, catalogued_spec
from fm_constructs.compute import CapacityKind, CapacitySource, GpuLaunchTemplate
from fm_constructs.compute.capacity_block_scaling import (
    ScaledNodeGroup,
    add_capacity_block_scaling,
    capacity_block_phase,
)
from fm_constructs.compute.user_data import append_shell_part
from fm_constructs.domain.defaults import ROOT_VOLUME_SIZE_GIB
from fm_constructs.domain.names import NODE_POOL_LABEL
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration import lustre_efa_client
from fm_constructs.orchestration.cluster_features import DevicePlugins
from fm_constructs.orchestration.cluster_interface import IGpuCluster, is_gpu_cluster
from fm_constructs.orchestration.node_role import allow_session_manager, remove_cni_policy
from fm_constructs.orchestration.pcs.user_data import lnet_efa_interfaces
from fm_constructs.planning.capacity_block import BlockPhase
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.node_updates import (
    UpdatePolicy,
    UpdateStrategy,
    update_policy,
)
from fm_constructs.policy import acknowledge
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import node_groups as node_group_rules

#: EKS AMI type per catalog family (AL2023, x86_64: every EFA accelerated type in the catalog).
AMI_TYPES: dict[EksAmiFamily, eks.NodegroupAmiType] = {
    "NVIDIA": eks.NodegroupAmiType.AL2023_X86_64_NVIDIA,
    "NEURON": eks.NodegroupAmiType.AL2023_X86_64_NEURON,
}
TAINT_KEYS: dict[EksAmiFamily, str] = {
    "NVIDIA": charts.GPU_TAINT_KEY,
    "NEURON": charts.NEURON_TAINT_KEY,
}
PRESENT_LABELS: dict[EksAmiFamily, str] = {
    "NVIDIA": charts.GPU_PRESENT_LABEL,
    "NEURON": charts.NEURON_PRESENT_LABEL,
}
WORKLOADS: dict[EksAmiFamily, str] = {"NVIDIA": "gpu", "NEURON": "neuron"}
#: Labels the construct owns; user labels may not override them.
RESERVED_LABEL_PREFIXES = node_group_rules.RESERVED_LABEL_PREFIXES


def node_labels(
    spec: InstanceSpec, extra: Mapping[str, str] | None = None, *, node_pool: str | None = None
) -> dict[str, str]:
    """Labels of an accelerated node: workload role, accelerator presence (what the device
    plugin charts select on), EFA presence, the instance family for affinity rules, and the
    node pool (the Kueue ResourceFlavor's node label) when given."""
    family = spec.eks_ami_family
    labels = {
        charts.WORKLOAD_LABEL: WORKLOADS[family],
        "fm-constructs/instance-family": spec.family,
        PRESENT_LABELS[family]: "true",
    }
    if spec.efa_supported:
        labels[charts.EFA_PRESENT_LABEL] = "true"
    if node_pool is not None:
        labels[NODE_POOL_LABEL] = node_pool
    labels.update(extra or {})
    return labels


@jsii.implements(ec2.IConnectable)
class EfaNodeGroup(Construct):
    """Managed node group of ``node_count`` EFA nodes of ``instance_type`` in ``subnet``.

    - ``node_count``: nodes the group starts with; ``min_node_count``/``max_node_count`` bound
      what the Cluster Autoscaler may scale it to (both default to ``node_count``: a fixed
      size).

    - ``capacity``: on-demand (default), an ODCR, or a Capacity Block (node group capacity type
      ``CAPACITY_BLOCK``; the launch template targets the reservation with the
      ``capacity-block`` market type; no placement group).
    - ``subnet``: one private subnet in the zone of the GPU capacity. It must be in the
      cluster's GPU zone (``GpuEksCluster(gpu_availability_zone=...)``) and in the
      reservation's zone when both are known.
    - ``efa_security_group``: an :class:`EfaSecurityGroup` or any group with the EFA
      self-rules; created when absent. The cluster security group is added to the primary
      interface so nodes reach the control plane and the system nodes.
    - ``efa_layout``: how the EFA interfaces are laid out; None for a type without EFA (a
      model server whose replicas fit one node, on g6e.2xlarge say): one ENA interface, no
      EFA label.
    - Taint ``nvidia.com/gpu=true:NoSchedule`` (``aws.amazon.com/neuron`` for Trainium) keeps
      other pods off; labels from :func:`node_labels` plus ``labels``.
    - Node auto repair on (with the ``eks-node-monitoring-agent`` add-on of the cluster),
      at most ``max_parallel_repairs`` nodes replaced at once. Updates (a launch-template or
      AMI change) follow :func:`~fm_constructs.planning.node_updates.update_policy`: on any
      reservation the ``MINIMAL`` strategy (old nodes terminate before new ones launch: a
      fully used reservation has no spare instance to launch first) with 20 % of the group
      at once; on-demand the EKS default (new node first), one at a time.
      ``update_strategy``, ``max_unavailable`` or ``max_unavailable_percentage`` override it
      (give one of the last two). Updates respect PodDisruptionBudgets unless
      ``force_update`` (a node running a job that a budget protects is not taken away).
    - ``launch_template_version``: the version of the group's launch template the nodes run.
      None follows the newest version, so any change to the template (user data, interfaces,
      root volume) replaces the group's nodes on the next deploy. A number pins it: a change
      then only adds a version, and no node is replaced until the number is moved to it.
    - ``node_pool``: value of the ``fm-constructs/node-pool`` label (the Kueue ResourceFlavor
      that selects this group).
    - ``max_pods``: kubelet maxPods of the nodes (nodeadm NodeConfig in the launch template);
      the VPC CNI's own figure when absent. Under custom networking it bounds the /28
      prefixes each node takes from its pod subnet.
    - The node role holds the worker and ECR read-only policies only
      (:mod:`~fm_constructs.orchestration.node_role`): the VPC CNI's policy is on its own Pod
      Identity role, and ``session_manager`` (off by default) adds Session Manager shells
      without Systems Manager's parameter reads.

    With a :class:`GpuEksCluster`, the device plugin for the family and the EFA device plugin
    are switched on, and FSx for Lustre file systems mounted with
    ``cluster.add_lustre_volume`` accept these nodes. For an EFA-enabled file system,
    :meth:`use_lnet_over_efa` has the nodes configure LNet over their EFA interfaces at every
    boot before kubelet starts (:mod:`~fm_constructs.orchestration.lustre_efa_client`).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.NODE_GROUP

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IGpuCluster | eks.ICluster,
        instance_type: str,
        subnet: ec2.ISubnet,
        node_count: int | None = None,
        min_node_count: int | None = None,
        max_node_count: int | None = None,
        capacity: CapacitySource | None = None,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None = None,
        labels: Mapping[str, str] | None = None,
        root_volume_size_gib: int = ROOT_VOLUME_SIZE_GIB,
        nvme_raid0: bool = True,
        auto_repair: bool = True,
        max_parallel_repairs: int = 1,
        max_unavailable: int | None = None,
        max_unavailable_percentage: int | None = None,
        update_strategy: UpdateStrategy | None = None,
        nodegroup_name: str | None = None,
        placement_group: ec2.IPlacementGroup | None = None,
        efa_layout: EfaLayout | None = EfaLayout.EFA_ONLY,
        taints: Mapping[str, str] | None = None,
        create_placement_group: bool | None = None,
        node_pool: str | None = None,
        force_update: bool = False,
        launch_template_version: int | None = None,
        session_manager: bool = False,
        max_pods: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        capacity = capacity or CapacitySource.on_demand()
        problems = Problems.of(self)
        spec = catalogued_spec(problems, instance_type, efa=efa_layout is not None)
        problems.adopt(node_group_rules.node_count_given(node_count))
        if node_count is None:
            problems.raise_if_any()  # no size to check the rest against
        assert node_count is not None
        eks_cluster = cluster.icluster if is_gpu_cluster(cluster) else cast(eks.ICluster, cluster)

        # -- sizes, checks and update policy, before anything is created -----------------------
        min_nodes, max_nodes = self._size_bounds(
            capacity, node_count, min_node_count, max_node_count
        )
        sizes = (min_nodes, node_count, max_nodes)
        self._check_group(
            problems,
            cluster,
            eks_cluster,
            subnet=subnet,
            capacity=capacity,
            sizes=sizes,
            labels=labels or {},
            max_parallel_repairs=max_parallel_repairs,
        )
        updates = self._update_policy(
            problems,
            capacity=capacity,
            update_strategy=update_strategy,
            max_unavailable=max_unavailable,
            max_unavailable_percentage=max_unavailable_percentage,
        )
        problems.raise_if_any()
        #: How the group replaces its nodes on a launch-template or AMI change.
        self.update_policy = updates
        assert spec is not None
        self.instance_spec = spec
        self.capacity = capacity
        self.efa_layout = efa_layout
        #: The most nodes the group may run (what it may add to a file system's EFA clients).
        self.max_node_count = max_nodes
        #: EFA interfaces LNet uses on each node (0: Lustre over TCP only).
        self.lnet_efa_interfaces = 0

        # -- security groups and launch template -----------------------------------------------
        self.efa_security_group = self._efa_group(efa_security_group, eks_cluster)
        self.cluster_security_group = _cluster_security_group(eks_cluster)
        self.launch_template = GpuLaunchTemplate(
            self,
            "LaunchTemplate",
            instance_type=spec.name,
            efa_security_group=self.efa_security_group,
            efa_layout=efa_layout,
            security_groups=[self.cluster_security_group],
            capacity=capacity,
            placement_group=placement_group,
            create_placement_group=create_placement_group,
            subnet_availability_zone=_known_zone(subnet),
            node_count=max_nodes,
            root_volume_size_gib=root_volume_size_gib,
            nvme_raid0=nvme_raid0,
            max_pods=max_pods,
            tags={"fm-constructs/node-group": construct_id},
        )

        # -- the node group, its settings beyond the L2 and its role ---------------------------
        self.labels = node_labels(spec, labels, node_pool=node_pool)
        self.node_pool = node_pool
        self.taint_key = TAINT_KEYS[spec.eks_ami_family]
        #: Every taint of the group (key, value), effect NoSchedule.
        self.taints: tuple[tuple[str, str], ...] = (
            (self.taint_key, "true"),
            *((key, value) for key, value in (taints or {}).items()),
        )
        self.nodegroup = self._create_nodegroup(
            eks_cluster,
            subnet,
            sizes=sizes,
            nodegroup_name=nodegroup_name,
            launch_template_version=launch_template_version,
            auto_repair=auto_repair,
            force_update=force_update,
        )
        resource = self.nodegroup.node.default_child
        assert isinstance(resource, eks.CfnNodegroup)
        self.resource = resource
        self._override_update_and_repair(
            explicit_strategy=update_strategy is not None,
            auto_repair=auto_repair,
            max_parallel_repairs=max_parallel_repairs,
        )
        self._restrict_node_role(session_manager=session_manager)
        if capacity.kind is CapacityKind.CAPACITY_BLOCK:
            self._scale_with_block(eks_cluster, sizes=sizes)

        # -- what the cluster learns about the group -------------------------------------------
        self._connections = ec2.Connections(
            security_groups=[self.efa_security_group, self.cluster_security_group]
        )
        if is_gpu_cluster(cluster):
            DevicePlugins.for_family(spec.eks_ami_family).enable(cluster)
            cluster.add_node_peer(self)

    # ----------------------------------------------------------------------------- attributes

    @property
    def connections(self) -> ec2.Connections:
        """The EFA group and the cluster group (both on the nodes' primary interface), so that
        ``fs.connections.allow_default_port_from(node_group)`` opens the Lustre ports."""
        return self._connections

    @property
    def nodegroup_name(self) -> str:
        return self.nodegroup.nodegroup_name

    def use_lnet_over_efa(self, efa_clients: int | None = None) -> int:
        """Have the nodes configure LNet over their EFA interfaces at every boot, before
        kubelet starts (so before the FSx CSI driver mounts anything), for an EFA-enabled FSx
        for Lustre file system: one more shell part in the launch template's user data
        (:func:`~fm_constructs.orchestration.lustre_efa_client.setup_script`). The nodes use
        the FSx guide's interface count for their type, within one ``efa_clients``-th of the
        file system's EFA connections (``efa_clients``: every EFA node that mounts it; None
        for no cap). Returns that count; 0, and nothing changes, for a group without EFA
        interfaces or of a family FSx does not take as an EFA client (trn2: an info message
        says so). A second call leaves the first count."""
        if self.lnet_efa_interfaces or self.efa_layout is None:
            return self.lnet_efa_interfaces
        if not self.instance_spec.lustre_efa_client:
            Annotations.of(self).add_info(
                f"{self.instance_spec.name} nodes mount the EFA-enabled FSx for Lustre file "
                f"system over TCP: FSx does not support EFA clients of the "
                f"{self.instance_spec.family} family."
            )
            return 0
        interfaces = lnet_efa_interfaces(self.instance_spec, efa_clients)
        if not interfaces:
            return 0
        template = self.launch_template
        template.user_data = append_shell_part(
            template.user_data, lustre_efa_client.setup_script(self.instance_spec.name, interfaces)
        )
        template.resource.add_property_override(
            "LaunchTemplateData.UserData", Fn.base64(template.user_data)
        )
        self.lnet_efa_interfaces = interfaces
        return interfaces

    @property
    def role(self) -> iam.IRole:
        """The node IAM role (grant it access to data buckets, ECR repositories, ...)."""
        return self.nodegroup.role

    # ----------------------------------------------------------------------------- building

    def _size_bounds(
        self,
        capacity: CapacitySource,
        node_count: int,
        min_node_count: int | None,
        max_node_count: int | None,
    ) -> tuple[int, int]:
        """The group's minimum and maximum sizes (both ``node_count`` unless given). A
        Capacity Block group's minimum defaults to 0: EKS scales it to zero before the block
        ends and needs desired size 0 to update it, so a minimum above zero would fight both
        (an info message says so)."""
        if min_node_count is None and capacity.kind is CapacityKind.CAPACITY_BLOCK:
            min_node_count = 0
            Annotations.of(self).add_info(
                "Capacity Block node group: minimum size 0, so EKS can scale it to zero before "
                "the block ends. Before changing its launch template or AMI, set its desired "
                "size to 0 (the EKS guide asks it of Capacity Block node groups; updates "
                "terminate old nodes first, the block has no spare instance)."
            )
        min_nodes = node_count if min_node_count is None else min_node_count
        max_nodes = node_count if max_node_count is None else max_node_count
        return min_nodes, max_nodes

    @staticmethod
    def _check_group(
        problems: Problems,
        cluster: IGpuCluster | eks.ICluster,
        eks_cluster: eks.ICluster,
        *,
        subnet: ec2.ISubnet,
        capacity: CapacitySource,
        sizes: tuple[int, int, int],
        labels: Mapping[str, str],
        max_parallel_repairs: int,
    ) -> None:
        """The node-group rule on the subnet (private, in the GPU and reservation zones), the
        capacity, the (min, desired, max) sizes, the labels and the repair count."""
        problems.adopt(
            node_group_rules.efa_node_group(
                subnet_zone=_known_zone(subnet),
                subnet_path=subnet.node.path,
                subnet_is_public=subnet.node.path
                in {s.node.path for s in _public_subnets(eks_cluster)},
                gpu_zone=cluster.gpu_availability_zone if is_gpu_cluster(cluster) else None,
                capacity_kind=capacity.kind,
                reserved_zone=capacity.availability_zone,
                training_plan_arn=capacity.training_plan_arn,
                sizes=sizes,
                labels=labels,
                max_parallel_repairs=max_parallel_repairs,
            )
        )

    def _efa_group(
        self,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None,
        eks_cluster: eks.ICluster,
    ) -> ec2.ISecurityGroup:
        """The nodes' EFA group as a plain security group: the one given, or a created
        :class:`EfaSecurityGroup` (``EfaSecurityGroup``) in the cluster's VPC."""
        if isinstance(efa_security_group, EfaSecurityGroup):
            return efa_security_group.security_group
        if efa_security_group is not None:
            return efa_security_group
        return EfaSecurityGroup(self, "EfaSecurityGroup", vpc=eks_cluster.vpc).security_group

    def _create_nodegroup(
        self,
        eks_cluster: eks.ICluster,
        subnet: ec2.ISubnet,
        *,
        sizes: tuple[int, int, int],
        nodegroup_name: str | None,
        launch_template_version: int | None,
        auto_repair: bool,
        force_update: bool,
    ) -> eks.Nodegroup:
        """The managed node group (``Resource``) on the launch template, with the family's AMI
        type, the capacity type, the (min, desired, max) sizes, the labels and taints, auto
        repair and the update policy's unavailable nodes. No ``instance_types``: the type
        lives in the launch template (see the module docstring). The launch template's
        newest version unless ``launch_template_version`` pins one."""
        min_nodes, desired_size, max_nodes = sizes
        capacity = self.capacity
        capacity_block = capacity.kind is CapacityKind.CAPACITY_BLOCK
        return eks.Nodegroup(
            self,
            "Resource",
            cluster=eks_cluster,
            nodegroup_name=nodegroup_name,
            ami_type=AMI_TYPES[self.instance_spec.eks_ami_family],
            capacity_type=getattr(eks.CapacityType, capacity.eks_capacity_type()),
            launch_template_spec=eks.LaunchTemplateSpec(
                id=self.launch_template.launch_template_id,
                version=(
                    self.launch_template.latest_version_number
                    if launch_template_version is None
                    else str(launch_template_version)
                ),
            ),
            subnets=ec2.SubnetSelection(subnets=[subnet]),
            min_size=min_nodes,
            # A Capacity Block node group starts empty: created before the block is active
            # it would launch into a reservation that has no instances yet (EKS guide). Once
            # the block has started it starts at its size (a scale-up schedule in the past
            # would never run).
            desired_size=(
                desired_size
                if not capacity_block or capacity_block_phase(self, capacity) is BlockPhase.RUNNING
                else min_nodes
            ),
            max_size=max_nodes,
            labels=self.labels,
            taints=[
                eks.TaintSpec(effect=eks.TaintEffect.NO_SCHEDULE, key=key, value=value)
                for key, value in self.taints
            ],
            enable_node_auto_repair=auto_repair,
            max_unavailable=self.update_policy.max_unavailable,
            max_unavailable_percentage=self.update_policy.max_unavailable_percentage,
            force_update=force_update,
        )

    def _override_update_and_repair(
        self, *, explicit_strategy: bool, auto_repair: bool, max_parallel_repairs: int
    ) -> None:
        """What the L2 has no property for: the update strategy (when given, or MINIMAL) and
        how many nodes auto repair replaces at once."""
        strategy = self.update_policy.strategy
        if explicit_strategy or strategy is UpdateStrategy.MINIMAL:
            self.resource.add_property_override("UpdateConfig.UpdateStrategy", strategy.value)
        if auto_repair:
            self.resource.add_property_override(
                "NodeRepairConfig.MaxParallelNodesRepairedCount", max_parallel_repairs
            )

    def _restrict_node_role(self, *, session_manager: bool) -> None:
        """The node role keeps the worker and ECR read-only policies only (acknowledged): the
        CNI's permissions are on its own Pod Identity role (ClusterAddons). With
        ``session_manager``, a shell on a broken GPU node (Session Manager: no SSH keys, no
        open port)."""
        for policy in ("AmazonEKSWorkerNodePolicy", "AmazonEC2ContainerRegistryReadOnly"):
            acknowledge(
                self.nodegroup,
                f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{policy}]",
                "EKS managed node roles need the AWS-managed worker and ECR read-only "
                "policies documented for node IAM roles.",
            )
        remove_cni_policy(self.nodegroup.role)
        if session_manager:
            allow_session_manager(self.nodegroup.role)
            acknowledge(
                self.nodegroup,
                "AwsSolutions-IAM5[Resource::*]",
                "The SSM Agent's Session Manager actions take no resource (Session Manager "
                "user guide, custom instance profile).",
            )

    def _scale_with_block(self, eks_cluster: eks.ICluster, *, sizes: tuple[int, int, int]) -> None:
        """A Capacity Block group's scaling with the block: up when it starts, to zero before
        it ends (:func:`~fm_constructs.compute.capacity_block_scaling.
        add_capacity_block_scaling`)."""
        min_nodes, desired_size, max_nodes = sizes
        scaled = ScaledNodeGroup(
            cluster_name=eks_cluster.cluster_name,
            nodegroup_name=self.nodegroup.nodegroup_name,
            nodegroup_arn=self.nodegroup.nodegroup_arn,
            node_count=desired_size,
            min_size=min_nodes,
            max_size=max_nodes,
        )
        add_capacity_block_scaling(self, self.capacity, scaled)

    # ----------------------------------------------------------------------------- validation

    def _update_policy(
        self,
        problems: Problems,
        *,
        capacity: CapacitySource,
        update_strategy: UpdateStrategy | None,
        max_unavailable: int | None,
        max_unavailable_percentage: int | None,
    ) -> UpdatePolicy:
        """The capacity's update policy with the options given on top of it."""
        default = update_policy(reserved=capacity.is_reserved)
        problems.adopt(node_group_rules.rolling_update(max_unavailable, max_unavailable_percentage))
        strategy = UpdateStrategy(update_strategy) if update_strategy else default.strategy
        if (
            strategy is UpdateStrategy.DEFAULT
            and capacity.is_reserved
            and not capacity.fall_back_to_on_demand
        ):
            Annotations.of(self).add_warning_v2(
                "fm-constructs:EfaNodeGroup.update_strategy",
                f"update_strategy DEFAULT launches new nodes before terminating old ones; the "
                f"{capacity.kind.value} reservation has no spare instance when it is fully "
                "used, so a launch-template or AMI change fails. Use UpdateStrategy.MINIMAL.",
            )
        if max_unavailable is None and max_unavailable_percentage is None:
            return UpdatePolicy(
                strategy, default.max_unavailable, default.max_unavailable_percentage
            )
        return UpdatePolicy(strategy, max_unavailable, max_unavailable_percentage)


def _cluster_security_group(cluster: eks.ICluster) -> ec2.ISecurityGroup:
    """The EKS-created cluster security group (imported clusters need
    ``cluster_security_group_id``): nodes carry it to reach the control plane and CoreDNS."""
    try:
        return cluster.cluster_security_group
    except Exception as error:  # jsii raises when an imported cluster lacks the attribute
        raise FmValidationError(
            [
                f"cluster: the cluster security group is unknown ({error}); import the cluster "
                f"with eks.Cluster.from_cluster_attributes(..., cluster_security_group_id=...)"
            ],
            context="EfaNodeGroup",
            code=codes.NODE_GROUP,
        ) from error


def _known_zone(subnet: ec2.ISubnet) -> str | None:
    zone = subnet.availability_zone
    return None if Token.is_unresolved(zone) else zone


def _public_subnets(cluster: eks.ICluster) -> Sequence[ec2.ISubnet]:
    try:
        return cluster.vpc.public_subnets
    except Exception:  # imported VPCs without public subnets raise in some CDK versions
        return ()
