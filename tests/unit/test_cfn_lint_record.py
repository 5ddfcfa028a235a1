"""The record of templates cfn-lint has passed (tests/support.py): a warm run skips linting a
template only when its exact text has passed under the same region, cfn-lint and settings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import support

REGION = "us-east-1"
CLEAN = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic"}}}
BROKEN = {"Resources": {"Topic": {"Type": "AWS::SNS::Topic", "Properties": {"Nope": 1}}}}


@pytest.fixture
def record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("FM_CFN_LINT_CACHE", raising=False)
    monkeypatch.setattr(support, "CFN_LINT_CACHE", tmp_path)
    return tmp_path


def test_a_pass_is_recorded_and_a_finding_never(record: Path) -> None:
    assert support.cfn_lint(CLEAN, REGION) == []
    assert len(list(record.iterdir())) == 1
    findings = support.cfn_lint(BROKEN, REGION)
    assert findings and any("Nope" in finding for finding in findings)
    assert support.cfn_lint(BROKEN, REGION) == findings  # linted again, not remembered
    assert len(list(record.iterdir())) == 1


def test_the_record_is_keyed_by_the_exact_text_and_the_region(record: Path) -> None:
    text = json.dumps(CLEAN)
    key = support._cfn_lint_passed(text, REGION)
    assert key is not None and key.parent == record
    assert key == support._cfn_lint_passed(text, REGION)
    assert key != support._cfn_lint_passed(text + " ", REGION)
    assert key != support._cfn_lint_passed(text, "us-west-2")


def test_the_record_is_keyed_by_the_cfn_lint_version(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps(CLEAN)
    key = support._cfn_lint_passed(text, REGION)
    monkeypatch.setattr(support.cfn_lint_version, "__version__", "0.0.0")
    assert key != support._cfn_lint_passed(text, REGION)


def test_a_recorded_pass_is_what_skips_the_linting(record: Path) -> None:
    """The record is consulted before linting: a pass planted for the broken template's digest
    is taken (so an unplanted one, as in the tests above, is what makes cfn-lint run)."""
    key = support._cfn_lint_passed(json.dumps(BROKEN), REGION)
    assert key is not None
    key.touch()
    assert support.cfn_lint(BROKEN, REGION) == []


def test_switched_off_nothing_is_read_or_written(
    record: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FM_CFN_LINT_CACHE", "off")
    assert support._cfn_lint_passed(json.dumps(CLEAN), REGION) is None
    assert support.cfn_lint(CLEAN, REGION) == []
    assert list(record.iterdir()) == []
