"""The shared platform: the GPU VPC and the data bucket that every workload uses."""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnOutput, Stack
from constructs import Construct

from fm_constructs.patterns.deployment import Deployment


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
        deployment: Deployment,
        grafana: Stack | None = None,
        **kwargs: Any,
    ) -> None:
        """``grafana``: the stack that holds the Grafana workspace and dashboards (nothing
        waits for it); without it they are created here."""
        options = deployment.options.platform
        self._zones = list(options.availability_zones)  # read by availability_zones
        super().__init__(
            scope,
            construct_id,
            description="fm-constructs shared platform: GPU VPC, data bucket, observability",
            termination_protection=options.termination_protection,
            **kwargs,
        )
        platform = deployment.build_platform(self, grafana_scope=grafana)
        self.network, self.vpc, self.data = platform.network, platform.vpc, platform.data
        self.teardown_guard, self.observability = platform.teardown_guard, platform.observability
        if self.observability is not None:
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
