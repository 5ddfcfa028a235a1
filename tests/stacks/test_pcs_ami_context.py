"""The PCS node AMI comes from the profile only: a synthesis given the former
``-c pcs_ami_id=...`` context value stops with the key and the command before it builds a
stack (the profile snapshot shows the pinned id in both node groups and no AMI parameter)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fm_constructs.config import load_profile
from fm_constructs.errors import FmValidationError
from stacks.app_builder import build_stacks, create_app
from tests.stacks.profiles import ROOT, cdk_json_context


def test_the_former_context_value_stops_the_synthesis_with_the_fix(tmp_path: Path) -> None:
    profile = load_profile(ROOT / "config" / "pcs.toml")
    app = create_app(
        outdir=str(tmp_path), context={**cdk_json_context(), "pcs_ami_id": "ami-0123456789abcdef0"}
    )
    with pytest.raises(FmValidationError) as stopped:
        build_stacks(app, profile)
    (finding,) = stopped.value.findings
    assert (finding.code, finding.key) == ("FM337", "-c pcs_ami_id")
    assert "fmc pcs-ami --config <profile> --write" in finding.line()
