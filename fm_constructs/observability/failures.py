"""The failures the shipped alerts and alarms catch: one row per failure, each naming its alerts.

This is the table ``docs/operations/dashboards-alerts.md`` shows (generated from here, with the
series, exporter versions and severities read from the rule files and the pins), and the
contract the tests hold the rules to: every shipped alert belongs to a failure, every failure
names alerts that exist, and every Prometheus alert has a promtool case in which it fires.

``page_minutes`` is the expected time from the onset of the failure to the notification on the
alert topic: the condition's own delay (a counter's window, the exporter's scrape) plus the
rule's ``for``, one evaluation interval (1 minute) and the alert manager's 30-second group wait.
CloudWatch alarms (``cloudwatch`` detections) notify the same topic; their time is the alarm's
evaluation periods plus CloudWatch's publication delay.

Pure data: no aws_cdk import.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fm_constructs.observability import data, inventory


@dataclass(frozen=True)
class Detection:
    """One alert (Prometheus rule) or alarm (CloudWatch, ``cloudwatch=True``) of a failure.

    ``series`` is given only for CloudWatch alarms (Prometheus alerts' series are read from
    their expressions); ``test`` names the construct test of a CloudWatch alarm.
    """

    alert: str
    page_minutes: float
    after: str
    runbook: str
    cloudwatch: bool = False
    series: tuple[str, ...] = ()
    test: str = ""


@dataclass(frozen=True)
class Failure:
    """A failure a user of the stack meets, and what catches it."""

    name: str
    detections: tuple[Detection, ...]


def _cw(alert: str, minutes: float, after: str, runbook: str, series: str, test: str) -> Detection:
    return Detection(alert, minutes, after, runbook, cloudwatch=True, series=(series,), test=test)


_FSX_TEST = "tests/constructs/test_observability.py::test_fsx_alarms_and_hyperpod_rules"
_METADATA_TEST = (
    "tests/constructs/test_observability.py::"
    "test_metadata_alarm_compares_operations_with_provisioned_iops"
)
_WORKSPACE_TEST = (
    "tests/constructs/test_observability.py::"
    "test_workspace_alarms_treat_silence_as_the_failure_only_for_ingestion"
)

#: Every failure, in the order the docs list them.
FAILURES: tuple[Failure, ...] = (
    Failure(
        "GPU fallen off the bus",
        (
            Detection(
                "GpuXidErrorReplaceNode",
                2,
                "the next scrape after XID 79",
                "cordon, let the job restart elsewhere, replace the node",
            ),
            Detection(
                "GpuMissingFromNode",
                12,
                "10 min with fewer GPUs than the node's capacity",
                "nvidia-smi on the node; replace it",
            ),
            Detection(
                "GpuNodeNotReporting",
                12,
                "10 min without DCGM data from an EKS GPU node (driver failed)",
                "DCGM exporter pod of the node in CrashLoopBackOff: replace the node",
            ),
        ),
    ),
    Failure(
        "XID by class",
        (
            Detection(
                "GpuXidErrorReplaceNode",
                2,
                "the next scrape after XID 48, 63, 64, 74, 79, 94 or 95; holds until the node "
                "is replaced (a day at most)",
                "cordon, let the job restart elsewhere, replace the node",
            ),
            Detection(
                "GpuXidError",
                2,
                "the next scrape after any other XID; resolves after the 5-min window",
                "application XIDs (13, 31, 43): the job's logs",
            ),
            Detection(
                "GpuXidErrorsRepeated",
                2,
                "the third 5-min window with an XID within an hour",
                "dcgmi diag -r 3 or HyperPod deep health checks, then replace",
            ),
        ),
    ),
    Failure(
        "ECC errors",
        (
            Detection(
                "GpuDoubleBitEccError",
                2,
                "the next scrape after an uncorrectable error",
                "cordon, restart the job from its checkpoint elsewhere, replace the node",
            ),
            Detection(
                "GpuRowRemapFailure",
                2,
                "the next scrape after the failed remap",
                "cordon and replace the node",
            ),
            Detection(
                "GpuSingleBitEccErrorRateHigh",
                2,
                "an hour with more corrected errors than gpu_sbe_errors_per_hour (info)",
                "watch for XID 48/63/64; replace at the next checkpoint if it keeps rising",
            ),
        ),
    ),
    Failure(
        "Thermal and power (GPU and HBM temperature, throttling)",
        (
            Detection(
                "GpuTemperatureHigh",
                12,
                "10 min above gpu_temperature_max_celsius or hbm_temperature_max_celsius",
                "compare with the node's other GPUs; a hot GPU is a cooling fault: replace",
            ),
            Detection(
                "GpuThermalThrottling",
                7,
                "5 min with a thermal slowdown bit set",
                "compare temperatures across the node; replace if persistent",
            ),
            Detection(
                "GpuPowerThrottling",
                7,
                "5 min with hardware slowdown or power brake",
                "compare power draw across the node; replace if only this instance",
            ),
        ),
    ),
    Failure(
        "NVLink errors",
        (
            Detection(
                "GpuNvlinkErrors",
                12,
                "10 min of replay, recovery or CRC errors",
                "dcgmi diag -r 3 (NVLink); replace when errors persist",
            ),
        ),
    ),
    Failure(
        "EFA link errors and retransmits",
        (
            Detection(
                "EfaWorkRequestErrors",
                2,
                "the next scrape after an RDMA work-request error",
                "NCCL logs for the peer, EFA health check, replace if it persists",
            ),
            Detection(
                "EfaReceiveDrops",
                12,
                "10 min of receive drops",
                "compare with the job's other nodes; replace a single noisy node",
            ),
            Detection(
                "EfaRetransmitTimeouts",
                12,
                "10 min of SRD retransmit timeouts or unresponsive peers (EKS, Nitro v4+)",
                "EFA health check on the node and its peer; replace the one that persists",
            ),
        ),
    ),
    Failure(
        "Hung collective (no step progress)",
        (
            Detection(
                "TrainingStalled",
                9.5,
                "training_stall_minutes (8) after the last step",
                "alerts on the job's nodes, py-spy dump a rank, restart without the bad node",
            ),
        ),
    ),
    Failure(
        "Slow steps against the run's own baseline",
        (
            Detection(
                "TrainingStepTimeSlow",
                20,
                "15 min with the 5-min mean step time above 1.5 x the run's 6-h median",
                "throttling, EFA and FSx alerts on the job's nodes; the straggler rank",
            ),
        ),
    ),
    Failure(
        "Node NotReady or gone",
        (
            Detection(
                "KubernetesNodeNotReady",
                7,
                "5 min after the kubelet stops reporting Ready",
                "kubectl describe node; instance status checks; replace",
            ),
            Detection(
                "NodeStoppedReporting",
                32,
                "node_replacement_minutes (30) without the node or a replacement in its group",
                "sinfo -N; aws sagemaker list-cluster-nodes; the node's agent",
            ),
            Detection(
                "SlurmNodesDown",
                37,
                "Slurm marks the node down (SlurmdTimeout), then node_replacement_minutes",
                "sinfo -R; batch-replace-cluster-nodes or resume the node",
            ),
            Detection(
                "SlurmNodesDrainedTooLong",
                122,
                "2 h drained",
                "sinfo -R names who drained it; resume or replace",
            ),
            Detection(
                "SlurmJobsKilledByNodeFailure",
                2,
                "the next scrape after a job ends with NODE_FAIL",
                "sacct --state=NODE_FAIL; resubmit from the checkpoint",
            ),
        ),
    ),
    Failure(
        "Scheduler down (slurmctld, Kueue, Kubeflow Trainer)",
        (
            Detection(
                "SlurmCommandsFailing",
                7,
                "5 min of failing Slurm commands or vanished node counts",
                "systemctl status slurmctld; journalctl -u slurmctld",
            ),
            Detection(
                "SlurmExporterMissing",
                32,
                "30 min without the Slurm exporter on a reporting controller",
                "systemctl status fm-metrics-install fm-slurm-exporter",
            ),
            Detection(
                "JobControllerDown",
                7,
                "5 min without an available controller replica",
                "kubectl -n kueue-system / kubeflow-system get deploy,pods; logs",
            ),
        ),
    ),
    Failure(
        "FSx capacity",
        (
            Detection(
                "FsxLustreFreeCapacityLow",
                17,
                "15 min below fsx_free_capacity_min_ratio free, as the clients see it",
                "delete old checkpoints or grow the file system",
            ),
            _cw(
                "FreeCapacity",
                5,
                "3 one-minute periods below the free-capacity ratio",
                "delete old checkpoints or grow the file system",
                "AWS/FSx FreeDataStorageCapacity",
                _FSX_TEST,
            ),
        ),
    ),
    Failure(
        "FSx throughput saturation",
        (
            _cw(
                "ThroughputUtilization",
                17,
                "3 five-minute periods above 90 % of the baseline throughput",
                "spread checkpoint writes, or raise storage or per-unit throughput",
                "AWS/FSx DataReadBytes, DataWriteBytes",
                _FSX_TEST,
            ),
        ),
    ),
    Failure(
        "FSx metadata saturation",
        (
            _cw(
                "MetadataUtilization",
                17,
                "3 five-minute periods above 80 % of the provisioned metadata IOPS "
                "(only with metadata_iops)",
                "raise metadata_iops; fewer small files per rank",
                "AWS/FSx MetadataOperations",
                _METADATA_TEST,
            ),
        ),
    ),
    Failure(
        "AMP ingestion stopped",
        (
            Detection(
                "ClusterMetricsStopped",
                7,
                "5 min without a sample from a cluster that reported within the hour",
                "aws amp describe-scraper; the Slurm nodes' prometheus-agent units",
            ),
            _cw(
                "NoIngestion",
                17,
                "3 five-minute periods without ingested samples (missing data breaches)",
                "scrapers, agents, DiscardedSamples of the workspace",
                "AWS/Usage ResourceCount (Resource IngestionRate)",
                _WORKSPACE_TEST,
            ),
        ),
    ),
    Failure(
        "Alert delivery failing",
        (
            _cw(
                "NotificationsFailed",
                7,
                "one five-minute period with a failed alert manager notification",
                "the topic's key and policy must admit aps.amazonaws.com",
                "AWS/Prometheus AlertManagerNotificationsFailed",
                _WORKSPACE_TEST,
            ),
            _cw(
                "RuleEvaluationFailures",
                7,
                "one five-minute period with a failed rule evaluation",
                "the workspace's rule-evaluation logs",
                "AWS/Prometheus RuleEvaluationFailures",
                _WORKSPACE_TEST,
            ),
        ),
    ),
    Failure(
        "Metrics source down (the alerts it feeds are blind)",
        (
            Detection(
                "MetricsTargetDown",
                7,
                "5 min of failed scrapes of an exporter",
                "the exporter's pod or unit, its port's security group rule",
            ),
            Detection(
                "WorkloadMetricsTargetDown",
                17,
                "15 min of failed scrapes of a Running and Ready workload pod",
                "the process must serve its annotated port (one per pod)",
            ),
            Detection(
                "KubeStateMetricsMissing",
                12,
                "10 min without kube-state-metrics on an EKS cluster",
                "kubectl -n monitoring get deploy,pods",
            ),
        ),
    ),
    Failure(
        "Inference latency objective missed",
        (
            Detection(
                "InferenceTimeToFirstTokenOverObjective",
                17,
                "10 min with p99 over 5 min above ttft_p99_objective_seconds",
                "queue and KV cache; scale out",
            ),
            Detection(
                "InferenceInterTokenLatencyOverObjective",
                17,
                "10 min with p99 over 5 min above inter_token_latency_p99_objective_seconds",
                "smaller batches or more replicas; throttling on the serving nodes",
            ),
        ),
    ),
)


def detections() -> list[Detection]:
    """Every detection of every failure, in table order."""
    return [d for failure in FAILURES for d in failure.detections]


def _alert_rules() -> dict[str, tuple[str, dict[str, Any]]]:
    """Alert name -> (rule file stem, rule) over the shipped rule files, thresholds rendered."""
    values = data.rule_thresholds(None)
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    for path in data.shipped_rule_files():
        document = data.load_rule_file(path, values)[1]
        for group in document["groups"]:
            for rule in group["rules"]:
                if "alert" in rule:
                    found[str(rule["alert"])] = (path.stem, rule)
    return found


def alert_series(expr: str) -> list[str]:
    """Exporter series an alert expression reads (through recording rules), sorted."""
    return sorted(inventory.raw_metrics(expr, inventory.recorded_expressions()))


def exporters(series: list[str]) -> list[str]:
    """``name (orchestrator: pinned version; ...)`` of the sources producing ``series``."""
    labels = []
    for name in series:
        source = inventory.source_of(name)
        if source is None:
            continue
        versions = "; ".join(f"{k}: {v}" for k, v in source.versions.items())
        label = f"{source.name} ({versions})"
        if label not in labels:
            labels.append(label)
    return labels


def markdown_table() -> str:
    """The failure table of the docs: one line per detection, the failure on its first."""
    rules = _alert_rules()
    rows = [
        "| failure | alert | severity | series | exporter (pinned) | time to page | runbook "
        "| tested by |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for failure in FAILURES:
        for index, detection in enumerate(failure.detections):
            if detection.cloudwatch:
                severity = "alarm"
                series = list(detection.series)
                source = ["CloudWatch alarm (PrometheusWorkspaceAlarms or FsxAlarms)"]
                tested = f"`{detection.test.split('::')[-1]}`"
                alert = f"`{detection.alert}` (CloudWatch)"
            else:
                stem, rule = rules[detection.alert]
                severity = str(rule["labels"]["severity"])
                series = alert_series(str(rule["expr"]))
                source = exporters(series)
                tested = f"`rule_tests/{stem}.test.yaml`"
                alert = f"`{detection.alert}`"
            name = f"**{failure.name}**" if index == 0 else ""
            rows.append(
                f"| {name} | {alert} | {severity} | "
                + ", ".join(f"`{s}`" for s in series)
                + f" | {'; '.join(source)} | {detection.page_minutes:g} min: {detection.after} "
                f"| {detection.runbook} | {tested} |"
            )
    return "\n".join(rows)
