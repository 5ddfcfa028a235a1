"""fm_constructs.testing (consumer snapshot tests) and fm_constructs.feature_flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_s3 as s3

from fm_constructs.feature_flags import feature_flags
from fm_constructs.testing import (
    HASH_PLACEHOLDER,
    assert_matches_snapshot,
    mask_unstable,
    new_app,
    stable_template,
)

ROOT = Path(__file__).resolve().parents[2]
HASH_A = "a" * 64
HASH_B = "0123456789abcdef" * 4


def _template(code_hash: str) -> dict[str, Any]:
    return {
        "Conditions": {"CDKMetadataAvailable": {"Fn::Equals": ["a", "a"]}},
        "Resources": {
            "CDKMetadata": {"Type": "AWS::CDK::Metadata", "Properties": {"Analytics": "v2:x"}},
            "Fn": {
                "Type": "AWS::Lambda::Function",
                "Properties": {"Code": {"S3Key": f"{code_hash}.zip"}},
                "Metadata": {"aws:asset:path": f"asset.{code_hash}"},
            },
            f"Layer{code_hash}": {"Type": "AWS::Lambda::LayerVersion"},
        },
    }


def test_asset_hashes_are_masked_in_keys_and_values() -> None:
    masked = stable_template(_template(HASH_A))
    assert masked == stable_template(_template(HASH_B))
    function = masked["Resources"]["Fn"]
    assert function["Properties"]["Code"]["S3Key"] == f"{HASH_PLACEHOLDER}.zip"
    assert f"Layer{HASH_PLACEHOLDER}" in masked["Resources"]


def test_cdk_metadata_is_dropped_with_its_condition() -> None:
    masked = stable_template(_template(HASH_A))
    assert "CDKMetadata" not in masked["Resources"]
    assert "Conditions" not in masked


def test_shorter_hex_is_kept() -> None:
    # Logical-ID suffixes (8 hex digits) are stable and meaningful: never masked.
    assert mask_unstable({"Ref": "Bucket83908E77"}) == {"Ref": "Bucket83908E77"}


def test_stable_template_of_a_stack_uses_the_published_flags() -> None:
    app = new_app()
    stack = cdk.Stack(app, "Consumer")
    s3.Bucket(stack, "Bucket")
    assert app.node.try_get_context("@aws-cdk/aws-s3:publicAccessBlockedByDefault") is True
    template = stable_template(stack)
    assert [r["Type"] for r in template["Resources"].values()] == ["AWS::S3::Bucket"]


def test_snapshot_missing_fails_instead_of_being_written(tmp_path: Path) -> None:
    path = tmp_path / "stack.json"
    with pytest.raises(AssertionError, match="FM_SNAPSHOT_UPDATE=1"):
        assert_matches_snapshot({"Resources": {}}, path, update=False)
    assert not path.exists()


def test_snapshot_update_then_match_then_named_difference(tmp_path: Path) -> None:
    path = tmp_path / "snapshots" / "stack.json"
    before = stable_template(_template(HASH_A))
    assert_matches_snapshot(before, path, update=True)
    assert_matches_snapshot(stable_template(_template(HASH_B)), path, update=False)
    after = json.loads(json.dumps(before))
    after["Resources"]["Fn"]["Properties"]["MemorySize"] = 512
    after["Resources"]["Extra"] = {"Type": "AWS::SNS::Topic"}
    with pytest.raises(AssertionError) as failure:
        assert_matches_snapshot(after, path, update=False)
    assert "Resources: added Extra" in str(failure.value)
    assert "Resources: changed Fn" in str(failure.value)


def test_update_is_read_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "stack.json"
    monkeypatch.setenv("FM_SNAPSHOT_UPDATE", "1")
    assert_matches_snapshot({"Resources": {}}, path)
    assert json.loads(path.read_text()) == {"Resources": {}}


def test_feature_flags_are_the_ones_the_repository_synthesizes_with() -> None:
    # cdk.json holds the flags and nothing else: no default profile (cdk commands name one).
    context = json.loads((ROOT / "cdk.json").read_text())["context"]
    assert context == feature_flags()


def test_feature_flags_module_prints_a_cdk_json_block(capsys: pytest.CaptureFixture[str]) -> None:
    from fm_constructs import feature_flags as module

    module.main()
    assert json.loads(capsys.readouterr().out) == {"context": feature_flags()}


def test_a_difference_names_the_property_path_and_both_values(tmp_path: Path) -> None:
    """Issue 33: a failing snapshot says which property changed, not only which resource."""
    path = tmp_path / "stack.json"
    before = {
        "Resources": {
            "Nodes": {
                "Type": "AWS::EKS::Nodegroup",
                "Properties": {
                    "ScalingConfig": {"DesiredSize": 2, "MaxSize": 2},
                    "Labels": {"a": "1"},
                    "Subnets": [{"Ref": "SubnetA"}, {"Ref": "SubnetB"}],
                },
            }
        }
    }
    assert_matches_snapshot(before, path, update=True)
    after = json.loads(json.dumps(before))
    properties = after["Resources"]["Nodes"]["Properties"]
    properties["ScalingConfig"]["DesiredSize"] = 3
    del properties["Labels"]["a"]
    properties["Subnets"][1] = {"Ref": "SubnetC"}
    properties["Taints"] = [{"Key": "gpu"}]
    with pytest.raises(AssertionError) as failure:
        assert_matches_snapshot(after, path, update=False)
    lines = str(failure.value).splitlines()
    for expected in (
        "  Resources: changed Nodes",
        "    Resources.Nodes.Properties.ScalingConfig.DesiredSize: 2 -> 3",
        '    Resources.Nodes.Properties.Labels.a: removed (was "1")',
        '    Resources.Nodes.Properties.Subnets[1].Ref: "SubnetB" -> "SubnetC"',
        '    Resources.Nodes.Properties.Taints: added [{"Key": "gpu"}]',
    ):
        assert expected in lines, str(failure.value)
    assert "Resources.Nodes.Properties.ScalingConfig.MaxSize" not in str(failure.value)


def test_long_values_and_many_differences_are_cut(tmp_path: Path) -> None:
    path = tmp_path / "stack.json"
    before = {"Resources": {f"R{i:03}": {"Type": "T", "Properties": {"V": i}} for i in range(60)}}
    assert_matches_snapshot(before, path, update=True)
    after = json.loads(json.dumps(before))
    for i in range(60):
        after["Resources"][f"R{i:03}"]["Properties"]["V"] = "x" * 200
    with pytest.raises(AssertionError) as failure:
        assert_matches_snapshot(after, path, update=False)
    text = str(failure.value)
    assert "more lines" in text
    assert max(len(line) for line in text.splitlines()[1:-2]) < 200
