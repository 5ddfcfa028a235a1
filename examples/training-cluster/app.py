"""A team's own training stack, built from fm-constructs building blocks.

Two p5.48xlarge nodes on EKS with every EFA interface wired, FSx for Lustre linked to an
encrypted data bucket (datasets in, checkpoints out), and the cluster scraped into a managed
Prometheus workspace whose alerts go to an SNS topic. cdk-nag (AwsSolutions) checks the result.

    pip install -r requirements.txt
    cdk synth            # or: python app.py
"""

from __future__ import annotations

import aws_cdk as cdk
from constructs import Construct

from fm_constructs.compute import CapacitySource
from fm_constructs.network.gpu_vpc import GpuClusterVpc
from fm_constructs.observability import AlertRules, AlertTopic, PrometheusWorkspace
from fm_constructs.orchestration import EfaNodeGroup, GpuEksCluster, WorkloadOperators
from fm_constructs.patterns import EksClusterScraping
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket, FsxSizingRequest, LustreFileSystem

REGION = "us-east-1"
GPU_ZONE = "us-east-1a"


class TrainingClusterStack(cdk.Stack):
    """VPC, data bucket, Lustre, a GPU EKS cluster and its monitoring, in one stack."""

    def __init__(self, scope: Construct, construct_id: str, *, env: cdk.Environment) -> None:
        super().__init__(scope, construct_id, env=env)
        network = GpuClusterVpc(
            self, "Network", availability_zones=[GPU_ZONE, "us-east-1b"], nat_gateways_per_az=False
        )
        gpu_subnet = network.private_subnet(GPU_ZONE)
        data = DataBucket(self, "Data")
        file_system = LustreFileSystem(
            self,
            "Scratch",
            vpc=network.vpc,
            subnet=gpu_subnet,
            data_bucket=data,
            sizing=FsxSizingRequest(
                model_parameters=8e9, target_checkpoint_write_seconds=120, dataset_size_gib=500
            ),
        )
        cluster = GpuEksCluster(
            self,
            "Cluster",
            vpc=network.vpc,
            gpu_availability_zone=GPU_ZONE,
            operators=WorkloadOperators(kueue=True, kubeflow_trainer=True),
        )
        EfaNodeGroup(
            self,
            "GpuNodes",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=gpu_subnet,
            desired_size=2,
            capacity=CapacitySource.on_demand(),
        )
        cluster.add_lustre_volume(file_system, name="scratch", namespace="default")
        alerts = AlertTopic(self, "Alerts")
        prometheus = PrometheusWorkspace(self, "Metrics")
        AlertRules(self, "Rules", workspace=prometheus, alert_topic=alerts)
        EksClusterScraping(
            self,
            "Scraping",
            cluster=cluster,
            workspace=prometheus,
            subnets=network.vpc.private_subnets,
        )
        cdk.CfnOutput(self, "ClusterName", value=cluster.cluster_name)
        cdk.CfnOutput(self, "DataBucketName", value=data.bucket_name)
        cdk.CfnOutput(self, "FileSystemId", value=file_system.file_system_id)


def main() -> None:
    app = cdk.App()
    TrainingClusterStack(app, "team-training", env=cdk.Environment(region=REGION))
    enable_nag(app)
    app.synth()


if __name__ == "__main__":
    main()
