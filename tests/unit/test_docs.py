"""Figures quoted in docs/ come from the code: a stale block fails here."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import docs_figures  # noqa: E402


def test_docs_figures_are_current() -> None:
    # Figures drawn from a synthesized profile (architecture diagrams, retained resources)
    # are left alone here; tests/stacks/test_architecture_docs.py checks them against the shared
    # synthesis.
    assert docs_figures.stale_documents() == [], "run make docs-figures"


def test_every_figures_block_has_a_generator() -> None:
    for path in ROOT.glob("docs/**/*.md"):
        for match in docs_figures._BLOCK.finditer(path.read_text()):
            name = match.group(2)
            assert name in docs_figures.FIGURES or name in docs_figures.SYNTH_FIGURES, (path, name)
