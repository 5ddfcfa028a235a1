"""``platform.accepted_warnings``: a warning accepted in the profile is not shown again, by
fmc plan (profile codes) nor by cdk synth (construct warning ids); one not accepted still is."""

from __future__ import annotations

import json
from pathlib import Path

from fm_constructs.config import load_profile
from stacks.app_builder import build_stacks, create_app
from tests.stacks.profiles import ROOT, cdk_json_context
from tests.unit.cli_stubs import run

NO_ADMINS = "fm:no-cluster-admins"


def _profile(tmp_path: Path, accepted: list[str]) -> Path:
    text = (ROOT / "config" / "inference-g6e.toml").read_text()
    line = "accepted_warnings = [" + ", ".join(f'"{a}"' for a in accepted) + "]\n"
    path = tmp_path / "p.toml"
    path.write_text(text.replace("[platform]\n", "[platform]\n" + line, 1))
    return path


def _synth_warnings(tmp_path: Path, path: Path) -> list[str]:
    outdir = tmp_path / "out"
    app = create_app(outdir=str(outdir), context=cdk_json_context())
    build_stacks(app, load_profile(path))
    app.synth()
    warnings: list[str] = []
    for metadata in outdir.glob("*.metadata.json"):
        for entries in json.loads(metadata.read_text()).values():
            warnings += [str(e["data"]) for e in entries if e["type"] == "aws:cdk:warning"]
    manifest = json.loads((outdir / "manifest.json").read_text())
    for artifact in manifest["artifacts"].values():
        for entries in artifact.get("metadata", {}).values():
            warnings += [str(e["data"]) for e in entries if e["type"] == "aws:cdk:warning"]
    return warnings


def test_accepted_warnings_are_not_shown_again(tmp_path: Path) -> None:
    shipped = _synth_warnings(tmp_path / "shipped", _profile(tmp_path, []))
    assert any(NO_ADMINS in w for w in shipped)  # the warning exists to be accepted

    path = _profile(tmp_path, ["FM203", NO_ADMINS])
    plan = run("plan", "--config", str(path))
    assert plan.code == 0, plan.err
    assert "FM203" not in plan.out
    assert not any(NO_ADMINS in w for w in _synth_warnings(tmp_path / "accepted", path))


def test_only_the_listed_ones_are_accepted(tmp_path: Path) -> None:
    path = _profile(tmp_path, [NO_ADMINS])  # the construct id, not the profile code
    assert "FM203" in run("plan", "--config", str(path)).out
