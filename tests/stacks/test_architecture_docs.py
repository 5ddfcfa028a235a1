"""The committed architecture diagrams and retained-resource lists match the synthesized app.

Each profile is rendered from the synthesis the other stack tests share (tests/stacks/profiles,
cached per process, grouped per profile for xdist), so this adds no synthesis of its own.
"""

from __future__ import annotations

import re
import sys

import pytest

from fm_constructs.config import load_profile
from tests.stacks.profiles import (
    PROFILE_NAMES,
    ROOT,
    expected_stack_names,
    profile_params,
    synthesize,
)

sys.path.insert(0, str(ROOT / "tools"))

import docs_figures


def _templates(profile: str) -> dict[str, dict[str, object]]:
    return synthesize(profile).templates


@pytest.mark.parametrize("profile", profile_params())
def test_committed_diagrams_are_current(profile: str) -> None:
    names = (f"architecture-{profile}", f"retained-{profile}")
    page = ROOT / "docs" / "architecture" / f"{profile}.md"
    for name in names:
        assert f"<!-- figures:{name} -->" in page.read_text(), f"{page.name} lacks {name}"
    for path in sorted((ROOT / "docs").glob("**/*.md")):
        text = path.read_text()
        fresh = docs_figures.render(text, synthesize=_templates, names=names)
        assert fresh == text, f"{path.relative_to(ROOT)} is stale: run make diagrams"


def test_every_profile_has_an_architecture_page() -> None:
    pages = {p.stem for p in (ROOT / "docs" / "architecture").glob("*.md")} - {"index"}
    assert pages == set(PROFILE_NAMES)


def test_the_index_lists_each_profiles_stacks() -> None:
    """docs/architecture/index.md names every stack each shipped profile deploys, in order."""
    rows = {}
    for line in (ROOT / "docs" / "architecture" / "index.md").read_text().splitlines():
        if line.startswith("| [") and "](" in line:
            name = line.split("[", 1)[1].split("]", 1)[0]
            rows[name] = re.findall(r"`([^`]+)`", line.split("|")[2])
    assert set(rows) == set(PROFILE_NAMES)
    for name in PROFILE_NAMES:
        expected = expected_stack_names(load_profile(ROOT / "config" / f"{name}.toml"))
        assert rows[name] == expected, f"docs/architecture/index.md, row {name}"
