"""One accelerated workload (pre-training, post-training or inference) on the shared platform.

Built from a validated profile: FSx for Lustre linked to the data bucket (training), the capacity
the profile names, and the orchestrator: an EKS cluster with an EFA node group, scraped into the
shared Prometheus workspace.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.compute import CapacitySource
from fm_constructs.config import Orchestrator, PlatformConfig, WorkloadConfig
from fm_constructs.config.sizing import fsx_sizing_request
from fm_constructs.observability import FsxLustreAlarms
from fm_constructs.orchestration import EfaNodeGroup, WorkloadOperators
from fm_constructs.orchestration.hyperpod import InstanceGroup
from fm_constructs.orchestration.hyperpod import Orchestrator as HyperPodOrchestrator
from fm_constructs.patterns import (
    AutoscalingPolicy,
    EksAcceleratedWorkload,
    HyperPodAcceleratedWorkload,
    InferenceService,
    ModelServerSpec,
    ObservabilityPlatform,
)
from fm_constructs.storage import IDataBucket, LustreFileSystem

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training (SFT, RL)",
    "inference": "inference",
}

#: Kubernetes operators each workload expects: Kueue and Kubeflow Trainer for training jobs,
#: KubeRay for RL post-training, LeaderWorkerSet for multi-node serving.
OPERATORS = {
    "pretraining": WorkloadOperators(kueue=True, kubeflow_trainer=True),
    "post_training": WorkloadOperators(kueue=True, kubeflow_trainer=True, kuberay=True),
    "inference": WorkloadOperators(kueue=False, kubeflow_trainer=False, leader_worker_set=True),
}


#: Node label and group name of the RL rollout (generation) nodes.
ROLE_LABEL = "workload-role"
ROLLOUT_GROUP = "rollout"

HYPERPOD_ORCHESTRATORS = {
    Orchestrator.HYPERPOD_SLURM: HyperPodOrchestrator.SLURM,
    Orchestrator.HYPERPOD_EKS: HyperPodOrchestrator.EKS,
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
        observability: ObservabilityPlatform | None,
        shared_file_system: LustreFileSystem | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {_TITLES[workload.name]}: {workload.instance_count} x "
            f"{workload.instance_type} in {platform.availability_zone}",
            **kwargs,
        )
        self.owns_file_system = shared_file_system is None
        self.file_system = shared_file_system or self._file_system(
            workload, vpc, subnet, data_bucket
        )
        fs = self.file_system
        if (
            fs is not None
            and self.owns_file_system
            and fs.throughput_mb_s_per_tib is not None
            and observability is not None
        ):
            FsxLustreAlarms(
                self,
                "FileSystemAlarms",
                file_system_id=fs.file_system_id,
                storage_capacity_gib=fs.storage_capacity_gib,
                per_unit_storage_throughput_mb_s_per_tib=fs.throughput_mb_s_per_tib,
                alert_topic=observability.alert_topic,
            )
        capacity = CapacitySource.from_config(
            workload.capacity,
            availability_zone=platform.availability_zone,
            instance_type=workload.instance_type,
        )
        cluster_access: dict[str, Any] = {
            "kubernetes_version": platform.kubernetes_version,
            "admin_role_arns": platform.admin_role_arns,
            "public_access_cidrs": platform.public_access_cidrs,
            "operators": OPERATORS[workload.name],
            "scraper_subnets": vpc.private_subnets,
        }
        self.compute: EksAcceleratedWorkload | HyperPodAcceleratedWorkload
        if workload.orchestrator is Orchestrator.EKS:
            self.compute = EksAcceleratedWorkload(
                self,
                "Eks",
                vpc=vpc,
                gpu_subnet=subnet,
                instance_type=workload.instance_type,
                node_count=workload.instance_count,
                capacity=capacity,
                efa_layout=workload.efa_layout,
                root_volume_size_gib=workload.root_volume_size_gib,
                max_node_count=workload.max_instance_count,
                file_system=self.file_system,
                workspace=observability.prometheus if observability is not None else None,
                training_workload=None if workload.name == "inference" else workload.name,
                **cluster_access,
            )
        else:
            self.compute = HyperPodAcceleratedWorkload(
                self,
                "HyperPod",
                vpc=vpc,
                gpu_subnet=subnet,
                orchestrator=HYPERPOD_ORCHESTRATORS[workload.orchestrator],
                instance_type=workload.instance_type,
                node_count=workload.instance_count,
                capacity=capacity,
                file_system=self.file_system,
                workspace=observability.prometheus if observability is not None else None,
                alert_topic=observability.alert_topic if observability is not None else None,
                extra_instance_groups=self._rollout_instance_groups(workload),
                efa_layout=workload.efa_layout,
                **cluster_access,
            )
        self.rollout_nodes = self._rollout_node_group(workload, subnet)
        self.model_server = self._model_server(workload, data_bucket, observability)
        self._outputs(platform)

    def _model_server(
        self,
        workload: WorkloadConfig,
        data_bucket: IDataBucket,
        observability: ObservabilityPlatform | None,
    ) -> InferenceService | None:
        """Inference: the vLLM server of ``[inference.model]`` on the EKS GPU nodes, behind the
        chosen load balancer, autoscaled on its serving metric from Prometheus."""
        model = workload.model
        if not model.enabled or not isinstance(self.compute, EksAcceleratedWorkload):
            return None
        optional: dict[str, Any] = {"image": model.image, "max_model_len": model.max_model_len}
        spec = ModelServerSpec(
            model_s3_prefix=model.model_s3_prefix or "",
            served_model_name=model.served_model_name or "",
            tensor_parallel_size=model.tensor_parallel_size,
            pipeline_parallel_size=model.pipeline_parallel_size,
            replicas=model.replicas,
            max_replicas=model.max_replicas or model.replicas,
            gpu_memory_utilization=model.gpu_memory_utilization,
            **{key: value for key, value in optional.items() if value is not None},
        )
        scaling = workload.autoscaling
        autoscaling = (
            AutoscalingPolicy(metric=scaling.metric, target=scaling.target)
            if scaling.enabled and observability is not None and spec.max_replicas > spec.replicas
            else None
        )
        return InferenceService(
            self,
            "ModelServer",
            cluster=self.compute.cluster,
            gpu_nodes=self.compute.gpu_nodes,
            model=spec,
            data_bucket=data_bucket,
            load_balancer=workload.load_balancer,
            autoscaling=autoscaling,
            workspace=observability.prometheus if observability is not None else None,
        )

    def _rollout_instance_groups(self, workload: WorkloadConfig) -> list[InstanceGroup]:
        """HyperPod: the RL rollout group joins the cluster (its own Slurm partition)."""
        rollout = workload.rollout
        if not rollout.enabled:
            return []
        return [
            InstanceGroup(
                name=ROLLOUT_GROUP,
                instance_type=rollout.instance_type,
                instance_count=rollout.instance_count,
                partition_name="rollout"
                if workload.orchestrator is Orchestrator.HYPERPOD_SLURM
                else None,
                efa_layout=workload.efa_layout,
            )
        ]

    def _rollout_node_group(
        self, workload: WorkloadConfig, subnet: ec2.ISubnet
    ) -> EfaNodeGroup | None:
        """EKS: the RL rollout group as a second EFA node group on the same cluster, labelled and
        tainted ``workload-role=rollout``: generation workers (vLLM/Ray) select and tolerate
        it, trainer pods (which do not tolerate the taint) never land there."""
        rollout = workload.rollout
        if not rollout.enabled or not isinstance(self.compute, EksAcceleratedWorkload):
            return None
        return EfaNodeGroup(
            self,
            "RolloutNodes",
            cluster=self.compute.cluster,
            instance_type=rollout.instance_type,
            subnet=subnet,
            desired_size=rollout.instance_count,
            efa_security_group=self.compute.efa_security_group,
            efa_layout=workload.efa_layout,
            labels={ROLE_LABEL: ROLLOUT_GROUP},
            taints={ROLE_LABEL: ROLLOUT_GROUP},
        )

    def _file_system(
        self,
        workload: WorkloadConfig,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        data_bucket: IDataBucket,
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
            storage_capacity_gib=storage.storage_capacity_gib,
            throughput_mb_s_per_tib=storage.throughput_mb_s_per_tib,
            sizing=fsx_sizing_request(storage),
            metadata_iops=storage.metadata_iops,
            efa_enabled=storage.efa_enabled,
            automatic_backup_retention_days=storage.backup_retention_days,
        )

    def _outputs(self, platform: PlatformConfig) -> None:
        compute = self.compute
        eks_cluster = (
            compute.cluster if isinstance(compute, EksAcceleratedWorkload) else compute.eks_cluster
        )
        if eks_cluster is not None:
            CfnOutput(self, "EksClusterName", value=eks_cluster.cluster_name)
            CfnOutput(
                self,
                "KubeconfigCommand",
                value=f"aws eks update-kubeconfig --region {platform.region} "
                f"--name {eks_cluster.cluster_name}",
                description="Then: kubectl get nodes -L node.kubernetes.io/instance-type",
            )
        if isinstance(compute, EksAcceleratedWorkload):
            CfnOutput(
                self,
                "GpuNodeGroup",
                value=compute.gpu_nodes.nodegroup_name,
                description="Managed node group of the EFA-connected accelerated nodes",
            )
        else:
            CfnOutput(
                self,
                "HyperPodClusterName",
                value=compute.cluster.cluster_name,
                description="aws sagemaker list-cluster-nodes --cluster-name <this>",
            )
        if self.rollout_nodes is not None:
            CfnOutput(
                self,
                "RolloutNodeGroup",
                value=self.rollout_nodes.nodegroup_name,
                description="Rollout nodes: generation workers select workload-role=rollout",
            )
        if self.model_server is not None:
            CfnOutput(
                self,
                "ModelEndpointCommand",
                value=f"kubectl -n {self.model_server.namespace} get service "
                f"{self.model_server.service_name}",
                description="OpenAI-compatible API of the model server (port 80 of the NLB)",
            )
        if self.file_system is not None:
            CfnOutput(self, "FileSystemId", value=self.file_system.file_system_id)
            CfnOutput(
                self,
                "MountCommand",
                value=self.file_system.mount_command("/fsx"),
                description="Mount on a node as root (HyperPod nodes mount it at /fsx)",
            )
