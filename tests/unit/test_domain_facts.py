"""One home per fact: the enums, names and ports of floor 1 are the ones every layer uses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import fm_constructs
from fm_constructs import config
from fm_constructs.domain import job_metrics, kinds, names, ports
from fm_constructs.domain.capacity import CapacityConfig
from fm_constructs.errors import FmValidationError
from tests.module_imports import imported_modules

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "fm_constructs"
#: Building blocks (floor 2): they never import the profile (config/) or the patterns.
BLOCKS = ("compute", "network", "storage", "orchestration", "kubernetes", "observability", "policy")


def test_one_orchestrator_enum() -> None:
    from fm_constructs.orchestration import hyperpod

    assert config.Orchestrator is kinds.Orchestrator
    assert hyperpod.Orchestrator is kinds.Orchestrator
    assert fm_constructs.Orchestrator is kinds.Orchestrator
    assert kinds.Orchestrator.SLURM is kinds.Orchestrator.HYPERPOD_SLURM
    assert [o.value for o in kinds.Orchestrator] == ["eks", "hyperpod-eks", "hyperpod-slurm", "pcs"]
    assert kinds.HYPERPOD == (kinds.Orchestrator.HYPERPOD_EKS, kinds.Orchestrator.HYPERPOD_SLURM)
    assert [o for o in kinds.Orchestrator if o.is_hyperpod] == list(kinds.HYPERPOD)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (kinds.Orchestrator.SLURM, kinds.Orchestrator.HYPERPOD_SLURM),
        (kinds.Orchestrator.HYPERPOD_SLURM, kinds.Orchestrator.HYPERPOD_SLURM),
        (kinds.Orchestrator.EKS, kinds.Orchestrator.HYPERPOD_EKS),
        (kinds.Orchestrator.HYPERPOD_EKS, kinds.Orchestrator.HYPERPOD_EKS),
        ("hyperpod-eks", kinds.Orchestrator.HYPERPOD_EKS),
    ],
)
def test_hyperpod_reads_the_shared_enum(
    given: kinds.Orchestrator | str, expected: kinds.Orchestrator
) -> None:
    from fm_constructs.orchestration.hyperpod import hyperpod_orchestrator

    assert hyperpod_orchestrator(given) is expected


def test_hyperpod_refuses_an_orchestrator_it_is_not() -> None:
    from fm_constructs.orchestration.hyperpod import hyperpod_orchestrator

    with pytest.raises(FmValidationError, match=r"orchestrator: .*HYPERPOD_SLURM.*'pcs'"):
        hyperpod_orchestrator(kinds.Orchestrator.PCS)


def test_the_profile_and_the_blocks_share_the_kinds() -> None:
    from fm_constructs import compute
    from fm_constructs.config import model

    assert compute.CapacityKind is kinds.CapacityKind is model.CapacityKind
    assert model.CapacityConfig is CapacityConfig
    assert model.LoadBalancer is kinds.LoadBalancer
    assert model.ServingMetric is kinds.ServingMetric


@pytest.mark.parametrize("block", BLOCKS)
def test_building_blocks_never_import_the_profile_or_the_patterns(block: str) -> None:
    offenders = {
        f"{path.relative_to(ROOT)} imports {module}"
        for path in (PACKAGE / block).rglob("*.py")
        for module in imported_modules(path)
        if module.startswith(("fm_constructs.config", "fm_constructs.patterns", "stacks"))
    }
    assert not offenders


def test_the_facts_of_floor_one_load_without_aws_cdk() -> None:
    code = (
        "import sys\n"
        "import fm_constructs.domain.kinds, fm_constructs.domain.names\n"
        "import fm_constructs.domain.ports, fm_constructs.domain.capacity\n"
        "import fm_constructs.domain.workload_data\n"
        "import fm_constructs.planning.kueue_quota, fm_constructs.planning.kubernetes_versions\n"
        "from fm_constructs import CapacityKind, LoadBalancer, Orchestrator, ServingMetric\n"
        "assert 'aws_cdk' not in sys.modules, sorted(m for m in sys.modules if 'aws_cdk' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_every_layer_reads_the_same_names() -> None:
    from fm_constructs.config import options
    from fm_constructs.kubernetes import model_server, node_shape
    from fm_constructs.orchestration import eks_charts

    assert node_shape.HUGEPAGES_2MI == model_server.EFA_HUGEPAGES == "5120Mi"
    assert names.EFA_HUGEPAGES_2MI_MI == 5120
    assert node_shape.TAINT_KEYS == {
        "NVIDIA": eks_charts.GPU_TAINT_KEY,
        "NEURON": eks_charts.NEURON_TAINT_KEY,
    }
    assert model_server.GPU_RESOURCE == node_shape.GPU_RESOURCE == "nvidia.com/gpu"
    assert model_server.GPU_TAINT_KEY == eks_charts.GPU_TAINT_KEY
    assert options.ROLE_LABEL == names.WORKLOAD_ROLE_LABEL
    assert (options.MAIN_POOL, options.ROLLOUT_POOL) == (names.MAIN_POOL, names.ROLLOUT_POOL)


def test_every_layer_reads_the_same_ports() -> None:
    from fm_constructs.kubernetes import efa_exporter
    from fm_constructs.observability import scraper
    from fm_constructs.orchestration.hyperpod import lifecycle
    from fm_constructs.patterns import eks_monitoring, inference_manifests

    assert job_metrics.METRICS_PORT == ports.JOB_METRICS_PORT == 9464
    assert inference_manifests.DEFAULT_PORT == ports.MODEL_SERVER_PORT
    node_exporters = {ports.NODE_EXPORTER_PORT, ports.DCGM_EXPORTER_PORT, ports.EFA_EXPORTER_PORT}
    assert node_exporters == {9100, 9400, 9109} == set(ports.NODE_EXPORTER_PORTS)
    assert node_exporters | {ports.KUBE_STATE_METRICS_PORT} == set(scraper.EXPORTER_PORTS.values())
    assert node_exporters <= set(eks_monitoring.EXPORTER_PORTS)
    assert set(lifecycle.EXPORTER_PORTS.values()) == node_exporters | {ports.SLURM_EXPORTER_PORT}
    assert efa_exporter.EFA_EXPORTER_PORT == ports.EFA_EXPORTER_PORT


def test_the_node_script_serves_the_contract_port() -> None:
    """The Prometheus agent configuration runs on the node with the standard library only, so
    it carries its own copy of the job-metrics port: it must be the contract's."""
    script = (PACKAGE / "orchestration/slurm/node_scripts/prometheus_agent_config.py").read_text(
        encoding="utf-8"
    )
    assert f"JOB_METRICS_PORT = {ports.JOB_METRICS_PORT}\n" in script
