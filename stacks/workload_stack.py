"""One accelerated workload's own stacks on the shared platform.

- :class:`WorkloadStack` (``<name>-<workload>``): what the workload keeps across redeploys,
  its FSx for Lustre file system (linked to the data bucket) and the file system's alarms;
  for a HyperPod or AWS PCS workload also its cluster. It depends on the platform only (and,
  for HyperPod on EKS, on the cluster), so the file system is created while the cluster is.
- :class:`WorkloadComputeStack` (``<name>-<workload>-compute``, EKS): the workload's node
  groups and Kubernetes objects on its cluster, built by the workload's pattern. A node group
  that cannot get capacity fails this stack only; the cluster, the file system and the other
  workloads stay, and ``cdk deploy <name>-<workload>-compute`` retries it.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fm_constructs.domain import names
from fm_constructs.patterns.deployment import Deployment

_TITLES = {
    "pretraining": "pre-training",
    "post_training": "post-training (SFT, RL)",
    "inference": "inference",
}

#: Context value (``cdk synth -c pcs_ami_id=ami-...``) naming the AMI of AWS PCS nodes; without
#: it the stack parameter ``PcsAmiId`` gives it at deploy time (see docs/blocks/pcs.md).
PCS_AMI_CONTEXT = "pcs_ami_id"


class WorkloadStack(Stack):
    """The file system of one workload (and its HyperPod or AWS PCS cluster)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        deployment: Deployment,
        workload: str,
        **kwargs: Any,
    ) -> None:
        w = deployment.options.workloads[workload]
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {_TITLES[w.name]}: {w.instance_count} x "
            f"{w.instance_type} in {w.availability_zone}",
            **kwargs,
        )
        ami_id = self.node.try_get_context(PCS_AMI_CONTEXT)
        built = deployment.build_workload(
            self, workload, pcs_ami_id=str(ami_id) if ami_id else None
        )
        self.file_system, self.owns_file_system = built.file_system, built.owns_file_system
        self.compute, self.pcs = built.hyperpod, built.pcs
        if self.compute is not None:
            if self.compute.eks_cluster is not None and w.cluster is None:
                CfnOutput(self, "EksClusterName", value=self.compute.eks_cluster.cluster_name)
            CfnOutput(
                self,
                "HyperPodClusterName",
                value=self.compute.cluster.cluster_name,
                description="aws sagemaker list-cluster-nodes --cluster-name <this>",
            )
        if self.pcs is not None:
            self._pcs_outputs()
        if self.file_system is not None:
            CfnOutput(self, "FileSystemId", value=self.file_system.file_system_id)
            CfnOutput(
                self,
                "MountCommand",
                value=self.file_system.mount_command("/fsx"),
                description="Mount on a node as root (HyperPod nodes mount it at /fsx)",
            )

    def _pcs_outputs(self) -> None:
        assert self.pcs is not None
        CfnOutput(self, "PcsClusterId", value=self.pcs.cluster.cluster_id)
        login_group = self.pcs.login.compute_node_group_id
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
            value=self.pcs.queue.queue_name,
            description="Slurm partition of the accelerated nodes (sbatch -p <this>)",
        )


class WorkloadComputeStack(Stack):
    """One EKS workload's node groups and Kubernetes objects, on its cluster (one statement:
    the workload's pattern)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        deployment: Deployment,
        workload: str,
        **kwargs: Any,
    ) -> None:
        w = deployment.options.workloads[workload]
        pools = " + ".join(f"{p.max_size} x {p.instance_type}" for p in w.node_pools)
        super().__init__(
            scope,
            construct_id,
            description=f"fm-constructs {_TITLES[w.name]} nodes and Kubernetes objects: {pools}",
            **kwargs,
        )
        self.workload = deployment.build_workload_nodes(self, workload)
        eks_workload = self.workload.workload
        for pool, parts in eks_workload.node_group_parts.items():
            for index, group in enumerate(parts):
                suffix = "" if index == 0 else str(index + 1)
                CfnOutput(
                    self,
                    ("GpuNodeGroup" if pool == "gpu" else f"{pool.capitalize()}NodeGroup") + suffix,
                    value=group.nodegroup_name,
                    description=f"Managed node group of the {pool} pool "
                    f"(kubectl get nodes -l {names.NODE_POOL_LABEL}={group.node_pool})",
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
