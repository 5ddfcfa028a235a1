"""examples/training-cluster: a separate app that imports fm_constructs as an installed package.

Synthesized once (as `cdk synth` runs it: `python app.py` in the example's directory, with
CDK_OUTDIR), then every template goes through cfn-lint. cdk-nag runs inside the app: an
unacknowledged finding fails the synthesis.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stacks.profiles import ROOT
from tests.support import cfn_lint

EXAMPLE = ROOT / "examples" / "training-cluster"


@pytest.fixture(scope="module")
def assembly(tmp_path_factory: pytest.TempPathFactory) -> Path:
    outdir = tmp_path_factory.mktemp("example-out")
    # The example directory is the working directory and the repository root is not on
    # PYTHONPATH: fm_constructs must come from the installed package.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["CDK_OUTDIR"] = str(outdir)
    result = subprocess.run(
        [sys.executable, "app.py"], cwd=EXAMPLE, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    return outdir


def _templates(outdir: Path) -> dict[str, Path]:
    manifest = json.loads((outdir / "manifest.json").read_text())
    return {
        artifact["properties"].get("stackName", name): outdir
        / artifact["properties"]["templateFile"]
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }


def test_example_synthesizes_its_own_stack_from_building_blocks(assembly: Path) -> None:
    templates = _templates(assembly)
    assert list(templates) == ["team-training"]
    resources = json.loads(templates["team-training"].read_text())["Resources"]
    types = {r["Type"] for r in resources.values()}
    for expected in (
        "AWS::EC2::VPC",
        "AWS::S3::Bucket",
        "AWS::FSx::FileSystem",
        "AWS::EKS::Cluster",
        "AWS::EKS::Nodegroup",
        "AWS::APS::Scraper",
    ):
        assert expected in types


def test_example_templates_pass_cfn_lint(assembly: Path) -> None:
    for path in _templates(assembly).values():
        assert cfn_lint(path.read_text(), "us-east-1") == [], path.name


def test_example_does_not_reach_into_the_repository() -> None:
    source = (EXAMPLE / "app.py").read_text()
    assert "sys.path" not in source
    assert "from stacks" not in source and "import stacks" not in source
