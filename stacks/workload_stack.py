"""One accelerated workload's own stacks on the shared platform.

- :class:`WorkloadStack` (``<name>-<workload>``): what the workload keeps across redeploys,
  its FSx for Lustre file system (linked to the data bucket) and the file system's alarms;
  for a HyperPod workload also the HyperPod cluster. It depends on the platform only (and, for
  HyperPod on EKS, on the cluster), so the file system is created while the cluster is.
- :class:`WorkloadComputeStack` (``<name>-<workload>-compute``, EKS): the workload's node
  groups and Kubernetes objects on its cluster, built by the workload's pattern. A node group
  that cannot get capacity fails this stack only; the cluster, the file system and the other
  workloads stay, and ``cdk deploy <name>-<workload>-compute`` retries it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aws_cdk import CfnOutput, CfnParameter, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs import pins
from fm_constructs.compute import CapacitySource
from fm_constructs.config import (
    InferenceConfig,
    Orchestrator,
    PlatformConfig,
    PostTrainingConfig,
    PretrainingConfig,
    TrainingWorkloadConfig,
    WorkloadConfig,
)
from fm_constructs.config.options import (
    DATA_OUTPUTS,
    FSX_DIRECTORIES,
    OPERATORS,
    ROLLOUT_POOL,
    WorkloadOptions,
)
from fm_constructs.config.rules import efa_layout_of
from fm_constructs.config.sizing import workload_fsx_sizing_request
from fm_constructs.orchestration import GpuEksCluster, WorkloadOperators
from fm_constructs.orchestration.hyperpod import InstanceGroup
from fm_constructs.patterns import (
    AutoscalingPolicy,
    HyperPodAcceleratedWorkload,
    InferenceWorkload,
    ModelServerSpec,
    ObservabilityPlatform,
    PostTrainingWorkload,
    PretrainingWorkload,
)
from fm_constructs.patterns.pcs_workload import PcsAcceleratedWorkload
from fm_constructs.storage import IDataBucket, LustreFileSystem, workload_associations

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training (SFT, RL)",
    "inference": "inference",
}

#: Context value (``cdk synth -c pcs_ami_id=ami-...``) naming the AMI of AWS PCS nodes.
PCS_AMI_CONTEXT = "pcs_ami_id"


class WorkloadStack(Stack):
    """The file system of one workload (and its HyperPod cluster, for HyperPod workloads)."""

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
        observability: ObservabilityPlatform | None,
        shared_file_system: LustreFileSystem | None = None,
        eks_cluster: GpuEksCluster | None = None,
        defer_associations: bool = False,
        file_system_efa_clients: int | None = None,
        **kwargs: Any,
    ) -> None:
        """``defer_associations``: leave the file system's data repository associations to the
        workload's compute stack (EKS), which creates them while its nodes start.
        ``file_system_efa_clients``: the HyperPod Slurm nodes of every workload that mounts the
        file system over EFA (LNet on each node keeps to its share of the EFA connections)."""
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {_TITLES[workload.name]}: {workload.instance_count} x "
            f"{workload.instance_type} in {platform.availability_zone}",
            **kwargs,
        )
        self.owns_file_system = shared_file_system is None
        self.file_system = shared_file_system or self._file_system(
            workload, vpc, subnet, data_bucket, defer_associations
        )
        fs = self.file_system
        if fs is not None and self.owns_file_system and observability is not None:
            observability.monitor_lustre(self, "FileSystemAlarms", file_system=fs)
        self.compute: HyperPodAcceleratedWorkload | None = None
        self.pcs: PcsAcceleratedWorkload | None = None
        if workload.orchestrator is Orchestrator.PCS:
            self.pcs = self._pcs(
                workload, platform, vpc, subnet, observability, file_system_efa_clients
            )
        elif workload.orchestrator is not Orchestrator.EKS:
            self.compute = self._hyperpod(
                workload, platform, vpc, subnet, observability, eks_cluster, file_system_efa_clients
            )
        if fs is not None:
            CfnOutput(self, "FileSystemId", value=fs.file_system_id)
            CfnOutput(
                self,
                "MountCommand",
                value=fs.mount_command("/fsx"),
                description="Mount on a node as root (HyperPod nodes mount it at /fsx)",
            )

    def _hyperpod(
        self,
        workload: WorkloadConfig,
        platform: PlatformConfig,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        observability: ObservabilityPlatform | None,
        eks_cluster: GpuEksCluster | None,
        file_system_efa_clients: int | None,
    ) -> HyperPodAcceleratedWorkload:
        capacity = CapacitySource.from_config(
            workload.capacity,
            availability_zone=platform.availability_zone,
            instance_type=workload.instance_type,
        )
        compute = HyperPodAcceleratedWorkload(
            self,
            "HyperPod",
            vpc=vpc,
            gpu_subnet=subnet,
            orchestrator=workload.orchestrator,
            instance_type=workload.instance_type,
            node_count=workload.instance_count,
            capacity=capacity,
            file_system=self.file_system,
            workspace=observability.prometheus if observability is not None else None,
            alert_topic=observability.alert_topic if observability is not None else None,
            extra_instance_groups=self._rollout_instance_groups(workload),
            kubernetes_version=platform.kubernetes_version,
            admin_role_arns=platform.admin_role_arns,
            public_access_cidrs=platform.public_access_cidrs,
            operators=WorkloadOperators.named(OPERATORS[workload.name]),
            scraper_subnets=vpc.private_subnets,
            eks_cluster=eks_cluster,
            name=workload.name,
            training=workload.name != "inference",
            efa_layout=workload.efa_layout,
            users=workload.users if isinstance(workload, TrainingWorkloadConfig) else (),
            file_system_efa_clients=file_system_efa_clients,
        )
        if compute.eks_cluster is not None and eks_cluster is None:
            CfnOutput(self, "EksClusterName", value=compute.eks_cluster.cluster_name)
        CfnOutput(
            self,
            "HyperPodClusterName",
            value=compute.cluster.cluster_name,
            description="aws sagemaker list-cluster-nodes --cluster-name <this>",
        )
        return compute

    def _pcs(
        self,
        workload: WorkloadConfig,
        platform: PlatformConfig,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        observability: ObservabilityPlatform | None,
        file_system_efa_clients: int | None,
    ) -> PcsAcceleratedWorkload:
        """AWS PCS: the cluster, login and accelerated node groups and the queue. The nodes'
        AMI comes from the ``pcs_ami_id`` context value, else from the stack parameter
        ``PcsAmiId`` at deploy time (no AMI id is pinned; see docs/blocks/pcs.md)."""
        ami_id = self.node.try_get_context(PCS_AMI_CONTEXT)
        if not ami_id:
            ami_id = CfnParameter(
                self,
                "PcsAmiId",
                type="AWS::EC2::Image::Id",
                description="AMI of the PCS nodes: Ubuntu with the PCS agent, Slurm "
                f"{pins.pcs().slurm_version} (PCS installer), NVIDIA and EFA drivers",
            ).value_as_string
        capacity = CapacitySource.from_config(
            workload.capacity,
            availability_zone=platform.availability_zone,
            instance_type=workload.instance_type,
        )
        compute = PcsAcceleratedWorkload(
            self,
            "Pcs",
            vpc=vpc,
            gpu_subnet=subnet,
            instance_type=workload.instance_type,
            node_count=workload.instance_count,
            ami_id=str(ami_id),
            capacity=capacity,
            file_system=self.file_system,
            efa_layout=workload.efa_layout,
            workspace=observability.prometheus if observability is not None else None,
            name=workload.name,
            file_system_efa_clients=file_system_efa_clients,
        )
        CfnOutput(self, "PcsClusterId", value=compute.cluster.cluster_id)
        login_group = compute.login.compute_node_group_id
        CfnOutput(
            self,
            "LoginNodeCommand",
            value=(
                "aws ec2 describe-instances --filters "
                f"Name=tag:aws:pcs:compute-node-group-id,Values={login_group} "
                "--query 'Reservations[].Instances[].InstanceId' --output text"
            ),
            description="The login node's instance id; then aws ssm start-session --target <id>",
        )
        CfnOutput(
            self,
            "Queue",
            value=compute.queue.queue_name,
            description="Slurm partition of the accelerated nodes (sbatch -p <this>)",
        )
        return compute

    @staticmethod
    def _rollout_instance_groups(workload: WorkloadConfig) -> list[InstanceGroup]:
        """HyperPod: the RL rollout group joins the cluster (its own Slurm partition)."""
        rollout = workload.rollout_group
        if rollout is None:
            return []
        return [
            InstanceGroup(
                name=ROLLOUT_POOL,
                instance_type=rollout.instance_type,
                instance_count=rollout.instance_count,
                partition_name=ROLLOUT_POOL
                if workload.orchestrator is Orchestrator.HYPERPOD_SLURM
                else None,
                efa_layout=workload.efa_layout,
            )
        ]

    def _file_system(
        self,
        workload: WorkloadConfig,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        data_bucket: IDataBucket,
        defer_associations: bool,
    ) -> LustreFileSystem | None:
        storage = workload.storage
        if not storage.enabled:
            return None
        return LustreFileSystem(
            self,
            "FileSystem",
            vpc=vpc,
            subnet=subnet,
            data_bucket=data_bucket,
            # One association per directory; only the workload's own outputs are exported.
            associations=workload_associations(
                FSX_DIRECTORIES[workload.name],
                DATA_OUTPUTS[workload.name],
                bucket_name=data_bucket.bucket_name,
            ),
            storage_capacity_gib=storage.storage_capacity_gib,
            throughput_mb_s_per_tib=storage.throughput_mb_s_per_tib,
            sizing=workload_fsx_sizing_request(workload),
            metadata_iops=storage.metadata_iops,
            efa_enabled=storage.efa_enabled,
            automatic_backup_retention_days=storage.backup_retention_days,
            defer_associations=defer_associations,
        )


class WorkloadComputeStack(Stack):
    """One EKS workload's node groups and Kubernetes objects, on its cluster (one statement:
    the workload's pattern)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        workload: WorkloadConfig,
        options: WorkloadOptions,
        platform: PlatformConfig,
        cluster: GpuEksCluster,
        max_pods_per_node: int | None = None,
        subnet: ec2.ISubnet,
        node_group_subnets: Mapping[str, Sequence[ec2.ISubnet]] | None = None,
        data_bucket: IDataBucket,
        observability: ObservabilityPlatform | None,
        file_system: LustreFileSystem | None,
        **kwargs: Any,
    ) -> None:
        pools = " + ".join(f"{p.max_size} x {p.instance_type}" for p in options.node_pools)
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {_TITLES[workload.name]} nodes and Kubernetes objects: "
            f"{pools}",
            **kwargs,
        )
        capacity = CapacitySource.from_config(
            workload.capacity,
            availability_zone=platform.availability_zone,
            instance_type=workload.instance_type,
        )
        common: dict[str, Any] = {
            "cluster": cluster,
            "subnet": subnet,
            "instance_type": workload.instance_type,
            "node_count": workload.instance_count,
            "capacity": capacity,
            "data_bucket": data_bucket,
            "efa_layout": efa_layout_of(workload),
            "root_volume_size_gib": workload.root_volume_size_gib,
            "session_manager": workload.session_manager,
            "max_pods_per_node": max_pods_per_node,
            "launch_template_version": workload.launch_template_version,
            "node_group_subnets": node_group_subnets,
        }
        self.workload: PretrainingWorkload | PostTrainingWorkload | InferenceWorkload
        if isinstance(workload, PretrainingConfig):
            self.workload = PretrainingWorkload(self, "Workload", file_system=file_system, **common)
        elif isinstance(workload, PostTrainingConfig):
            rollout = workload.rollout
            self.workload = PostTrainingWorkload(
                self,
                "Workload",
                file_system=file_system,
                rollout_instance_type=rollout.instance_type if rollout.enabled else None,
                rollout_node_count=rollout.instance_count,
                rollout_launch_template_version=rollout.launch_template_version,
                **common,
            )
        else:
            assert isinstance(workload, InferenceConfig), workload.name
            self.workload = InferenceWorkload(
                self,
                "Workload",
                max_node_count=options.node_pools[0].max_size,
                file_system=file_system,
                model=_model_spec(workload),
                load_balancer=workload.load_balancer,
                load_balancer_source_ranges=list(workload.load_balancer_source_ranges) or None,
                autoscaling=_autoscaling(workload, observability),
                workspace=observability.prometheus if observability is not None else None,
                **common,
            )
        self._outputs()

    def _outputs(self) -> None:
        eks_workload = self.workload.workload
        for pool, parts in eks_workload.node_group_parts.items():
            for index, group in enumerate(parts):
                suffix = "" if index == 0 else str(index + 1)
                CfnOutput(
                    self,
                    ("GpuNodeGroup" if pool == "gpu" else f"{pool.capitalize()}NodeGroup") + suffix,
                    value=group.nodegroup_name,
                    description=f"Managed node group of the {pool} pool "
                    f"(kubectl get nodes -l fm-constructs/node-pool={group.node_pool})",
                )
        CfnOutput(
            self,
            "Namespace",
            value=eks_workload.namespace,
            description=f"Jobs run here as {eks_workload.service_account} and queue on "
            f"{eks_workload.local_queue_name} (kueue.x-k8s.io/queue-name)",
        )
        server = getattr(self.workload, "model_server", None)
        if server is not None:
            CfnOutput(
                self,
                "ModelEndpointCommand",
                value=f"kubectl -n {server.namespace} get service {server.service_name}",
                description="OpenAI-compatible API of the model server (port 80 of the NLB)",
            )


def _model_spec(workload: InferenceConfig) -> ModelServerSpec | None:
    model = workload.model
    if not model.enabled:
        return None
    optional: dict[str, Any] = {"image": model.image, "max_model_len": model.max_model_len}
    return ModelServerSpec(
        model_s3_prefix=model.model_s3_prefix or "",
        served_model_name=model.served_model_name or "",
        tensor_parallel_size=model.tensor_parallel_size,
        pipeline_parallel_size=model.pipeline_parallel_size,
        replicas=model.replicas,
        max_replicas=model.max_replicas or model.replicas,
        gpu_memory_utilization=model.gpu_memory_utilization,
        **{key: value for key, value in optional.items() if value is not None},
    )


def _autoscaling(
    workload: InferenceConfig, observability: ObservabilityPlatform | None
) -> AutoscalingPolicy | None:
    model = workload.model
    scaling = workload.autoscaling
    if not model.enabled or not scaling.enabled or observability is None:
        return None
    if (model.max_replicas or model.replicas) <= model.replicas:
        return None
    return AutoscalingPolicy(metric=scaling.metric, target=scaling.target)
