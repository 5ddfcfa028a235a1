"""An accelerated training workload on AWS PCS (managed Slurm), wired to FSx for Lustre."""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs import pins
from fm_constructs.catalog import get_instance_type
from fm_constructs.compute import CapacitySource
from fm_constructs.network.efa_security_group import EfaSecurityGroup
from fm_constructs.observability import IPrometheusWorkspace
from fm_constructs.orchestration.hyperpod import LifecycleScripts
from fm_constructs.orchestration.pcs import (
    PcsCluster,
    PcsComputeNodeGroup,
    PcsInstanceRole,
    PcsQueue,
)
from fm_constructs.orchestration.pcs.user_data import job_hook_settings, node_parameters
from fm_constructs.orchestration.slurm import fsx_parameters
from fm_constructs.patterns.observability import MonitoringFacade
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.pcs_limits import LOGIN_INSTANCE_TYPE
from fm_constructs.storage.imported_lustre import ILustreFileSystem

#: The node groups and the queue, by name (the queue is the Slurm partition: sbatch -p).
LOGIN_GROUP = "login"
ACCELERATED_GROUP = "accelerated"
QUEUE_NAME = "accelerated"
MOUNT_POINT = "/fsx"


class PcsAcceleratedWorkload(Construct):
    """A PCS cluster for one workload, in one statement.

    The cluster (pinned Slurm, size for its nodes, accounting on, HyperPod's job hooks as its
    ``Prolog`` and ``Epilog``, installed on every compute node), the node role PCS accepts,
    a login node and ``node_count`` accelerated nodes of ``instance_type`` on ``capacity``
    (every EFA card wired, EFA security group), one queue over them, and ``file_system``
    mounted at ``/fsx`` on every node by the shared node scripts (LNet over EFA where the file
    system has EFA; ``file_system_efa_clients``: the EFA nodes of every cluster mounting it).
    ``ami_id``: an AMI with the PCS agent, the pinned Slurm version, NVIDIA and EFA drivers
    (Ubuntu; see docs/blocks/pcs.md). ``workspace``: the nodes remote-write the exporters of
    HyperPod Slurm (node, DCGM, EFA; Slurm from the login node) to it, labelled with the
    cluster and the workload ``name``. Users reach the login node through Session Manager; the
    accelerated nodes' role allows it only with ``session_manager``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        gpu_subnet: ec2.ISubnet,
        instance_type: str,
        node_count: int,
        ami_id: str,
        capacity: CapacitySource | None = None,
        file_system: ILustreFileSystem | None = None,
        efa_layout: EfaLayout = EfaLayout.EFA_ONLY,
        login_instance_type: str = LOGIN_INSTANCE_TYPE,
        file_system_efa_clients: int | None = None,
        workspace: IPrometheusWorkspace | None = None,
        name: str = "pretraining",
        session_manager: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        spec = get_instance_type(instance_type)
        slurm_version = pins.pcs().slurm_version
        # HyperPod's job hooks, which every compute node installs (pcs_node.sh), as the
        # cluster's Prolog and Epilog: the first job is checked and mapped as on HyperPod.
        self.cluster = PcsCluster(
            self,
            "Cluster",
            vpc=vpc,
            subnet=gpu_subnet,
            node_count=node_count + 1,
            slurm_version=slurm_version,
            slurm_settings=job_hook_settings(slurm_version),
        )
        self.efa_security_group = EfaSecurityGroup(
            self,
            "EfaSecurityGroup",
            vpc=vpc,
            description="PCS accelerated nodes: EFA (all traffic within the group), FSx",
        )
        #: The accelerated nodes' role (Session Manager only with ``session_manager``) and the
        #: login node's, which has it: how users reach the cluster.
        self.node_role = PcsInstanceRole(self, "NodeRole", session_manager=session_manager)
        self.login_role = PcsInstanceRole(self, "LoginNodeRole", session_manager=True)
        self.file_system = file_system
        fsx = None
        if file_system is not None:
            # Lustre clients: TCP 988 and 1018-1023, all traffic with an EFA file system.
            file_system.connections.allow_default_port_from(self.efa_security_group)
            file_system.connections.allow_default_port_from(self.cluster)
            fsx = fsx_parameters(file_system, MOUNT_POINT)
        login_spec_name = login_instance_type
        stack = Stack.of(self)
        parameters = node_parameters(
            node_groups=[(ACCELERATED_GROUP, spec)],
            fsx=fsx,
            efa_clients=file_system_efa_clients or node_count,
            slurm_version=self.cluster.slurm_version,
            cluster_name=self.cluster.cluster_name,
            region=stack.region,
            workload=name,
            prometheus_remote_write_url=workspace.remote_write_url if workspace else None,
        )
        parameters["node_groups"].append(
            {"name": LOGIN_GROUP, "instance_type": login_spec_name, "lnet_efa_interfaces": 0}
        )
        self.scripts = LifecycleScripts(self, "NodeScripts", parameters=parameters)
        monitoring = MonitoringFacade(workspace=workspace)
        for role, efa in ((self.node_role, spec.efa_supported), (self.login_role, False)):
            self.scripts.grant_read(role.role)
            monitoring.monitor_pcs(node_role=role, efa=efa)
        common: dict[str, Any] = {
            "cluster": self.cluster,
            "subnet": gpu_subnet,
            "ami_id": ami_id,
            "scripts_uri": self.scripts.source_s3_uri,
        }
        self.login = PcsComputeNodeGroup.login(
            self,
            "LoginNodes",
            instance_type=login_instance_type,
            group_name=LOGIN_GROUP,
            instance_profile=self.login_role,
            **common,
        )
        self.accelerated = PcsComputeNodeGroup.accelerated(
            self,
            "AcceleratedNodes",
            instance_profile=self.node_role,
            instance_type=instance_type,
            node_count=node_count,
            capacity=capacity,
            efa_layout=efa_layout,
            efa_security_group=self.efa_security_group,
            group_name=ACCELERATED_GROUP,
            **common,
        )
        #: What every workload offers (IAcceleratedWorkload): the accelerated nodes' EFA group,
        #: their role and the Slurm partition of the queue (``sbatch -p``).
        self.connections: ec2.Connections = self.efa_security_group.connections
        self.node_roles: list[iam.IRole] = [self.node_role.role, self.login_role.role]
        self.queue_names: tuple[str, ...] = (QUEUE_NAME,)
        self.queue = PcsQueue(
            self,
            "Queue",
            cluster=self.cluster,
            node_groups=[self.accelerated],
            queue_name=QUEUE_NAME,
        )
