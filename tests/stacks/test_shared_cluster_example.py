"""examples/shared-cluster: pre-training and inference on one shared cluster, from the
patterns, in a separate app that imports fm_constructs as an installed package. Synthesized
once (``python app.py`` in its directory, cdk-nag inside the app), then cfn-linted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from tests.stacks.profiles import ROOT
from tests.support import cfn_lint

EXAMPLE = ROOT / "examples" / "shared-cluster"


@pytest.fixture(scope="module")
def templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    outdir = tmp_path_factory.mktemp("shared-example-out")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CDK_OUTDIR"] = str(outdir)
    result = subprocess.run(
        [sys.executable, "app.py"], cwd=EXAMPLE, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    manifest = json.loads((outdir / "manifest.json").read_text())
    return {
        name: json.loads((outdir / artifact["properties"]["templateFile"]).read_text())
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }


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
