"""Synthesize each shipped profile once per test process, the way ``cdk synth`` does."""

from __future__ import annotations

import functools
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.config import Orchestrator, Profile, load_profile
from fm_constructs.planning.capacity_block import SYNTH_TIME_CONTEXT
from fm_constructs.policy import enable_compliance_packs, enable_nag
from stacks.app_builder import DeploymentStacks, build_stacks, create_app

ROOT = Path(__file__).resolve().parents[2]
PROFILE_PATHS = sorted((ROOT / "config").glob("*.toml"))
PROFILE_NAMES = [p.stem for p in PROFILE_PATHS]


@dataclass(frozen=True)
class SynthesizedProfile:
    """One profile's synthesized cloud assembly."""

    name: str
    profile: Profile
    stacks: DeploymentStacks
    outdir: Path
    templates: dict[str, dict[str, Any]]  # stack name -> template
    template_paths: dict[str, Path]


#: The moment the profile syntheses take as now (before every shipped Capacity Block).
SYNTH_TIME = "2026-12-01T00:00:00Z"


def cdk_json_context() -> dict[str, Any]:
    """The context (feature flags) from cdk.json, so tests synthesize what the CLI does."""
    context: dict[str, Any] = json.loads((ROOT / "cdk.json").read_text())["context"]
    return context


#: Set by tests/conftest.py under ``--dist loadgroup``, where each profile's tests share one
#: synthesis only when they all run in the profile's xdist group.
GROUPED_BY_PROFILE = False


def synthesize(name: str) -> SynthesizedProfile:
    """Synthesize ``config/<name>.toml`` with cdk-nag on (AwsSolutions, HIPAA Security, NIST
    800-53 R5); unacknowledged findings raise here. Cached per process; under ``--dist
    loadgroup`` only a test in the profile's group may ask (another would synthesize the profile
    a second time on the other worker)."""
    if GROUPED_BY_PROFILE:
        test = os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0]
        if not test.endswith(f"@{name}"):
            raise RuntimeError(
                f"{test} synthesizes profile {name!r} outside its xdist group: parametrize it by "
                f"`profile` or mark it pytest.mark.xdist_group({name!r})"
            )
    return _synthesize(name)


@functools.cache
def _synthesize(name: str) -> SynthesizedProfile:
    return synthesize_profile(name, load_profile(ROOT / "config" / f"{name}.toml"))


def synthesize_profile(name: str, profile: Profile) -> SynthesizedProfile:
    """Synthesize ``profile`` (a shipped one, or one derived from it) like :func:`synthesize`;
    callers cache the result (each synthesis costs seconds)."""
    outdir = Path(tempfile.mkdtemp(prefix=f"fm-synth-{name}-"))
    # A fixed synthesis moment: a Capacity Block's schedules depend on whether it has started.
    context = {**cdk_json_context(), SYNTH_TIME_CONTEXT: SYNTH_TIME}
    app = create_app(outdir=str(outdir), context=context)
    stacks = build_stacks(app, profile)
    enable_nag(app)
    enable_compliance_packs(app)
    assembly = app.synth()
    templates: dict[str, dict[str, Any]] = {}
    paths: dict[str, Path] = {}
    for artifact in assembly.stacks:
        path = Path(assembly.directory) / artifact.template_file
        templates[artifact.stack_name] = json.loads(path.read_text())
        paths[artifact.stack_name] = path
    return SynthesizedProfile(name, profile, stacks, outdir, templates, paths)


def profile_params() -> list[Any]:
    """One pytest param per profile, grouped so xdist runs a profile's tests on one worker."""
    return [pytest.param(n, id=n, marks=pytest.mark.xdist_group(n)) for n in PROFILE_NAMES]


def stack_params() -> list[Any]:
    """One pytest param per (profile, stack), grouped by profile for xdist."""
    return list(_stack_params())


@functools.cache
def _stack_params() -> tuple[Any, ...]:
    """:func:`stack_params`, built once per process: each call loads and validates every
    profile, and the profile tests parametrize five tests with it."""
    params = []
    for name in PROFILE_NAMES:
        profile = load_profile(ROOT / "config" / f"{name}.toml")
        for stack_name in expected_stack_names(profile):
            params.append(
                pytest.param(
                    name,
                    stack_name,
                    id=f"{name}__{stack_name}",
                    marks=pytest.mark.xdist_group(name),
                )
            )
    return tuple(params)


def expected_stack_names(profile: Profile) -> list[str]:
    """Stack names a profile yields, derived from the profile without synthesizing it: the
    platform (and its Grafana stack), one shared cluster (control plane, add-ons and
    monitoring) for the EKS-orchestrated workloads unless one asks for its own, each
    workload's file-system stack (HyperPod: with its cluster) and, on EKS, its compute
    stack."""
    prefix = profile.platform.name
    names = [f"{prefix}-platform"]
    if profile.platform.observability and profile.platform.grafana:
        names.append(f"{prefix}-grafana")
    eks_workloads = [
        w
        for w in profile.enabled_workloads
        if w.orchestrator in (Orchestrator.EKS, Orchestrator.HYPERPOD_EKS)
    ]
    clusters = {"cluster" for w in eks_workloads if not w.dedicated_cluster}
    clusters |= {f"{w.name}-cluster" for w in eks_workloads if w.dedicated_cluster}
    for cluster in sorted(clusters):
        names.append(f"{prefix}-{cluster}".replace("_", "-"))
        names.append(f"{prefix}-{cluster}-addons".replace("_", "-"))
        if profile.platform.observability:
            names.append(f"{prefix}-{cluster}-monitoring".replace("_", "-"))
    for w in profile.enabled_workloads:
        stem = f"{prefix}-{w.name.replace('_', '-')}"
        owns_storage = w.storage.enabled and not w.reuses_pretraining_storage
        if w.orchestrator is not Orchestrator.EKS or owns_storage:
            names.append(stem)
        if w.orchestrator is Orchestrator.EKS:
            names.append(f"{stem}-compute")
    return names
