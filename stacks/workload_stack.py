"""One accelerated workload (pre-training, post-training or inference) on the shared platform.

Built from a validated profile: the EFA security group, the capacity the profile names, a GPU
launch template with every EFA interface wired, and (for training) an FSx for Lustre file
system linked to the data bucket and reachable from the nodes.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.compute import CapacitySource, GpuLaunchTemplate
from fm_constructs.config import Orchestrator, PlatformConfig, WorkloadConfig
from fm_constructs.config.sizing import fsx_sizing_request
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.storage import IDataBucket, LustreFileSystem

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training (SFT, RL)",
    "inference": "inference",
}


class WorkloadStack(Stack):
    """Compute and storage of one workload; depends only on the platform stack."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        workload: WorkloadConfig,
        platform: PlatformConfig,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        data_bucket: IDataBucket,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {_TITLES[workload.name]}: {workload.instance_count} x "
            f"{workload.instance_type} in {platform.availability_zone}",
            **kwargs,
        )
        zone = platform.availability_zone
        self.efa_security_group = EfaSecurityGroup(
            self, "EfaSecurityGroup", vpc=vpc, description=f"EFA traffic of {workload.name} nodes"
        )
        self.capacity = CapacitySource.from_config(
            workload.capacity, availability_zone=zone, instance_type=workload.instance_type
        )
        self.launch_template: GpuLaunchTemplate | None = None
        if workload.orchestrator is Orchestrator.EKS:
            # HyperPod launches its own instances from instance groups: no launch template.
            self.launch_template = GpuLaunchTemplate(
                self,
                "LaunchTemplate",
                instance_type=workload.instance_type,
                efa_security_group=self.efa_security_group.security_group,
                efa_layout=workload.efa_layout,
                capacity=self.capacity,
                subnet_availability_zone=zone,
                node_count=workload.instance_count,
                root_volume_size_gib=workload.root_volume_size_gib,
            )
            CfnOutput(
                self,
                "LaunchTemplateId",
                value=self.launch_template.launch_template_id,
                description="GPU launch template (every EFA interface, IMDSv2, NVMe RAID0)",
            )

        self.file_system: LustreFileSystem | None = None
        storage = workload.storage
        if storage.enabled:
            self.file_system = LustreFileSystem(
                self,
                "FileSystem",
                vpc=vpc,
                subnet=subnet,
                data_bucket=data_bucket,
                storage_capacity_gib=storage.storage_capacity_gib,
                throughput_mb_s_per_tib=storage.throughput_mb_s_per_tib,
                sizing=fsx_sizing_request(storage),
                metadata_iops=storage.metadata_iops,
                efa_enabled=storage.efa_enabled,
                automatic_backup_retention_days=storage.backup_retention_days,
            )
            self.file_system.connections.allow_default_port_from(self.efa_security_group)
            CfnOutput(self, "FileSystemId", value=self.file_system.file_system_id)
            CfnOutput(
                self,
                "MountCommand",
                value=self.file_system.mount_command("/fsx"),
                description="Mount the Lustre file system on a node (as root)",
            )
        CfnOutput(
            self,
            "EfaSecurityGroupId",
            value=self.efa_security_group.security_group_id,
            description="Attach to every EFA interface of this workload's nodes",
        )
