"""examples/shared-cluster: pre-training and inference on one shared cluster, from the
patterns, in a separate app that imports only the fm_constructs package. Synthesized once
(its ``app.py`` run as a script, cdk-nag inside the app), then cfn-linted."""

from __future__ import annotations

import json
import runpy
from typing import Any

import pytest

from tests.stacks.profiles import ROOT
from tests.support import cfn_lint

pytestmark = pytest.mark.xdist_group("shared-cluster-example")

EXAMPLE = ROOT / "examples" / "shared-cluster"


@pytest.fixture(scope="module")
def templates() -> dict[str, dict[str, Any]]:
    """Run ``app.py`` as ``python app.py`` would (its last line synthesizes, cdk-nag on), in
    this process so it shares the test session's jsii runtime; the app's cached assembly."""
    namespace = runpy.run_path(str(EXAMPLE / "app.py"), run_name="__main__")
    assembly = namespace["app"].synth()
    return {stack.stack_name: stack.template for stack in assembly.stacks}


def _types(template: dict[str, Any]) -> list[str]:
    return [r["Type"] for r in template["Resources"].values()]


def test_two_workloads_share_one_cluster(templates: dict[str, dict[str, Any]]) -> None:
    assert sorted(templates) == ["team-inference", "team-platform", "team-pretraining"]
    clusters = [
        s for s, t in templates.items() for kind in _types(t) if kind == "AWS::EKS::Cluster"
    ]
    assert clusters == ["team-platform"]
    for stack in ("team-pretraining", "team-inference"):
        kinds = _types(templates[stack])
        assert "AWS::EKS::Nodegroup" in kinds and "AWS::EKS::PodIdentityAssociation" in kinds
        manifests = json.dumps(templates[stack])
        assert "ClusterQueue" in manifests and "LocalQueue" in manifests


def test_example_templates_pass_cfn_lint(templates: dict[str, dict[str, Any]]) -> None:
    for name, template in templates.items():
        assert cfn_lint(json.dumps(template), "us-east-1") == [], name


def test_example_is_short_and_stays_out_of_the_repository() -> None:
    source = (EXAMPLE / "app.py").read_text()
    assert len(source.splitlines()) < 60
    assert "sys.path" not in source
    assert "from stacks" not in source and "import stacks" not in source
