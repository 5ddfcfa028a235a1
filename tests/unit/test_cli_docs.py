"""docs/cli.md shows every money column of the `fmc plan` output it quotes without scrolling:
each table's `$/hour` column ends within the width a docs page (and an 80-column terminal)
shows of a code block."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "cli.md"
#: Characters of a code line visible without scrolling.
VISIBLE = 80
_FIGURE = re.compile(r"<!-- figures:(plan-[\w-]+) -->\n```text\n(.*?)```", re.DOTALL)


def _money_columns(block: str) -> list[tuple[str, int]]:
    """(header line, end of its `$/hour` column) for each table header of a plan figure; the
    column ends where the dashes under it end."""
    lines = block.splitlines()
    found = []
    for header, rule in itertools.pairwise(lines):
        if "$/hour" not in header or not set(rule) <= {"-", " "} or not rule:
            continue
        start = header.index("$/hour")
        end = rule.find(" ", start)
        found.append((header, len(rule) if end < 0 else end))
    return found


def test_every_plan_figure_shows_its_hourly_columns_without_scrolling() -> None:
    figures = _FIGURE.findall(PAGE.read_text(encoding="utf-8"))
    assert {name for name, _ in figures} >= {"plan-default"}
    tables = 0
    for name, block in figures:
        for header, end in _money_columns(block):
            tables += 1
            assert end <= VISIBLE, f"{name}: `$/hour` ends at column {end}: {header}"
    # The workload, FSx and cost tables of at least the default profile's plan.
    assert tables >= 3
