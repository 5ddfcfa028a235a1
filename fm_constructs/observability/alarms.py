"""CloudWatch alarms for FSx for Lustre and the Prometheus workspace, and EventBridge rules for
HyperPod node health.

All deliver to the layer's :class:`~fm_constructs.observability.notifications.AlertTopic`.
FSx publishes to CloudWatch (namespace ``AWS/FSx``, dimension ``FileSystemId``), not to
Prometheus, so its capacity and throughput alarms live here rather than in the rule files. The
workspace alarms watch what no Prometheus rule can: the workspace itself (nothing ingested,
rules failing to evaluate, notifications failing to reach SNS).

Every alarm states how it treats missing data, and why, in its ``treat_missing_data``.
"""

from __future__ import annotations

import hashlib
import re

import jsii
from aws_cdk import Duration, Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as cw_actions
from aws_cdk import aws_events as events
from aws_cdk.interfaces.aws_events import IRuleRef
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.observability.notifications import (
    CLOUDWATCH_PRINCIPAL,
    EVENTS_PRINCIPAL,
    AlertTopic,
)
from fm_constructs.planning.fsx_sizing import aggregate_throughput_mb_s
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules

FSX_NAMESPACE = "AWS/FSx"
#: EventBridge detail types SageMaker HyperPod emits (source ``aws.sagemaker``), as listed in the
#: SageMaker developer guide, "Events that Amazon SageMaker AI sends to Amazon EventBridge", and
#: "SageMaker HyperPod cluster events reference": node health from the health-monitoring agent
#: (fields under ``detail.HealthSummary``), cluster status changes (``detail.ClusterStatus`` and
#: ``detail.InstanceGroups[].Status``), and cluster events, which only clusters with
#: ``NodeProvisioningMode=Continuous`` emit (``detail.EventDetails.EventLevel``).
HYPERPOD_NODE_HEALTH_DETAIL_TYPE = "SageMaker HyperPod Cluster Node Health Event"
HYPERPOD_CLUSTER_STATE_DETAIL_TYPE = "SageMaker HyperPod Cluster State Change"
HYPERPOD_CLUSTER_EVENT_DETAIL_TYPE = "SageMaker HyperPod Cluster Event"
#: Cluster and instance-group statuses that need a person (botocore ``ClusterStatus`` and
#: ``InstanceGroupStatus``): a failed create or update, a rollback, a degraded group.
HYPERPOD_FAILED_CLUSTER_STATUSES = ("Failed", "RollingBack")
HYPERPOD_FAILED_GROUP_STATUSES = ("Failed", "Degraded")
_PERIOD = Duration.minutes(5)


class FsxLustreAlarms(Construct):
    """Free-capacity, throughput and metadata alarms of one FSx for Lustre file system.

    Children: ``FreeCapacity``, ``ThroughputUtilization`` and, when the file system has
    user-provisioned metadata IOPS, ``MetadataUtilization`` (``AWS::CloudWatch::Alarm``).

    Throughput utilization is client throughput (DataReadBytes + DataWriteBytes per second)
    over the file system's baseline throughput (capacity x per-unit throughput), computed
    with metric math, so it works for every deployment type.

    Metadata utilization is the rate of client metadata operations (``MetadataOperations``,
    dimension ``FileSystemId``) over the provisioned Metadata IOPS, which "determines the
    maximum rate of metadata operations that can be supported by the file system" (FSx for
    Lustre user guide, "Managing metadata performance"). It needs the provisioned figure at
    synth, so it exists only for ``metadata_iops`` (USER_PROVISIONED mode): in AUTOMATIC mode
    FSx picks the figure from the capacity and may change it, and a threshold computed here
    could be wrong in either direction. The ``fsx-storage`` dashboard shows the operation rate
    and the clients' metadata latency in both modes.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.FSX_ALARMS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        file_system_id: str,
        storage_capacity_gib: int,
        per_unit_storage_throughput_mb_s_per_tib: int,
        alert_topic: AlertTopic,
        free_capacity_min_ratio: float = 0.1,
        throughput_utilization_max_ratio: float = 0.9,
        metadata_iops: int | None = None,
        metadata_utilization_max_ratio: float = 0.8,
        evaluation_periods: int = 3,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        problems.adopt(
            observability_rules.fsx_alarms(
                ratios={
                    "free_capacity_min_ratio": free_capacity_min_ratio,
                    "throughput_utilization_max_ratio": throughput_utilization_max_ratio,
                    "metadata_utilization_max_ratio": metadata_utilization_max_ratio,
                },
                file_system_id=file_system_id,
                storage_capacity_gib=storage_capacity_gib,
                per_unit_storage_throughput_mb_s_per_tib=per_unit_storage_throughput_mb_s_per_tib,
                evaluation_periods=evaluation_periods,
                metadata_iops=metadata_iops,
            )
        )
        problems.raise_if_any()

        dimensions = {"FileSystemId": file_system_id}
        action = cw_actions.SnsAction(alert_topic.topic)
        alert_topic.allow_service(CLOUDWATCH_PRINCIPAL)

        capacity_bytes = storage_capacity_gib * 1024**3
        self.free_capacity = cloudwatch.Alarm(
            self,
            "FreeCapacity",
            alarm_description=(
                f"FSx for Lustre {file_system_id}: free data capacity below "
                f"{free_capacity_min_ratio:.0%} of {storage_capacity_gib} GiB. Delete old "
                "checkpoints or grow the file system."
            ),
            metric=cloudwatch.Metric(
                namespace=FSX_NAMESPACE,
                metric_name="FreeDataStorageCapacity",
                dimensions_map=dimensions,
                # FSx reports one datapoint per OST per minute and defines Sum as the free
                # bytes of all OSTs: a one-minute Sum is the file system's free capacity (a
                # longer period would add several minutes together).
                statistic="Sum",
                period=Duration.minutes(1),
            ),
            threshold=capacity_bytes * free_capacity_min_ratio,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
            evaluation_periods=evaluation_periods,
            # A gap (maintenance window, delayed datapoints) says nothing about free space:
            # keep the current state instead of paging ALARM and then OK.
            treat_missing_data=cloudwatch.TreatMissingData.MISSING,
        )

        baseline_bytes_s = (
            aggregate_throughput_mb_s(
                storage_capacity_gib, per_unit_storage_throughput_mb_s_per_tib
            )
            * 1_000_000
        )
        self.throughput_utilization = self._utilization_alarm(
            "ThroughputUtilization",
            expression=f"(readBytes + writeBytes) / PERIOD(readBytes) / {baseline_bytes_s:.0f}",
            metrics={"readBytes": "DataReadBytes", "writeBytes": "DataWriteBytes"},
            dimensions=dimensions,
            label="Throughput utilization (share of baseline)",
            description=(
                f"FSx for Lustre {file_system_id}: client throughput above "
                f"{throughput_utilization_max_ratio:.0%} of its {baseline_bytes_s / 1e6:.0f} MB/s "
                "baseline. Data loading or checkpointing is storage-bound."
            ),
            max_ratio=throughput_utilization_max_ratio,
            evaluation_periods=evaluation_periods,
        )
        self.metadata_utilization: cloudwatch.Alarm | None = None
        if metadata_iops is not None:
            self.metadata_utilization = self._utilization_alarm(
                "MetadataUtilization",
                expression=f"metadataOps / PERIOD(metadataOps) / {metadata_iops}",
                metrics={"metadataOps": "MetadataOperations"},
                dimensions=dimensions,
                label="Metadata operations (share of provisioned Metadata IOPS)",
                description=(
                    f"FSx for Lustre {file_system_id}: metadata operations above "
                    f"{metadata_utilization_max_ratio:.0%} of its {metadata_iops} provisioned "
                    "Metadata IOPS. Opens, stats and creates queue on the metadata server (many "
                    "small files, per-rank checkpoint shards): raise metadata_iops or batch the "
                    "files."
                ),
                max_ratio=metadata_utilization_max_ratio,
                evaluation_periods=evaluation_periods,
            )
        for alarm in (self.free_capacity, self.throughput_utilization, self.metadata_utilization):
            if alarm is not None:
                alarm.add_alarm_action(action)
                alarm.add_ok_action(action)

    def _utilization_alarm(
        self,
        construct_id: str,
        *,
        expression: str,
        metrics: dict[str, str],
        dimensions: dict[str, str],
        label: str,
        description: str,
        max_ratio: float,
        evaluation_periods: int,
    ) -> cloudwatch.Alarm:
        """An alarm on ``expression`` (a share of what the file system provides) over the
        five-minute Sums of ``metrics`` (expression name -> FSx metric name), above
        ``max_ratio``."""
        utilization = cloudwatch.MathExpression(
            expression=expression,
            using_metrics={
                name: cloudwatch.Metric(
                    namespace=FSX_NAMESPACE,
                    metric_name=metric,
                    dimensions_map=dimensions,
                    statistic="Sum",
                    period=_PERIOD,
                )
                for name, metric in metrics.items()
            },
            label=label,
            period=_PERIOD,
        )
        return cloudwatch.Alarm(
            self,
            construct_id,
            alarm_description=description,
            metric=utilization,
            threshold=max_ratio,
            comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
            evaluation_periods=evaluation_periods,
            # No datapoints means no traffic of that kind: the file system is not saturated.
            treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
        )


#: Where Managed Prometheus vends its CloudWatch metrics (AMP user guide, "Use CloudWatch
#: metrics to monitor Amazon Managed Service for Prometheus resources"): the ingestion rate is a
#: usage metric (``ResourceCount`` of resource ``IngestionRate`` in ``AWS/Usage``); rule
#: evaluation failures and failed notifications are in ``AWS/Prometheus``, the former also per
#: rule group (dimension ``RuleGroup``, "<namespace>;<group>").
PROMETHEUS_NAMESPACE = "AWS/Prometheus"
USAGE_NAMESPACE = "AWS/Usage"
PROMETHEUS_DIMENSION = "Workspace"
USAGE_WORKSPACE_DIMENSION = "ResourceId"


class PrometheusWorkspaceAlarms(Construct):
    """Alarms on the workspace itself, each delivered to the alert topic:

    - ``NoIngestion``: the sample ingestion rate absent or zero for 15 minutes. Missing data is
      *breaching*: AMP publishes nothing for a workspace that ingests nothing ("a metric not
      existing or missing is the same as the value of that metric being 0"), and that silence
      is the failure (scraper or agents stopped, remote write rejected).
    - ``RuleEvaluationFailures``: any failed rule evaluation in 5 minutes, summed over the
      workspace's rule groups. Missing data is *not breaching*: the metric is only published
      when rules are evaluated.
    - ``NotificationsFailed``: any alert manager notification that failed to reach SNS
      (``AlertManagerNotificationsFailed``, e.g. a key or topic policy that refuses the
      workspace). Missing data is *not breaching* for the same reason.

    Each alarm is a CloudWatch Metrics Insights query filtered on the workspace, so it matches
    the metric whatever other dimensions AMP publishes with it (``RuleGroup`` for rule
    evaluations, the usage dimensions ``Service``, ``Type``, ``Resource`` and ``Class``); a
    plain metric alarm matches only the exact dimension set it names. If ``NoIngestion`` is in
    ALARM on a workspace that does ingest, list what AMP publishes for it with ``aws cloudwatch
    list-metrics --namespace AWS/Usage --dimensions Name=Service,Value=Prometheus``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        workspace_id: str,
        alert_topic: AlertTopic,
    ) -> None:
        super().__init__(scope, construct_id)
        alert_topic.allow_service(CLOUDWATCH_PRINCIPAL)
        action = cw_actions.SnsAction(alert_topic.topic)

        def query(expression: str, label: str) -> cloudwatch.MathExpression:
            return cloudwatch.MathExpression(
                expression=expression, using_metrics={}, label=label, period=_PERIOD
            )

        self.no_ingestion = cloudwatch.Alarm(
            self,
            "NoIngestion",
            alarm_description=(
                "Managed Prometheus workspace receives no samples: check the managed "
                "scrapers (aws amp list-scrapers), the Slurm nodes' Prometheus agents and the "
                "workspace's log group."
            ),
            metric=query(
                f'SELECT MAX(ResourceCount) FROM "{USAGE_NAMESPACE}" '
                "WHERE Service = 'Prometheus' AND Resource = 'IngestionRate' "
                f"AND {USAGE_WORKSPACE_DIMENSION} = '{workspace_id}'",
                "Samples ingested per second",
            ),
            threshold=0,
            comparison_operator=cloudwatch.ComparisonOperator.LESS_THAN_OR_EQUAL_TO_THRESHOLD,
            evaluation_periods=3,
            treat_missing_data=cloudwatch.TreatMissingData.BREACHING,
        )

        def any_failure(construct_id: str, metric_name: str, description: str) -> cloudwatch.Alarm:
            """ALARM on any count in one period; no datapoints means nothing failed."""
            return cloudwatch.Alarm(
                self,
                construct_id,
                alarm_description=description,
                metric=query(
                    f'SELECT SUM({metric_name}) FROM "{PROMETHEUS_NAMESPACE}" '
                    f"WHERE {PROMETHEUS_DIMENSION} = '{workspace_id}'",
                    metric_name,
                ),
                threshold=0,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )

        self.rule_evaluation_failures = any_failure(
            "RuleEvaluationFailures",
            "RuleEvaluationFailures",
            "Managed Prometheus rule evaluations fail: alerts of the failing groups cannot "
            "fire. The workspace's log group names the rule and the error.",
        )
        self.notifications_failed = any_failure(
            "NotificationsFailed",
            "AlertManagerNotificationsFailed",
            "Managed Prometheus alert manager cannot deliver to SNS: firing alerts reach "
            "nobody. Check the topic's key and topic policies for the aps service.",
        )
        for alarm in (self.no_ingestion, self.rule_evaluation_failures, self.notifications_failed):
            alarm.add_alarm_action(action)
            alarm.add_ok_action(action)


def _rule_name(construct: Construct, suffix: str) -> str:
    """A rule name unique per stack and construct path, within EventBridge's 64 characters."""
    stack = Stack.of(construct)
    path = "-".join(construct.node.path.split("/")[1:])
    name = re.sub(r"[^-._A-Za-z0-9]", "", f"{stack.stack_name}-{path}-{suffix}")
    if len(name) > 64:
        digest = hashlib.sha256(name.encode()).hexdigest()[:8]
        name = f"{name[:55]}-{digest}"
    return name


@jsii.implements(events.IRuleTarget)
class _TopicTarget:
    """An SNS topic as a rule target, with no role and no policy statement of its own.

    ``aws_events_targets.SnsTopic`` without a role grants ``events.amazonaws.com`` publish
    with no condition; the alert topic's :meth:`AlertTopic.allow_service` adds the statement,
    limited to the rule's ARN and this account, instead.
    """

    def __init__(self, topic_arn: str) -> None:
        self._topic_arn = topic_arn

    def bind(
        self,
        rule: IRuleRef,
        id: str | None = None,
    ) -> events.RuleTargetConfig:
        return events.RuleTargetConfig(arn=self._topic_arn)


class HyperPodHealthEvents(Construct):
    """EventBridge rules sending HyperPod node-health events, failed cluster states and
    error-level cluster events to the alert topic. Children: ``NodeHealth``, ``ClusterState``,
    ``ClusterErrors``.

    Every cluster emits node-health and state-change events; only clusters in Continuous
    provisioning mode (the library's EKS clusters) emit cluster events, so Slurm clusters rely on
    the first two. Node-health events include a node's return to health, which is worth a
    notice too.

    With ``cluster_name`` only that cluster's events match; without it, every HyperPod cluster
    in the account and region. The rules match the name in the event's detail
    (``detail.ClusterName``; ``detail.EventDetails.ClusterName`` for cluster events), not
    ``resources``: the developer guide's example events (*Events that Amazon SageMaker AI sends
    to Amazon EventBridge*, *SageMaker HyperPod cluster events reference*) carry a cluster ARN
    of the name form (``cluster/sample-cluster``) there, while CloudFormation's ``ClusterArn``
    ends in the cluster's id (``cluster/[a-z0-9]{12}``), so a rule on the ARN could never fire.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        alert_topic: AlertTopic,
        cluster_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        names: dict[str, object] = {} if cluster_name is None else {"ClusterName": [cluster_name]}
        self._alert_topic = alert_topic
        self.node_health = self._rule(
            "NodeHealth",
            "SageMaker HyperPod node health events to the alert topic",
            HYPERPOD_NODE_HEALTH_DETAIL_TYPE,
            names or None,
        )
        self.cluster_state = self._rule(
            "ClusterState",
            "SageMaker HyperPod clusters or instance groups that failed or degraded",
            HYPERPOD_CLUSTER_STATE_DETAIL_TYPE,
            {
                **names,
                "$or": [
                    {"ClusterStatus": list(HYPERPOD_FAILED_CLUSTER_STATUSES)},
                    # A field inside an array of objects matches when any element's field
                    # does, as Security Hub rules filter ``detail.findings[]``.
                    {"InstanceGroups": {"Status": list(HYPERPOD_FAILED_GROUP_STATUSES)}},
                ],
            },
        )
        self.cluster_errors = self._rule(
            "ClusterErrors",
            "SageMaker HyperPod error-level cluster events to the alert topic",
            HYPERPOD_CLUSTER_EVENT_DETAIL_TYPE,
            {"EventDetails": {"EventLevel": ["Error"], **names}},
        )

    def _rule(
        self,
        suffix: str,
        description: str,
        detail_type: str,
        detail: dict[str, object] | None = None,
    ) -> events.Rule:
        """One named rule on ``aws.sagemaker`` events of ``detail_type`` to the alert topic.

        The rule is named, so its ARN is known without a reference to this stack: the topic
        usually lives in another stack, which must not depend on this one. EventBridge delivers
        to SNS through the topic's resource policy, not a role: AWS warns that a RoleArn on an
        SNS target may make delivery fail, "particularly for ... Amazon SNS targets with AWS
        KMS encryption enabled" (EventBridge user guide, "Using resource-based policies for
        Amazon EventBridge"). The rule is allowed by its own ARN, so no other rule, of this
        account or another, can publish."""
        name = _rule_name(self, suffix)
        rule = events.Rule(
            self,
            suffix,
            rule_name=name,
            description=description,
            event_pattern=events.EventPattern(
                source=["aws.sagemaker"],
                detail_type=[detail_type],
                detail=detail,
            ),
        )
        rule.add_target(_TopicTarget(self._alert_topic.topic.topic_arn))
        self._alert_topic.allow_service(
            EVENTS_PRINCIPAL,
            source_arn=Stack.of(self).format_arn(
                service="events", resource="rule", resource_name=name
            ),
        )
        return rule
