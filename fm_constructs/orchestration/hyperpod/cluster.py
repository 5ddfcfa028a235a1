"""A SageMaker HyperPod cluster (``AWS::SageMaker::Cluster``), Slurm or EKS orchestrated.

One construct creates the cluster with resilient defaults (automatic node recovery, continuous
node provisioning on EKS, deep health checks on accelerated groups), its execution role, its
lifecycle scripts and provisioning parameters in S3, and the network it needs: the cluster subnet
(in the zone of the accelerated capacity and of FSx for Lustre), an EFA security group that
reaches the file system and, for EKS, the cluster security group. For EKS it also installs what
HyperPod needs on the cluster first (see :mod:`~fm_constructs.orchestration.hyperpod.eks`).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import TYPE_CHECKING

import jsii
from aws_cdk import Names, RemovalPolicy, Stack, Tags, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

if TYPE_CHECKING:
    from aws_cdk import aws_sagemaker as sagemaker

    from fm_constructs.orchestration.hyperpod.imported import IHyperPodCluster

from fm_constructs.domain.kinds import Orchestrator
from fm_constructs.domain.users import ClusterUser
from fm_constructs.errors import Problems
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.eks_addons import VPC_CNI
from fm_constructs.orchestration.hyperpod.eks import (
    HyperPodEksDependencies,
    hyperpod_node_labels,
)
from fm_constructs.orchestration.hyperpod.instance_groups import (
    InstanceGroup,
    PatchingStrategy,
    SlurmNodeType,
    check_layout,
    hyperpod_orchestrator,
)
from fm_constructs.orchestration.hyperpod.lifecycle import (
    DEFAULT_MOUNT_POINT,
    LifecycleScripts,
    provisioning_parameters,
    worker_group_parameters,
)
from fm_constructs.orchestration.hyperpod.role import HyperPodExecutionRole
from fm_constructs.orchestration.remote_write import IRemoteWriteTarget
from fm_constructs.orchestration.slurm import efa_exporter_repository_arn, fsx_parameters
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import hyperpod as hyperpod_rules
from fm_constructs.storage.lustre_interface import ILustreFileSystem

CLUSTER_NAME_MAX_LENGTH = 63


class NodeRecovery(StrEnum):
    """What HyperPod does with a node that fails a health check."""

    AUTOMATIC = "Automatic"
    NONE = "None"


@jsii.implements(ec2.IConnectable)
class HyperPodCluster(Construct):
    """A HyperPod cluster of ``instance_groups`` in ``subnet``.

    - ``orchestrator``: Slurm (default; a controller, optional login and worker groups, see
      :func:`~fm_constructs.orchestration.hyperpod.slurm_instance_groups`) or EKS (pass
      ``eks_cluster``; worker groups only). On Slurm, HyperPod's agent writes and maintains
      ``slurm.conf`` (one partition per worker group) from the provisioning parameters; the
      lifecycle scripts only start the daemons once it is there.
    - ``subnet``: one private subnet in the zone of the accelerated capacity and of
      ``lustre``; checked against the zones of training plans and of the EKS cluster's GPU zone.
    - ``lustre``: mounted on every node by the lifecycle scripts (over EFA when the file system
      has EFA enabled), its security group opened to the nodes.
    - ``prometheus``: the nodes' Prometheus agents remote-write to it (a Prometheus
      workspace, or anything with a remote-write URL and grant: :class:`IRemoteWriteTarget`).
    - ``efa_security_group``: an :class:`EfaSecurityGroup` or any security group with the EFA
      self-rules, as for :class:`~fm_constructs.orchestration.EfaNodeGroup`; created when
      absent.
    - ``lifecycle_bucket``: where the lifecycle scripts go; a small bucket is created when absent.
    - ``cluster_name``: derived from the construct path when absent. It is create-only:
      changing it (or the construct path) replaces the cluster.
    - ``users``: Slurm only, with ``lustre``: accounts created alike on every node, each with
      its home at ``<lustre_mount_point>/home/<name>`` and an SSH key pair there (the image's
      ``ubuntu`` user gets the same), so ``srun`` and MPI over ssh work for each of them.
    - ``lustre_efa_clients``: the EFA nodes of every cluster that mounts ``lustre`` over EFA,
      when other clusters share it (default: this cluster's own). LNet on each node uses at
      most its share of the file system's 1,024 EFA connections.
    - ``removal_policy``: DESTROY by default. A HyperPod cluster holds no data of its own
      (datasets and checkpoints live on FSx and S3), and a retained one keeps billing
      accelerator hours and holds network interfaces in the VPC.

    Children (ids are a contract): ``Resource`` (the ``CfnCluster``), ``ExecutionRole``,
    ``SecurityGroup`` (when created), ``Lifecycle``, ``EksDependencies`` (EKS).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.HYPERPOD_CLUSTER

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        instance_groups: Sequence[InstanceGroup],
        orchestrator: Orchestrator = Orchestrator.HYPERPOD_SLURM,
        eks_cluster: IGpuCluster | None = None,
        lustre: ILustreFileSystem | None = None,
        lustre_mount_point: str = DEFAULT_MOUNT_POINT,
        prometheus: IRemoteWriteTarget | None = None,
        efa_security_group: EfaSecurityGroup | ec2.ISecurityGroup | None = None,
        lifecycle_bucket: s3.IBucket | None = None,
        cluster_name: str | None = None,
        node_recovery: NodeRecovery = NodeRecovery.AUTOMATIC,
        training_operator: bool = True,
        task_governance: bool = False,
        removal_policy: RemovalPolicy = RemovalPolicy.DESTROY,
        users: Sequence[ClusterUser] = (),
        lustre_efa_clients: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        orchestrator = hyperpod_orchestrator(orchestrator)
        groups = list(instance_groups)
        self._check_arguments(
            groups,
            orchestrator,
            subnet=subnet,
            eks_cluster=eks_cluster,
            cluster_name=cluster_name,
            lustre=lustre,
            lustre_mount_point=lustre_mount_point,
            users=users,
        )
        self.orchestrator = orchestrator
        self.instance_groups: tuple[InstanceGroup, ...] = tuple(groups)
        self.cluster_name: str = cluster_name or Names.unique_resource_name(
            self, max_length=CLUSTER_NAME_MAX_LENGTH, separator="-", allowed_special_characters="-"
        )

        # -- the nodes' network: EFA group, EKS cluster group, file system --------------------
        peer = efa_security_group or EfaSecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description="HyperPod nodes: EFA (all traffic within the group), FSx, endpoints",
        )
        #: The EFA security group of the nodes, as a plain security group (as on EfaNodeGroup).
        self.efa_security_group: ec2.ISecurityGroup = (
            peer.security_group if isinstance(peer, EfaSecurityGroup) else peer
        )
        node_security_groups = self._node_security_groups(eks_cluster)
        self._connections = ec2.Connections(security_groups=node_security_groups)
        if lustre is not None:
            lustre.connections.allow_default_port_from(peer)
        if eks_cluster is not None:
            eks_cluster.add_node_peer(peer)

        # -- what the nodes run with: execution role, lifecycle scripts, remote write ---------
        self.execution_role = HyperPodExecutionRole(
            self,
            "ExecutionRole",
            vpc=vpc,
            subnet=subnet,
            security_groups=node_security_groups,
            eks_cluster_arn=eks_cluster.cluster_arn if eks_cluster is not None else None,
            # The vpc-cni add-on of a cluster this app made gives aws-node its own role.
            vpc_cni_policy=eks_cluster is None or eks_cluster.managed_addon(VPC_CNI) is None,
        )
        self.lifecycle = self._create_lifecycle(
            groups,
            lustre=lustre,
            lustre_mount_point=lustre_mount_point,
            prometheus=prometheus,
            users=users,
            lustre_efa_clients=lustre_efa_clients,
            bucket=lifecycle_bucket,
        )
        if prometheus is not None:
            self._allow_remote_write(prometheus, groups)
        self.eks_dependencies: HyperPodEksDependencies | None = None
        if eks_cluster is not None:
            self.eks_dependencies = HyperPodEksDependencies(
                self,
                "EksDependencies",
                eks_cluster=eks_cluster,
                instance_groups=groups,
                training_operator=training_operator,
                task_governance=task_governance,
            )

        # -- the cluster, created once everything its nodes use exists ------------------------
        self.cluster = self._create_cluster(
            subnet, node_security_groups, eks_cluster, node_recovery, removal_policy
        )
        self.cluster_arn: str = self.cluster.attr_cluster_arn

    @staticmethod
    def from_hyperpod_cluster_attributes(
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        security_group_ids: Sequence[str] = (),
    ) -> IHyperPodCluster:
        """Use a HyperPod cluster that already exists in this stack's account and region: its
        name and the security groups of its nodes (for ``connections``, e.g. to a file
        system)."""
        from fm_constructs.orchestration.hyperpod.imported import ImportedHyperPodCluster

        return ImportedHyperPodCluster(
            scope, construct_id, cluster_name=cluster_name, security_group_ids=security_group_ids
        )

    # ----------------------------------------------------------------------------- attributes

    @property
    def connections(self) -> ec2.Connections:
        """Connections of the node security groups (EFA group, plus the EKS cluster group)."""
        return self._connections

    @property
    def role(self) -> iam.IRole:
        """The execution role of every instance group."""
        return self.execution_role.role

    # ----------------------------------------------------------------------------- internals

    def _check_arguments(
        self,
        groups: Sequence[InstanceGroup],
        orchestrator: Orchestrator,
        *,
        subnet: ec2.ISubnet,
        eks_cluster: IGpuCluster | None,
        cluster_name: str | None,
        lustre: ILustreFileSystem | None,
        lustre_mount_point: str,
        users: Sequence[ClusterUser],
    ) -> None:
        """The instance-group layout of the orchestrator and the HyperPod cluster rule (EKS
        cluster and version, zones of the subnet, the reservations and the EKS GPU zone, name,
        mount point, users); tokens are not checked. Every problem is raised at once."""
        problems = Problems.of(self)
        problems.extend(check_layout(groups, orchestrator))
        zone = None if Token.is_unresolved(subnet.availability_zone) else subnet.availability_zone
        eks_version = None if eks_cluster is None else eks_cluster.kubernetes_version
        eks_zone = None if eks_cluster is None else eks_cluster.gpu_availability_zone
        problems.add_findings(
            hyperpod_rules.hyperpod_cluster(
                orchestrator=orchestrator,
                eks_cluster_given=eks_cluster is not None,
                eks_kubernetes_version=None
                if eks_version is None or Token.is_unresolved(eks_version)
                else eks_version,
                eks_gpu_zone=None
                if eks_zone is None or Token.is_unresolved(eks_zone)
                else eks_zone,
                subnet_zone=zone,
                group_reservation_zones=[
                    (group.name, group.capacity.kind, group.capacity.availability_zone)
                    for group in groups
                    if group.capacity is not None and group.capacity.availability_zone is not None
                ],
                cluster_name=cluster_name,
                lustre_mount_point=lustre_mount_point,
                users=users,
                lustre_given=lustre is not None,
            )
        )
        problems.raise_if_any()

    def _node_security_groups(self, eks_cluster: IGpuCluster | None) -> list[ec2.ISecurityGroup]:
        """The groups on the nodes: the EFA group and, on EKS, the cluster security group
        (HyperPod nodes join the cluster like managed nodes: it lets them reach the API
        server, CoreDNS and the system nodes, and back)."""
        groups: list[ec2.ISecurityGroup] = [self.efa_security_group]
        if eks_cluster is not None:
            groups.append(eks_cluster.cluster_security_group)
        return groups

    def _create_lifecycle(
        self,
        groups: Sequence[InstanceGroup],
        *,
        lustre: ILustreFileSystem | None,
        lustre_mount_point: str,
        prometheus: IRemoteWriteTarget | None,
        users: Sequence[ClusterUser],
        lustre_efa_clients: int | None,
        bucket: s3.IBucket | None,
    ) -> LifecycleScripts:
        """The lifecycle scripts and provisioning parameters in S3 (``Lifecycle``), readable
        by the execution role: the file system to mount (only its linked directories open to
        every user, the root stays as it is), the remote-write URL, the users and the EFA
        clients sharing the file system."""
        fsx = None
        if lustre is not None:
            fsx = {
                **fsx_parameters(lustre, lustre_mount_point),
                "shared_directories": [p for p in lustre.association_paths if p != "/"],
            }
        parameters = provisioning_parameters(
            orchestrator=self.orchestrator,
            cluster_name=self.cluster_name,
            region=Stack.of(self).region,
            instance_groups=groups,
            fsx=fsx,
            prometheus_remote_write_url=prometheus.remote_write_url if prometheus else None,
            users=users,
            efa_clients=lustre_efa_clients,
        )
        lifecycle = LifecycleScripts(self, "Lifecycle", parameters=parameters, bucket=bucket)
        lifecycle.grant_read(self.execution_role.role)
        return lifecycle

    def _allow_remote_write(
        self, prometheus: IRemoteWriteTarget, groups: Sequence[InstanceGroup]
    ) -> None:
        """Let the nodes' Prometheus agents remote-write; on Slurm with EFA workers, let the
        workers pull the EFA exporter image from the HyperPod ECR registry."""
        prometheus.grant_remote_write(self.execution_role.role)
        if self.orchestrator is Orchestrator.HYPERPOD_SLURM and any(
            worker_group_parameters(g)["efa"]
            for g in groups
            if g.slurm_node_type is SlurmNodeType.WORKER
        ):
            self.execution_role.allow_image_pull(efa_exporter_repository_arn(Stack.of(self)))

    def _create_cluster(
        self,
        subnet: ec2.ISubnet,
        node_security_groups: Sequence[ec2.ISecurityGroup],
        eks_cluster: IGpuCluster | None,
        node_recovery: NodeRecovery,
        removal_policy: RemovalPolicy,
    ) -> sagemaker.CfnCluster:
        """The ``CfnCluster`` (``Resource``) of the instance groups in ``subnet``, with node
        recovery and, on EKS, continuous provisioning (documented for EKS-orchestrated
        clusters only: botocore CreateClusterRequest.NodeProvisioningMode; Slurm clusters on
        the provisioning-parameters path take the default, as AWS's own samples do). It waits
        for the lifecycle scripts and the execution role and its policies (nodes read their
        scripts and use their permissions as soon as they boot) and, on EKS, for what HyperPod
        needs on the cluster; it is tagged ``SageMaker=true`` there (the training operator
        add-on is installed from the EKS console only on clusters so tagged) and the add-ons
        that need the cluster follow it."""
        # Imported where used: a profile without HyperPod does not load the module (~40 ms).
        from aws_cdk import aws_sagemaker as sagemaker

        role = self.execution_role.role
        cluster = sagemaker.CfnCluster(
            self,
            "Resource",
            cluster_name=self.cluster_name,
            orchestrator=self._orchestrator_property(eks_cluster),
            instance_groups=[self._group_property(g, role) for g in self.instance_groups],
            node_recovery=NodeRecovery(node_recovery).value,
            node_provisioning_mode="Continuous" if eks_cluster is not None else None,
            vpc_config=sagemaker.CfnCluster.VpcConfigProperty(
                security_group_ids=[g.security_group_id for g in node_security_groups],
                subnets=[subnet.subnet_id],
            ),
        )
        cluster.apply_removal_policy(removal_policy)
        cluster.node.add_dependency(self.lifecycle.deployment, role)
        cluster.node.add_dependency(self.execution_role.policy)
        for child in role.node.children:
            cluster.node.add_dependency(child)
        if self.eks_dependencies is not None:
            cluster.node.add_dependency(*self.eks_dependencies.prerequisites)
            Tags.of(cluster).add("SageMaker", "true")
            self.eks_dependencies.add_post_cluster_addons(cluster)
        return cluster

    def _group_property(
        self, group: InstanceGroup, role: iam.IRole
    ) -> sagemaker.CfnCluster.ClusterInstanceGroupProperty:
        from aws_cdk import aws_sagemaker as sagemaker

        storage = None
        if group.ebs_volume_size_gib is not None:
            storage = [
                sagemaker.CfnCluster.ClusterInstanceStorageConfigProperty(
                    ebs_volume_config=sagemaker.CfnCluster.ClusterEbsVolumeConfigProperty(
                        volume_size_in_gb=group.ebs_volume_size_gib,
                        volume_kms_key_id=group.ebs_kms_key.key_arn if group.ebs_kms_key else None,
                    )
                )
            ]
        kubernetes = None
        if self.orchestrator is Orchestrator.HYPERPOD_EKS:
            labels = hyperpod_node_labels(group)
            taints = [
                sagemaker.CfnCluster.ClusterKubernetesTaintProperty(
                    key=t.key, effect=t.effect, value=t.value
                )
                for t in group.kubernetes_taints
            ]
            if labels or taints:
                kubernetes = sagemaker.CfnCluster.ClusterKubernetesConfigProperty(
                    labels=labels or None, taints=taints or None
                )
        update = None
        if group.scheduled_update is not None:
            schedule = group.scheduled_update
            update = sagemaker.CfnCluster.ScheduledUpdateConfigProperty(
                schedule_expression=schedule.cron,
                deployment_config=sagemaker.CfnCluster.DeploymentConfigProperty(
                    rolling_update_policy=sagemaker.CfnCluster.RollingUpdatePolicyProperty(
                        maximum_batch_size=sagemaker.CfnCluster.CapacitySizeConfigProperty(
                            type="CAPACITY_PERCENTAGE", value=schedule.batch_percentage
                        )
                    ),
                    wait_interval_in_seconds=schedule.wait_interval_seconds,
                ),
            )
        patch = None
        if group.auto_patch is not None:
            patch = sagemaker.CfnCluster.AutoPatchConfigProperty(
                patching_strategy=PatchingStrategy(group.auto_patch).value
            )
        checks = [c.value for c in group.resolved_deep_health_checks]
        interface = group.network_interface_type
        return sagemaker.CfnCluster.ClusterInstanceGroupProperty(
            instance_group_name=group.name,
            instance_type=group.hyperpod_instance_type,
            instance_count=group.instance_count,
            execution_role=role.role_arn,
            life_cycle_config=sagemaker.CfnCluster.ClusterLifeCycleConfigProperty(
                source_s3_uri=self.lifecycle.source_s3_uri, on_create=self.lifecycle.on_create
            ),
            threads_per_core=group.resolved_threads_per_core,
            instance_storage_configs=storage,
            on_start_deep_health_checks=checks or None,
            training_plan_arn=group.training_plan_arn,
            kubernetes_config=kubernetes,
            image_id=group.image_id,
            network_interface=sagemaker.CfnCluster.ClusterNetworkInterfaceProperty(
                interface_type=interface
            )
            if interface is not None
            else None,
            scheduled_update_config=update,
            auto_patch_config=patch,
        )

    @staticmethod
    def _orchestrator_property(
        eks_cluster: IGpuCluster | None,
    ) -> sagemaker.CfnCluster.OrchestratorProperty | None:
        """EKS: the cluster ARN. Slurm: no Orchestrator at all, HyperPod's default, in which
        its agent writes slurm.conf from the lifecycle provisioning parameters (an empty
        ``Slurm`` block is rejected by the API, and a ``SlurmConfigStrategy`` would hand the
        partitions to a second mechanism)."""
        if eks_cluster is None:
            return None
        from aws_cdk import aws_sagemaker as sagemaker

        return sagemaker.CfnCluster.OrchestratorProperty(
            eks=sagemaker.CfnCluster.ClusterOrchestratorEksConfigProperty(
                cluster_arn=eks_cluster.cluster_arn
            )
        )
