"""The shared platform: the GPU VPC and the data bucket that every workload uses."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fm_constructs.config import NatGateways, PlatformConfig
from fm_constructs.network.gpu_vpc import GpuClusterVpc
from fm_constructs.patterns import ObservabilityPlatform
from fm_constructs.storage import DataBucket
from fm_constructs.storage.teardown import VpcTeardownGuard


class GrafanaStack(Stack):
    """The Amazon Managed Grafana workspace and its dashboards (filled in by the
    :class:`PlatformStack`); it reads the Prometheus workspace, and no stack waits for it."""

    def __init__(self, scope: Construct, construct_id: str, **kwargs: Any) -> None:
        super().__init__(
            scope,
            construct_id,
            description="fm-constructs Amazon Managed Grafana workspace and dashboards",
            **kwargs,
        )


class PlatformStack(Stack):
    """Long-lived, shared resources; workload stacks reference them and deploy side by side.

    The stack's zones are the profile's ``platform.availability_zones``: with an account in
    its environment, aws-cdk-lib would otherwise look the region's zones up (AWS credentials,
    a ``cdk.context.json`` entry) only to check the VPC's zones against them, a check the
    profile loader already makes offline.
    """

    @property
    def availability_zones(self) -> list[str]:
        """The profile's zones, so that no synthesis asks AWS for the region's."""
        return list(self._zones)

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        platform: PlatformConfig,
        custom_networking: bool = False,
        node_subnet_cidrs: tuple[str, ...] = (),
        grafana: Stack | None = None,
        **kwargs: Any,
    ) -> None:
        """``grafana``: the stack that holds the Grafana workspace and dashboards (nothing
        waits for it); without it they are created here. ``node_subnet_cidrs``: secondary
        blocks of the GPU zone's extra node subnets (the IP budget's node_subnets)."""
        self._zones = list(platform.availability_zones)  # read by availability_zones
        super().__init__(
            scope,
            construct_id,
            description="fm-constructs shared platform: GPU VPC, data bucket, observability",
            termination_protection=platform.termination_protection,
            **kwargs,
        )
        self.network = GpuClusterVpc(
            self,
            "Network",
            availability_zones=platform.availability_zones,
            cidr=platform.vpc_cidr,
            nat_gateways_per_az=platform.nat_gateways is NatGateways.PER_AZ,
            interface_endpoints=platform.interface_endpoints,
            pod_cidr=platform.pod_cidr if custom_networking else None,
            pod_subnet_zone=platform.availability_zone if custom_networking else None,
            node_subnet_cidrs=node_subnet_cidrs,
            node_subnet_zone=platform.availability_zone if node_subnet_cidrs else None,
        )
        self.vpc = self.network.vpc
        # Deleted before the VPC: stops `cdk destroy` with what to delete first while retained
        # file systems (and their security groups) are still in the VPC.
        pod_subnet = self.network.pod_subnet
        self.teardown_guard = VpcTeardownGuard(
            self,
            "TeardownGuard",
            vpc=self.vpc,
            extra_subnet_ids=[pod_subnet.ref] if pod_subnet is not None else [],
        )
        self.data = DataBucket(self, "Data")
        self.observability: ObservabilityPlatform | None = None
        if platform.observability:
            self.observability = ObservabilityPlatform(
                self,
                "Observability",
                grafana=platform.grafana,
                grafana_scope=Construct(grafana, "Observability") if grafana else None,
            )
            CfnOutput(
                self,
                "PrometheusEndpoint",
                value=self.observability.prometheus.prometheus_endpoint,
                description="Amazon Managed Service for Prometheus query endpoint",
            )
            CfnOutput(
                self,
                "AlertTopicArn",
                value=self.observability.alert_topic.topic_arn,
                description="Subscribe on-call to this encrypted SNS topic",
            )
            if self.observability.grafana is not None:
                CfnOutput(
                    grafana or self,
                    "GrafanaUrl",
                    value=f"https://{self.observability.grafana.endpoint}",
                    description="Amazon Managed Grafana (assign users in IAM Identity Center)",
                )
        CfnOutput(self, "VpcId", value=self.vpc.vpc_id, description="VPC of the GPU clusters")
        CfnOutput(
            self,
            "DataBucketName",
            value=self.data.bucket_name,
            description="Datasets under datasets/, checkpoints under checkpoints/",
        )
