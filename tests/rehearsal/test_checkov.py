"""checkov over every profile's synthesized templates: each failing check must be one of the
acknowledgements in checkov_acknowledged.toml (with its reason), and each acknowledgement
must still be needed.

checkov is not a dev dependency of the project's environment (it pins boto3 and packaging
below what the project uses); ``make rehearsal`` installs it into its own environment,
``.venv/checkov`` (``CHECKOV`` names another checkov executable). The test skips, saying so,
when there is none.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.rehearsal.conftest import ROOT, Assemblies

PROFILES = sorted(p.stem for p in (ROOT / "config").glob("*.toml"))
ACKNOWLEDGED = Path(__file__).with_name("checkov_acknowledged.toml")
CHECKOV = Path(os.environ.get("CHECKOV", ROOT / ".venv" / "checkov" / "bin" / "checkov"))
HASH = re.compile(r"[0-9A-F]{8}$")


def acknowledged() -> set[tuple[str, str]]:
    entries = tomllib.loads(ACKNOWLEDGED.read_text())["finding"]
    for entry in entries:
        assert entry["reason"].strip() and entry["owner"] in ("project", "aws-cdk-lib")
    return {(e["check"], name) for e in entries for name in e["resources"]}


def findings(assembly: Path, scratch: Path) -> set[tuple[str, str, str]]:
    """(check id, logical id without hash, template) of every failed check."""
    templates = scratch / assembly.name
    templates.mkdir()
    for template in assembly.glob("*.template.json"):
        shutil.copy(template, templates)
    done = subprocess.run(
        [
            str(CHECKOV),
            "-d",
            str(templates),
            "--framework",
            "cloudformation",
            "-o",
            "json",
            "--quiet",
            "--compact",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    report = json.loads(done.stdout)
    report = report[0] if isinstance(report, list) else report
    assert report["summary"]["parsing_errors"] == 0, report["summary"]
    return {
        (f["check_id"], HASH.sub("", f["resource"].split(".", 1)[1]), Path(f["file_path"]).name)
        for f in report["results"]["failed_checks"]
    }


@pytest.mark.skipif(not CHECKOV.exists(), reason="checkov not installed: run make rehearsal")
def test_checkov_leaves_only_acknowledged_findings(assemblies: Assemblies, tmp_path: Path) -> None:
    known = acknowledged()
    seen: set[tuple[str, str]] = set()
    unexplained = []
    for profile in PROFILES:
        for check, resource, template in sorted(findings(assemblies.get(profile), tmp_path)):
            seen.add((check, resource))
            if (check, resource) not in known:
                unexplained.append(f"{profile}/{template}: {check} on {resource}")
    assert not unexplained, "checkov findings without an acknowledgement:\n" + "\n".join(
        unexplained
    )
    assert known <= seen, f"acknowledgements no profile needs any more: {sorted(known - seen)}"
