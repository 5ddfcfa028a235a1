"""Terminal output: aligned tables, progress lines on stderr, and ``--json`` documents.

Tables and results go to stdout; progress goes to stderr, so ``fmc ... --json | jq`` sees only
the JSON document and a terminal still shows what is happening.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, TextIO


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned text columns, right-aligned numbers, a rule under the header."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for index, text in enumerate(row):
            widths[index] = max(widths[index], len(text))
    numeric = [
        all(_is_number(row[index]) for row in rows) and bool(rows) for index in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [
            value.rjust(widths[i]) if numeric[i] else value.ljust(widths[i])
            for i, value in enumerate(values)
        ]
        return "  ".join(parts).rstrip()

    out = [line(list(headers)), "  ".join("-" * w for w in widths)]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def render_pairs(pairs: Sequence[tuple[str, object]]) -> str:
    """``key: value`` lines with the values aligned."""
    width = max((len(key) for key, _ in pairs), default=0)
    return "\n".join(f"{key.ljust(width)}  {_cell(value)}" for key, value in pairs)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:,.2f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def _json_default(value: object) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    raise TypeError(f"cannot serialize {type(value).__name__}")


def to_json(document: object) -> str:
    """Stable, indented JSON (dates as ISO 8601)."""
    return json.dumps(document, indent=2, sort_keys=False, default=_json_default)


@dataclass
class Reporter:
    """Where a command writes: results to ``out``, progress to ``err`` (silenced by --json)."""

    json_mode: bool = False
    out: TextIO = field(default_factory=lambda: sys.stdout)
    err: TextIO = field(default_factory=lambda: sys.stderr)

    def progress(self, message: str) -> None:
        """A progress line on stderr (not in --json mode)."""
        if not self.json_mode:
            print(f"... {message}", file=self.err, flush=True)

    def print(self, text: str = "") -> None:
        print(text, file=self.out)

    def error(self, message: str) -> None:
        print(f"fmc: error: {message}", file=self.err)

    def emit_json(self, document: object) -> None:
        print(to_json(document), file=self.out)
