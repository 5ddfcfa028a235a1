"""The shared platform: the GPU VPC, the data bucket and observability every workload uses."""

from __future__ import annotations

from typing import Any

from constructs import Construct

from fm_constructs.config.options import PlatformOptions
from fm_constructs.patterns.deployment import Deployment
from stacks.outputs import PartStack, output


class GrafanaStack(PartStack):
    """The Amazon Managed Grafana workspace and its dashboards (filled in with the platform);
    it reads the Prometheus workspace, and no stack waits for it."""


class PlatformStack(PartStack):
    """Long-lived, shared resources; workload stacks reference them and deploy side by side.
    ``grafana``: the stack of the Grafana workspace (none: it is created here).

    The stack's zones are the profile's: with an account in its environment, aws-cdk-lib would
    otherwise look the region's zones up (AWS credentials, a ``cdk.context.json`` entry) only
    to check the VPC's zones against them, a check the profile loader makes offline."""

    @property
    def availability_zones(self) -> list[str]:
        """The profile's zones, so that no synthesis asks AWS for the region's."""
        return list(self._zones)

    def __init__(
        self,
        scope: Construct,
        options: PlatformOptions,
        grafana: GrafanaStack | None,
        **kwargs: Any,
    ) -> None:
        self._zones = list(options.availability_zones)  # read by availability_zones
        self.grafana = grafana
        super().__init__(scope, options.stack, **kwargs)

    def record(self, deployment: Deployment) -> None:
        platform = deployment.platform
        self.network, self.vpc, self.data = platform.network, platform.vpc, platform.data
        self.teardown_guard, self.observability = platform.teardown_guard, platform.observability
        watch = self.observability
        if watch is not None:
            endpoint = watch.prometheus.prometheus_endpoint
            query = "Amazon Managed Service for Prometheus query endpoint"
            output(self, "PrometheusEndpoint", endpoint, query)
            topic = watch.alert_topic.topic_arn
            output(self, "AlertTopicArn", topic, "Subscribe on-call to this encrypted SNS topic")
            if watch.grafana is not None:
                url = f"https://{watch.grafana.endpoint}"
                users = "Amazon Managed Grafana (assign users in IAM Identity Center)"
                output(self.grafana or self, "GrafanaUrl", url, users)
        output(self, "VpcId", self.vpc.vpc_id, "VPC of the GPU clusters")
        prefixes = "Datasets under datasets/, checkpoints under checkpoints/"
        output(self, "DataBucketName", self.data.bucket_name, prefixes)
