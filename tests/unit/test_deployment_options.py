"""The options a profile maps to (config/options.py) are complete: the deployment pattern reads
nothing else, and each options type carries the keyword names of what it is built into."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from fm_constructs.config import CapacityKind, Orchestrator, ServingMetric, load_profile
from fm_constructs.config.deployment import options_for_deployment
from fm_constructs.config.options import (
    FSX_DIRECTORIES,
    DeploymentOptions,
    ModelServerOptions,
    deployment_options,
)
from fm_constructs.config.overrides import deployment_profile
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.fsx_sizing import FsxSizingRequest
from fm_constructs.planning.pod_networking import PodNetworking

ROOT = Path(__file__).resolve().parents[2]


def _options(name: str) -> DeploymentOptions:
    return deployment_options(load_profile(ROOT / "config" / f"{name}.toml"))


def test_default_profile_options_hold_every_part() -> None:
    options = _options("default")
    platform = options.platform
    assert platform.name == "fm" and platform.observability and platform.grafana
    assert platform.pod_cidr is None  # node-subnet addressing: no pod subnet
    assert list(options.workloads) == ["pretraining", "post_training", "inference"]
    cluster = options.clusters["shared"]
    # p5en trainers, g6e rollout and inference nodes: one NVIDIA device-plugin family.
    assert cluster.device_plugin_families == ("NVIDIA",)
    assert cluster.region == platform.region and cluster.scraped
    pre = options.workloads["pretraining"]
    assert pre.eks_nodes and pre.owns_file_system and pre.has_storage_stack
    assert pre.capacity is not None and pre.capacity.availability_zone == platform.availability_zone
    assert pre.capacity.instance_type == pre.instance_type
    assert pre.file_system is not None
    assert pre.file_system.directories == FSX_DIRECTORIES["pretraining"]
    post = options.workloads["post_training"]
    assert post.rollout is not None and post.rollout.partition_name is None  # EKS: no partition
    assert dict(post.node_group_subnets) == {}
    serving = options.workloads["inference"].inference
    assert serving is not None and serving.model_server is not None
    assert serving.autoscaling is not None
    assert serving.autoscaling.metric in tuple(ServingMetric)
    assert serving.max_node_count >= options.workloads["inference"].instance_count


def test_hyperpod_and_pcs_options() -> None:
    slurm = _options("hyperpod-slurm").workloads["pretraining"]
    assert slurm.hyperpod is not None
    assert slurm.hyperpod.orchestrator is Orchestrator.HYPERPOD_SLURM and slurm.hyperpod.training
    assert slurm.capacity is not None and slurm.capacity.kind is CapacityKind.TRAINING_PLAN
    assert slurm.cluster is None and not slurm.eks_nodes and slurm.node_pools == ()
    pcs = _options("pcs").workloads["pretraining"]
    assert pcs.orchestrator is Orchestrator.PCS and pcs.hyperpod is None
    assert pcs.efa_layout in tuple(EfaLayout)
    eks = _options("hyperpod-eks")
    post = eks.workloads["post_training"]
    assert post.hyperpod is not None and post.cluster is not None
    assert post.cluster in eks.clusters and not post.eks_nodes


def test_file_system_settings_are_lustre_file_system_keywords() -> None:
    from fm_constructs.storage import LustreFileSystem

    accepted = set(inspect.signature(LustreFileSystem.__init__).parameters)
    for name in ("default", "hyperpod-slurm", "pcs", "pretraining-1024"):
        for w in _options(name).workloads.values():
            if w.file_system is not None:
                assert set(w.file_system.settings) <= accepted, (name, w.name)
                sizing = w.file_system.sizing
                assert sizing is None or isinstance(sizing, FsxSizingRequest)


def test_model_server_options_are_model_server_spec_keywords() -> None:
    from fm_constructs.patterns import ModelServerSpec

    spec_fields = {f.name for f in dataclasses.fields(ModelServerSpec)}
    assert {f.name for f in dataclasses.fields(ModelServerOptions)} <= spec_fields


def test_no_autoscaling_without_observability() -> None:
    from fm_constructs.config import parse_profile
    from tests import profile_data
    from tests.profile_data import changed

    data = changed(
        changed(profile_data.BASE, profile_data.INFERENCE),
        {
            "inference.model.model_s3_prefix": "models/llama-3.1-8b-instruct/",
            "inference.model.served_model_name": "meta-llama/Llama-3.1-8B-Instruct",
            "inference.model.max_replicas": 4,
            "inference.max_instance_count": 4,
            "platform.observability": False,
        },
    )
    options = deployment_options(parse_profile(data))
    serving = options.workloads["inference"].inference
    assert serving is not None and serving.model_server is not None
    assert serving.autoscaling is None
    assert not options.platform.grafana and not options.clusters["shared"].scraped


def test_options_follow_pod_networking() -> None:
    options = _options("pretraining-1024")
    custom = options.pod_networking is PodNetworking.CUSTOM_NETWORKING
    assert (options.platform.pod_cidr is not None) == custom
    assert all(c.custom_networking == custom for c in options.clusters.values())


def test_deployment_profile_checks_scale_and_admin_roles() -> None:
    profile = load_profile(ROOT / "config" / "default.toml")
    arn = "arn:aws:iam::123456789012:role/PlatformAdmin"
    assert deployment_profile(profile, admin_roles=arn).platform.admin_role_arns == (arn,)
    with pytest.raises(FmValidationError):
        deployment_profile(profile, admin_roles="not-an-arn")


def test_options_for_deployment_checks_overrides_then_maps() -> None:
    """The one call a deployment makes: the admin roles of the context in every cluster's and
    HyperPod cluster's options; a bad context value raises before anything is mapped."""
    profile = load_profile(ROOT / "config" / "default.toml")
    arn = "arn:aws:iam::123456789012:role/PlatformAdmin"
    options = options_for_deployment(profile, admin_roles=arn)
    assert options == deployment_options(deployment_profile(profile, admin_roles=arn))
    assert all(c.admin_role_arns == (arn,) for c in options.clusters.values())
    assert options_for_deployment(profile) == deployment_options(profile)
    with pytest.raises(FmValidationError):
        options_for_deployment(profile, admin_roles="not-an-arn")


def test_options_name_every_stack() -> None:
    """Each part's options carry its stacks' names and descriptions (``<name>-<part>``)."""
    options = _options("default")
    platform = options.platform
    assert platform.stack.name == "fm-platform" and platform.stack.termination_protection
    assert platform.grafana_stack is not None and platform.grafana_stack.name == "fm-grafana"
    shared = options.clusters["shared"]
    assert (shared.stack.name, shared.addons_stack.name) == ("fm-cluster", "fm-cluster-addons")
    assert shared.stack.description == (
        "fm-constructs shared GPU EKS cluster (pre-training, post-training, inference)"
    )
    assert shared.monitoring_stack is not None and shared.monitoring_stack.part == "shared"
    post = options.workloads["post_training"]
    assert post.compute_stack is not None and post.compute_stack.name == "fm-post-training-compute"
    assert post.stack is not None and post.stack.name == "fm-post-training"
    assert post.stack.description == (
        "fm-constructs post-training (SFT, RL): 2 x p5en.48xlarge in us-east-1a"
    )
    for profile in ("default", "hyperpod-slurm"):
        for w in _options(profile).workloads.values():
            # A stack of its own for its file system or HyperPod/AWS PCS cluster only.
            assert (w.stack is not None) == (not w.eks_nodes or w.owns_file_system)
            assert (w.compute_stack is not None) == w.eks_nodes


def test_stacks_read_options_only() -> None:
    """stacks/ create stacks, call the deployment pattern and write outputs: under 400 lines,
    no switch on a config class, no profile field read (they receive options)."""
    sources = {p: p.read_text() for p in sorted((ROOT / "stacks").glob("*.py"))}
    assert sum(text.count("\n") for text in sources.values()) < 400
    for path, text in sources.items():
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance":
                pytest.fail(f"{path.name}:{node.lineno}: isinstance switch")
            if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) == "profile":
                pytest.fail(f"{path.name}:{node.lineno}: reads profile.{node.attr}")
            if isinstance(node, ast.ImportFrom) and node.module == "fm_constructs.config.model":
                pytest.fail(f"{path.name}:{node.lineno}: imports the profile model")
