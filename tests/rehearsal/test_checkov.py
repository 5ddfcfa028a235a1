"""checkov over every profile's synthesized templates: no failing check remains, and each check
the templates skip carries its reason at the resource (``Metadata.checkov.skip``, written by
:mod:`fm_constructs.policy.checkov`: by the constructs that create the resource, and for the
custom-resource handlers aws-cdk-lib creates by the aspect ``enable_nag`` adds).

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
from pathlib import Path
from typing import Any

import pytest

from tests.rehearsal.conftest import ROOT, Assemblies

PROFILES = sorted(p.stem for p in (ROOT / "config").glob("*.toml"))
CHECKOV = Path(os.environ.get("CHECKOV", ROOT / ".venv" / "checkov" / "bin" / "checkov"))
HASH = re.compile(r"[0-9A-F]{8}$")


def report(assembly: Path, scratch: Path) -> dict[str, list[dict[str, Any]]]:
    """checkov's results over the assembly's templates (failed and skipped checks)."""
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
            "--compact",
            "--skip-download",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    parsed = json.loads(done.stdout)
    parsed = parsed[0] if isinstance(parsed, list) else parsed
    assert parsed["summary"]["parsing_errors"] == 0, parsed["summary"]
    return dict(parsed["results"])


def _where(check: dict[str, Any]) -> str:
    resource = HASH.sub("", check["resource"].split(".", 1)[1])
    return f"{Path(check['file_path']).name}: {check['check_id']} on {resource}"


@pytest.mark.skipif(not CHECKOV.exists(), reason="checkov not installed: run make rehearsal")
def test_checkov_fails_nothing_and_every_skip_has_its_reason(
    assemblies: Assemblies, tmp_path: Path
) -> None:
    failed: list[str] = []
    unexplained: list[str] = []
    skipped = 0
    for profile in PROFILES:
        results = report(assemblies.get(profile), tmp_path)
        failed += [f"{profile}/{_where(c)}" for c in results.get("failed_checks", [])]
        for check in results.get("skipped_checks", []):
            skipped += 1
            comment = check.get("check_result", {}).get("suppress_comment", "")
            if len(comment.strip()) < 40 or comment == "No comment provided":
                unexplained.append(f"{profile}/{_where(check)}: {comment!r}")
    assert not failed, "checkov findings not fixed nor acknowledged at the resource:\n" + (
        "\n".join(failed)
    )
    assert not unexplained, "skips without a reason:\n" + "\n".join(unexplained)
    assert skipped, "no acknowledgement read: checkov no longer reads Metadata.checkov.skip?"
