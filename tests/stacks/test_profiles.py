"""Quality gates over every stack of every profile in config/: cdk-nag, cfn-lint, snapshots,
CloudFormation limits, and retained, pinned stateful resources."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.json import JSONSnapshotExtension

from fm_constructs.planning import aws_limits
from fm_constructs.testing import stable_template
from tests.stacks.profiles import (
    expected_stack_names,
    profile_params,
    stack_params,
    synthesize,
)
from tests.support import cfn_lint

MAX_RESOURCES = aws_limits.CFN_RESOURCES_PER_STACK.value
MAX_TEMPLATE_BYTES = aws_limits.CFN_TEMPLATE_BYTES.value
STATEFUL_TYPES = {
    "AWS::S3::Bucket",
    "AWS::KMS::Key",
    "AWS::FSx::FileSystem",
    "AWS::APS::Workspace",
}
PINNED_IDS_FILE = Path(__file__).with_name("pinned_logical_ids.json")


@pytest.fixture
def snapshot_json(snapshot: SnapshotAssertion) -> SnapshotAssertion:
    return snapshot.use_extension(JSONSnapshotExtension)


@pytest.mark.parametrize("profile", profile_params())
def test_profile_synthesizes_expected_stacks_without_nag_findings(profile: str) -> None:
    # synthesize() runs cdk-nag AwsSolutions; any unacknowledged finding raises there.
    result = synthesize(profile)
    assert sorted(result.templates) == sorted(expected_stack_names(result.profile))
    report = json.loads((result.outdir / "validation-report.json").read_text())
    plugins = {p["pluginName"]: p for p in report["pluginReports"]}
    for name, plugin in plugins.items():
        unexpected = [
            v
            for v in plugin["violations"]
            # Our own warnings (``fm:`` ids) explain a deliberate choice, e.g. no placement
            # group on a Capacity Block; anything else, from any plugin, fails.
            if not (v["severity"] == "warning" and v["ruleName"].startswith("Annotation::fm:"))
        ]
        assert unexpected == [], name


@pytest.mark.parametrize(("profile", "stack"), stack_params())
def test_stack_matches_snapshot(profile: str, stack: str, snapshot_json: SnapshotAssertion) -> None:
    # The same masking a consumer app's snapshot tests get from fm_constructs.testing.
    assert stable_template(synthesize(profile).templates[stack]) == snapshot_json


@pytest.mark.parametrize(("profile", "stack"), stack_params())
def test_stack_passes_cfn_lint(profile: str, stack: str) -> None:
    result = synthesize(profile)
    region = result.profile.platform.region
    assert cfn_lint(result.template_paths[stack].read_text(), region) == []


@pytest.mark.parametrize(("profile", "stack"), stack_params())
def test_stack_within_cloudformation_limits(profile: str, stack: str) -> None:
    result = synthesize(profile)
    template = result.templates[stack]
    assert len(template["Resources"]) < MAX_RESOURCES
    assert result.template_paths[stack].stat().st_size < MAX_TEMPLATE_BYTES


def _stateful(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] in STATEFUL_TYPES
    }


@pytest.mark.parametrize(("profile", "stack"), stack_params())
def test_stateful_resources_are_retained(profile: str, stack: str) -> None:
    for logical_id, resource in _stateful(synthesize(profile).templates[stack]).items():
        assert resource.get("DeletionPolicy") == "Retain", logical_id
        assert resource.get("UpdateReplacePolicy") == "Retain", logical_id


@pytest.mark.parametrize(("profile", "stack"), stack_params())
def test_stateful_logical_ids_are_pinned(profile: str, stack: str) -> None:
    """Renaming a construct must not silently replace a file system, bucket or key."""
    pinned = json.loads(PINNED_IDS_FILE.read_text())
    found = {
        logical_id: resource["Type"]
        for logical_id, resource in _stateful(synthesize(profile).templates[stack]).items()
    }
    assert found == pinned[profile][stack]
