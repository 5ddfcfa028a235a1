"""The scrape configuration's relabeling applied to discovered targets, as Prometheus applies
it (replace/keep, anchored regexes, ``;``-joined source labels, ``$1`` references): which
targets are kept and which labels their series get."""

from __future__ import annotations

import re
from typing import Any

import yaml

from fm_constructs.domain import job_metrics
from fm_constructs.observability import data

SCRAPE = yaml.safe_load(
    data.render_scrape_configuration(
        data.EKS_SCRAPE_TEMPLATE.read_text(), cluster_name="c", scrape_interval_seconds=30
    )
)
JOBS = {job["job_name"]: job for job in SCRAPE["scrape_configs"]}


def relabel(job: str, target: dict[str, str]) -> dict[str, str] | None:
    """Prometheus relabeling (replace and keep actions) of one discovered target; None when
    dropped. Labels starting with ``__`` other than ``__address__``/``__metrics_path__`` are
    dropped afterwards, as Prometheus does."""
    labels = dict(target)
    for rule in JOBS[job]["relabel_configs"]:
        action = rule.get("action", "replace")
        value = rule.get("separator", ";").join(labels.get(s, "") for s in rule["source_labels"])
        match = re.fullmatch(rule.get("regex", "(.*)"), value)
        if action == "keep":
            if not match:
                return None
            continue
        assert action == "replace", action
        if match is None:
            continue
        replacement = rule.get("replacement", "$1")
        groups = (match.group(0), *match.groups())
        result = re.sub(r"\$(\d+)", lambda m, g=groups: g[int(m.group(1))] or "", replacement)
        if result:
            labels[rule["target_label"]] = result
        else:
            labels.pop(rule["target_label"], None)
    return {
        k: v
        for k, v in labels.items()
        if not k.startswith("__") or k in ("__address__", "__metrics_path__")
    }


def _node(name: str, ip: str, **labels: str) -> dict[str, str]:
    target = {
        "__address__": f"{ip}:10250",
        "__meta_kubernetes_node_name": name,
        "__meta_kubernetes_node_address_InternalIP": ip,
    }
    for key, value in labels.items():
        target[f"__meta_kubernetes_node_label_{key}"] = value
    return target


def _pod(**meta: str) -> dict[str, str]:
    """A pod target as Prometheus pod discovery gives it (discovery/kubernetes/pod.go at v3.5.0:
    __meta_kubernetes_pod_phase is the pod's status.phase, __meta_kubernetes_pod_ready its
    Ready condition, "true"/"false"/"unknown"); Running and Ready unless said otherwise."""
    target = {
        "__address__": "10.0.3.7:8080",
        "__meta_kubernetes_namespace": "pretraining",
        "__meta_kubernetes_pod_phase": "Running",
        "__meta_kubernetes_pod_ready": "true",
    }
    target.update({f"__meta_kubernetes_pod_{k}": v for k, v in meta.items()})
    return target


def test_only_running_and_ready_workload_pods_are_scraped() -> None:
    """A finished run (Succeeded/Failed), a pod still Pending and a model server loading its
    weights (Running, not Ready) are not targets, so their failed scrapes page nobody."""
    base = {"annotation_prometheus_io_scrape": "true", "annotation_prometheus_io_port": "9464"}
    assert relabel("workload-pods", _pod(**base)) is not None
    for phase in ("Pending", "Succeeded", "Failed", "Unknown"):
        assert relabel("workload-pods", _pod(phase=phase, **base)) is None, phase
    for ready in ("false", "unknown"):
        assert relabel("workload-pods", _pod(ready=ready, **base)) is None, ready


def test_gpu_nodes_get_a_dcgm_target_with_their_workload_and_others_none() -> None:
    gpu = _node("n1", "10.0.1.5", nvidia_com_gpu_present="true", fm_constructs_workload="gpu")
    assert relabel("dcgm-exporter", gpu) == {
        "__address__": "10.0.1.5:9400",
        "node": "n1",
        "workload": "gpu",
    }
    assert (
        relabel("dcgm-exporter", _node("s1", "10.0.2.5", fm_constructs_workload="system")) is None
    )


def test_every_node_gets_a_node_exporter_target_unassigned_without_a_workload_label() -> None:
    assert relabel("node-exporter", _node("s1", "10.0.2.5")) == {
        "__address__": "10.0.2.5:9100",
        "node": "s1",
        "workload": "unassigned",
    }
    efa = _node(
        "n1", "10.0.1.5", vpc_amazonaws_com_efa_present="true", fm_constructs_workload="gpu"
    )
    assert relabel("efa-exporter", efa)["__address__"] == "10.0.1.5:9109"  # type: ignore[index]
    assert relabel("efa-exporter", _node("s1", "10.0.2.5")) is None


def _meta_label(label: str) -> str:
    return "label_" + re.sub(r"[^a-zA-Z0-9]", "_", label)


def test_a_training_pod_following_the_contract_is_scraped_with_its_run() -> None:
    annotations = {
        "annotation_" + re.sub(r"[^a-zA-Z0-9]", "_", k): v
        for k, v in job_metrics.pod_annotations().items()
    }
    pod = _pod(
        name="llama-node-0-0-abc",
        node_name="n1",
        controller_name="llama-node-0",
        **annotations,
        **{_meta_label(job_metrics.WORKLOAD_LABEL): "pretraining"},
        **{_meta_label("trainer.kubeflow.org/trainjob-name"): "llama"},
        **{_meta_label("jobset.sigs.k8s.io/jobset-name"): "llama"},
    )
    assert relabel("workload-pods", pod) == {
        "__address__": f"10.0.3.7:{job_metrics.METRICS_PORT}",
        "__metrics_path__": job_metrics.METRICS_PATH,
        "namespace": "pretraining",
        "pod": "llama-node-0-0-abc",
        "node": "n1",
        "workload": "pretraining",
        "run": "llama",
    }


def test_run_falls_back_to_the_contract_label_then_the_controller() -> None:
    base = {"annotation_prometheus_io_scrape": "true", "annotation_prometheus_io_port": "9464"}
    labelled = _pod(
        controller_name="job-x", **base, **{_meta_label(job_metrics.RUN_LABEL): "sft-7"}
    )
    assert relabel("workload-pods", labelled)["run"] == "sft-7"  # type: ignore[index]
    plain = _pod(controller_name="job-x", **base)
    result = relabel("workload-pods", plain)
    assert result is not None and result["run"] == "job-x" and result["workload"] == "pretraining"


def test_pods_on_ports_the_scraper_cannot_reach_are_not_scraped() -> None:
    pod = _pod(annotation_prometheus_io_scrape="true", annotation_prometheus_io_port="1234")
    assert relabel("workload-pods", pod) is None
    server = _pod(annotation_prometheus_io_scrape="true", annotation_prometheus_io_port="8080")
    assert relabel("workload-pods", server)["__address__"] == "10.0.3.7:8080"  # type: ignore[index]
    assert relabel("workload-pods", _pod()) is None  # not annotated


def test_relabel_simulation_sees_every_action_used() -> None:
    actions: set[Any] = {
        r.get("action", "replace") for job in JOBS.values() for r in job["relabel_configs"]
    }
    assert actions <= {"replace", "keep"}
