"""The hyperpod-eks profile on an EFA-enabled file system: its HyperPod EKS cluster's
provisioning parameters give every worker group the FSx guide's LNet interfaces within a share
of the file system's 1,024 EFA connections counted over every EFA node (FM316's count), its
lifecycle prefix carries the LNet boot script, and the template passes cfn-lint; the profile as
shipped (no EFA) keeps the two lifecycle sources and no interface counts."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import aws_cdk as cdk

from fm_constructs.config import parse_profile
from fm_constructs.orchestration.hyperpod import HyperPodCluster
from fm_constructs.orchestration.hyperpod.lifecycle import LNET_EFA_BOOT, lifecycle_files
from stacks.app_builder import build_stacks, create_app
from tests.stacks.profiles import cdk_json_context
from tests.support import cfn_lint

PROFILE = Path(__file__).resolve().parents[2] / "config" / "hyperpod-eks.toml"


def _profile(efa: bool) -> dict[str, Any]:
    raw: dict[str, Any] = tomllib.loads(PROFILE.read_text())
    if efa:
        # The smallest EFA-enabled file system at 1000 MB/s/TiB.
        raw["post_training"]["storage"] = {
            "storage_capacity_gib": 4800,
            "throughput_mb_s_per_tib": 1000,
            "efa_enabled": True,
        }
    return raw


def _cluster(efa: bool) -> tuple[HyperPodCluster, dict[str, Any]]:
    app = create_app(context=cdk_json_context())
    build_stacks(app, parse_profile(_profile(efa)))
    (cluster,) = [c for c in app.node.find_all() if isinstance(c, HyperPodCluster)]
    stack = cdk.Stack.of(cluster)
    template: dict[str, Any] = app.synth().get_stack_by_name(stack.stack_name).template
    return cluster, template


def _sources(template: dict[str, Any]) -> int:
    (deployment,) = [
        r for r in template["Resources"].values() if r["Type"] == "Custom::CDKBucketDeployment"
    ]
    return len(deployment["Properties"]["SourceObjectKeys"])


def test_hyperpod_eks_nodes_of_an_efa_file_system_get_their_lnet_interfaces() -> None:
    cluster, template = _cluster(efa=True)
    parameters = cluster.lifecycle.parameters
    counts = {g["instance_type"]: g["lnet_efa_interfaces"] for g in parameters["worker_groups"]}
    # 4 p5 + 2 g6e = 6 EFA nodes: 1024 // 6 leaves the guide's 8 for p5 and 2 for g6e.
    assert counts == {"ml.p5.48xlarge": 8, "ml.g6e.48xlarge": 2}
    assert set(lifecycle_files(parameters)) == {LNET_EFA_BOOT}
    assert _sources(template) == 3
    assert cfn_lint(template, "us-west-2") == []


def test_the_shipped_profile_keeps_its_lifecycle_prefix() -> None:
    cluster, template = _cluster(efa=False)
    assert all(
        "lnet_efa_interfaces" not in g for g in cluster.lifecycle.parameters["worker_groups"]
    )
    assert _sources(template) == 2
