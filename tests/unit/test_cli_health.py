"""fmc health: the DCGM job rendered for the profile's own nodes (not p5 x 2), valid against
the Kubernetes schema of the profile's version."""

from __future__ import annotations

import json

import pytest
import yaml

from fm_constructs.config import load_profile
from tests.kubernetes_schemas import validate_builtin
from tests.unit.cli_stubs import DEFAULT_PROFILE, REPO, run

SERVE = str(REPO / "config" / "inference-g6e.toml")
SLURM = str(REPO / "config" / "hyperpod-slurm.toml")


def _job(out: str) -> dict:  # type: ignore[type-arg]
    (job,) = [d for d in yaml.safe_load_all(out) if d]
    return job  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("profile", "workload", "instance_type", "gpus", "nodes"),
    [
        (SERVE, None, "g6e.48xlarge", "8", 4),
        (DEFAULT_PROFILE, "post_training", "p5en.48xlarge", "8", 2),
        (DEFAULT_PROFILE, "pretraining", "p5.48xlarge", "8", 4),
    ],
)
def test_the_job_is_the_workloads(
    profile: str, workload: str | None, instance_type: str, gpus: str, nodes: int
) -> None:
    argv = ["health", "--config", profile, *(["--workload", workload] if workload else [])]
    result = run(*argv)
    assert result.code == 0, result.err
    job = _job(result.out)
    pod = job["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"node.kubernetes.io/instance-type": instance_type}
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": gpus}
    assert job["spec"]["completions"] == nodes
    # The privileged job runs in the workload's diagnostics namespace, and the printed wait
    # command names that namespace.
    namespace = job["metadata"]["namespace"]
    assert namespace.endswith("-diagnostics")
    assert f"kubectl -n {namespace} wait" in result.out
    validate_builtin(job, load_profile(profile).platform.kubernetes_version)


def test_nodes_and_json() -> None:
    result = run("health", "--config", SERVE, "--nodes", "2", "--json")
    document = json.loads(result.out)
    assert document["schema"] == "fmc.health/v1"
    assert document["objects"][0]["spec"]["parallelism"] == 2


def test_slurm_only_profile_is_refused_with_the_reason() -> None:
    result = run("health", "--config", SLURM)
    assert result.code == 2
    assert "HyperPod's deep health checks" in result.err


def test_pcs_profile_is_refused_like_slurm_on_hyperpod() -> None:
    """AWS PCS runs Slurm, not Kubernetes: no Kubernetes Job is rendered for its nodes."""
    result = run("health", "--config", SLURM.replace("hyperpod-slurm.toml", "pcs.toml"))
    assert result.code == 2, result.out
    assert "on AWS PCS run dcgmi diag through sbatch" in result.err
