"""The app's own tests, as a team would write them: a snapshot of the synthesized stack (asset
hashes masked, so it is stable across runs and machines) and a few facts worth stating."""

from __future__ import annotations

from pathlib import Path

import pytest
from aws_cdk.assertions import Match, Template

from app import build
from fm_constructs.testing import assert_matches_snapshot, new_app, stable_template

SNAPSHOT = Path(__file__).parent / "snapshots" / "team-training.json"


@pytest.fixture(scope="module")
def template() -> Template:
    # new_app(): an App with the feature flags fm-constructs is tested with (cdk.json's block).
    return Template.from_stack(build(new_app()))


def test_stack_matches_snapshot(template: Template) -> None:
    # FM_SNAPSHOT_UPDATE=1 pytest rewrites the snapshot after an intended change.
    assert_matches_snapshot(stable_template(template), SNAPSHOT)


def test_two_gpu_nodes_on_demand(template: Template) -> None:
    template.has_resource_properties(
        "AWS::EKS::Nodegroup",
        {"ScalingConfig": Match.object_like({"DesiredSize": 2}), "CapacityType": "ON_DEMAND"},
    )


def test_file_system_is_retained(template: Template) -> None:
    template.has_resource("AWS::FSx::FileSystem", {"DeletionPolicy": "Retain"})
