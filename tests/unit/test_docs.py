"""Figures quoted in docs/ come from the code: a stale block fails here."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import docs_figures  # noqa: E402


def test_docs_figures_are_current() -> None:
    assert docs_figures.stale_documents() == [], "run make docs-figures"


def test_every_figures_block_has_a_generator() -> None:
    for path in ROOT.glob("docs/**/*.md"):
        for match in docs_figures._BLOCK.finditer(path.read_text()):
            assert match.group(2) in docs_figures.FIGURES, (path, match.group(2))
