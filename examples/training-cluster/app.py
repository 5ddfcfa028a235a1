"""A team's own training stack, built from fm-constructs building blocks.

Two p5.48xlarge nodes on EKS with every EFA interface wired, FSx for Lustre linked to an
encrypted data bucket (datasets in, checkpoints out), and the cluster scraped into a managed
Prometheus workspace whose alerts go to an SNS topic. cdk-nag (AwsSolutions) checks the result.

Steps (docs/patterns/consumer-example.md), in a folder of its own: ``pip install
"$FM_CONSTRUCTS" -r requirements.txt`` (a clone's path or a git URL), ``npm ci``, ``npx cdk
synth``; its tests: ``pip install -r requirements-dev.txt`` and ``pytest``.
"""

from __future__ import annotations

from collections.abc import Sequence

import aws_cdk as cdk
from constructs import Construct

from fm_constructs.compute import CapacitySource
from fm_constructs.network import GpuClusterVpc
from fm_constructs.observability import AlertRules, AlertTopic, PrometheusWorkspace
from fm_constructs.orchestration import EfaNodeGroup, GpuEksCluster, WorkloadOperators
from fm_constructs.patterns import MonitoringFacade
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket, FsxSizingRequest, LustreFileSystem

REGION = "us-east-1"
GPU_ZONE = "us-east-1a"


class TrainingClusterStack(cdk.Stack):
    """VPC, data bucket, Lustre, a GPU EKS cluster and its monitoring, in one stack."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        env: cdk.Environment,
        admin_role_arns: Sequence[str] = (),
    ) -> None:
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
            admin_role_arns=admin_role_arns,
        )
        EfaNodeGroup(
            self,
            "GpuNodes",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=gpu_subnet,
            node_count=2,
            capacity=CapacitySource.on_demand(),
        )
        cluster.add_lustre_volume(file_system, name="scratch", namespace="default")
        alerts = AlertTopic(self, "Alerts")
        prometheus = PrometheusWorkspace(self, "Metrics")
        AlertRules(self, "Rules", workspace=prometheus, alert_topic=alerts)
        monitoring = MonitoringFacade(workspace=prometheus)
        monitoring.monitor_eks_cluster(
            self, "Scraping", cluster=cluster, subnets=network.vpc.private_subnets
        )
        cdk.CfnOutput(self, "ClusterName", value=cluster.cluster_name)
        cdk.CfnOutput(self, "DataBucketName", value=data.bucket_name)
        cdk.CfnOutput(self, "FileSystemId", value=file_system.file_system_id)


def build(app: cdk.App) -> TrainingClusterStack:
    """Add the app's one stack to ``app``, with cdk-nag checking it (also what the tests build)."""
    # The operators' IAM roles: `cdk synth -c admin_role_arns=arn:aws:iam::...:role/A,arn:...`.
    admins = str(app.node.try_get_context("admin_role_arns") or "")
    stack = TrainingClusterStack(
        app,
        "team-training",
        env=cdk.Environment(region=REGION),
        admin_role_arns=[arn.strip() for arn in admins.split(",") if arn.strip()],
    )
    enable_nag(app)
    return stack


def main() -> None:
    # The feature flags come from cdk.json (the block fm_constructs.feature_flags publishes).
    app = cdk.App()
    build(app)
    app.synth()


if __name__ == "__main__":
    main()
