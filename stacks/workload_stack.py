"""One accelerated workload's own stacks on the shared platform: :class:`WorkloadStack`
(``<name>-<workload>``: what it keeps across redeploys, its FSx for Lustre file system and its
alarms, and its HyperPod or AWS PCS cluster) and, on EKS, :class:`WorkloadComputeStack`
(``<name>-<workload>-compute``: its node groups and Kubernetes objects on its cluster). A node
group that cannot get capacity fails its compute stack only; ``cdk deploy`` retries it."""

from __future__ import annotations

from fm_constructs.domain import names
from fm_constructs.patterns.deployment import Deployment
from stacks.outputs import PartStack, output

#: Context value that once named the AMI of AWS PCS nodes (``-c pcs_ami_id=ami-...``); the
#: profile pins it now (``[<workload>.pcs_ami]``), and a synthesis given it stops with the fix.
PCS_AMI_CONTEXT = "pcs_ami_id"


class WorkloadStack(PartStack):
    """The file system of one workload (and its HyperPod or AWS PCS cluster)."""

    def record(self, deployment: Deployment) -> None:
        built = deployment.storage[self.part]
        self.file_system, self.owns_file_system = built.file_system, built.owns_file_system
        self.compute, self.pcs = built.hyperpod, built.pcs
        if self.compute is not None:
            dedicated = deployment.options.workloads[self.part].cluster is None
            if self.compute.eks_cluster is not None and dedicated:
                output(self, "EksClusterName", self.compute.eks_cluster.cluster_name)
            nodes = "aws sagemaker list-cluster-nodes --cluster-name <this>"
            output(self, "HyperPodClusterName", self.compute.cluster.cluster_name, nodes)
        if self.pcs is not None:
            output(self, "PcsClusterId", self.pcs.cluster.cluster_id)
            login = (
                "aws ec2 describe-instances --filters Name=tag:aws:pcs:compute-node-group-id,"
                f"Values={self.pcs.login.compute_node_group_id} "
                "--query 'Reservations[].Instances[].InstanceId' --output text"
            )
            then = "The login node's instance id; then aws ssm start-session --target <id>"
            output(self, "LoginNodeCommand", login, then)
            sbatch = "Slurm partition of the accelerated nodes (sbatch -p <this>)"
            output(self, "Queue", self.pcs.queue.queue_name, sbatch)
        if self.file_system is not None:
            output(self, "FileSystemId", self.file_system.file_system_id)
            mount = "Mount on a node as root (HyperPod nodes mount it at /fsx)"
            output(self, "MountCommand", self.file_system.mount_command("/fsx"), mount)


class WorkloadComputeStack(PartStack):
    """One EKS workload's node groups and Kubernetes objects on its cluster (its pattern)."""

    def record(self, deployment: Deployment) -> None:
        self.workload = deployment.nodes[self.part]
        eks = self.workload.workload
        for pool, parts in eks.node_group_parts.items():
            for index, group in enumerate(parts):
                group_id = "GpuNodeGroup" if pool == "gpu" else f"{pool.capitalize()}NodeGroup"
                nodes = f"kubectl get nodes -l {names.NODE_POOL_LABEL}={group.node_pool}"
                text = f"Managed node group of the {pool} pool ({nodes})"
                output(
                    self,
                    group_id + ("" if index == 0 else str(index + 1)),
                    group.nodegroup_name,
                    text,
                )
        queue = f"{eks.local_queue_name} (kueue.x-k8s.io/queue-name)"
        jobs = f"Jobs run here as {eks.service_account} and queue on {queue}"
        output(self, "Namespace", eks.namespace, jobs)
        server = getattr(self.workload, "model_server", None)
        if server is not None:
            command = f"kubectl -n {server.namespace} get service {server.service_name}"
            api = "OpenAI-compatible API of the model server (NLB port 80, or 443 with TLS)"
            output(self, "ModelEndpointCommand", command, api)
            key = "Bearer key of the API (aws secretsmanager get-secret-value --secret-id <this>)"
            output(self, "ApiKeySecretArn", server.api_key.secret_arn, key)
