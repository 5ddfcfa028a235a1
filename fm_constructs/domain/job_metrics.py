"""The job-metrics contract: how a training or post-training job exposes its progress.

A job that follows this contract is found by the cluster's managed scraper (EKS) or the node's
Prometheus agent (HyperPod Slurm) without further configuration, and feeds the training
dashboard and the ``TrainingStalled`` alert:

* serve Prometheus text format on :data:`METRICS_PORT` at :data:`METRICS_PATH` from **one
  process per pod** (per node on Slurm): local rank 0 (``LOCAL_RANK=0``), or a sidecar the
  ranks report to. The other ranks bind nothing: the ranks of a pod share its network
  namespace (on Slurm, the node's), so a second listener on the port fails with
  ``EADDRINUSE``. One process is enough: in a synchronous job every rank takes the same
  steps, so a hung collective or a dead rank stops the server's step counter too;
* on Kubernetes, carry the pod annotations of :func:`pod_annotations` and the pod label
  :data:`WORKLOAD_LABEL` (the library workload, e.g. ``pretraining``) plus, when the run is not
  named by its controller, :data:`RUN_LABEL`;
* export the metric families of :data:`METRICS` with exactly these names and types.

The scraper sets ``namespace``, ``pod``, ``node``, ``workload`` (pod label, else the namespace)
and ``run`` (the Kubeflow Trainer TrainJob or JobSet name, else :data:`RUN_LABEL`, else the
pod's controller) on every series; jobs must not set those labels themselves.

Floor 1: pure data, no aws_cdk import, so runtimes and templates can import it anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from fm_constructs.domain import names, ports

#: Port every job serves its metrics on. Distinct from the model-server port (8080) and from
#: the node exporters (9100, 9109, 9400) so a job and a model server can share a node; it is the
#: OpenTelemetry Prometheus exporter's registered default port.
METRICS_PORT = ports.JOB_METRICS_PORT
#: HTTP path of the metrics endpoint.
METRICS_PATH = "/metrics"

#: Pod annotations the scraper's workload job keeps (the ``prometheus.io`` convention).
SCRAPE_ANNOTATION = "prometheus.io/scrape"
PORT_ANNOTATION = "prometheus.io/port"
PATH_ANNOTATION = "prometheus.io/path"

#: Pod label naming the library workload the job belongs to (becomes the ``workload`` label).
WORKLOAD_LABEL = names.WORKLOAD_LABEL
#: Pod label naming the training run when no TrainJob/JobSet name is present (``run`` label).
RUN_LABEL = "fm-constructs/run"

#: Controller labels the scraper reads the run name from, first match wins.
RUN_SOURCE_LABELS = (
    "trainer.kubeflow.org/trainjob-name",
    "jobset.sigs.k8s.io/jobset-name",
    RUN_LABEL,
)

#: Label names the scraper owns on job series (a job exporting them is overwritten).
RESERVED_SERIES_LABELS = ("cluster", "namespace", "pod", "node", "workload", "run")


@dataclass(frozen=True)
class JobMetric:
    """One metric family of the contract: name, Prometheus type, unit and meaning."""

    name: str
    kind: str
    unit: str
    help: str


STEPS = JobMetric(
    "fm_training_steps_total",
    "counter",
    "steps",
    "Optimizer steps completed by the serving process (every rank of a synchronous job "
    "takes the same steps).",
)
TOKENS = JobMetric(
    "fm_training_tokens_total",
    "counter",
    "tokens",
    "Tokens processed by all ranks of the pod (sum over pods is the job's throughput).",
)
STEP_DURATION = JobMetric(
    "fm_training_step_duration_seconds",
    "histogram",
    "seconds",
    "Wall time of one optimizer step, forward to optimizer update.",
)
LOSS = JobMetric("fm_training_loss", "gauge", "1", "Training loss of the latest step.")
CHECKPOINT_DURATION = JobMetric(
    "fm_training_checkpoint_duration_seconds",
    "histogram",
    "seconds",
    "Wall time of one checkpoint save, from the start of the write to its completion.",
)
LAST_CHECKPOINT = JobMetric(
    "fm_training_last_checkpoint_timestamp_seconds",
    "gauge",
    "seconds",
    "Unix time of the latest completed checkpoint.",
)

#: Every metric family of the contract.
METRICS: tuple[JobMetric, ...] = (
    STEPS,
    TOKENS,
    STEP_DURATION,
    LOSS,
    CHECKPOINT_DURATION,
    LAST_CHECKPOINT,
)

#: Name prefix the scraper keeps from job endpoints (anything else a job exports is dropped).
METRIC_PREFIX = "fm_training_"

#: Histogram buckets (seconds) runtimes should use, so dashboards can compare jobs.
STEP_DURATION_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0)
CHECKPOINT_DURATION_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


def pod_annotations() -> dict[str, str]:
    """Annotations a job's pod template carries so the scraper finds its endpoint."""
    return {
        SCRAPE_ANNOTATION: "true",
        PORT_ANNOTATION: str(METRICS_PORT),
        PATH_ANNOTATION: METRICS_PATH,
    }


def pod_labels(workload: str, run: str | None = None) -> dict[str, str]:
    """Labels a job's pod template carries: its workload and, optionally, its run name."""
    labels = {WORKLOAD_LABEL: workload}
    if run:
        labels[RUN_LABEL] = run
    return labels


def metric_names() -> set[str]:
    """Names a dashboard or rule may read, histogram series included."""
    names: set[str] = set()
    for metric in METRICS:
        if metric.kind == "histogram":
            names |= {f"{metric.name}_{s}" for s in ("bucket", "sum", "count")}
        else:
            names.add(metric.name)
    return names
