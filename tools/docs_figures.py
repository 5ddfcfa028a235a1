"""Regenerate every figure quoted in docs/ from the code that produces it.

Docs mark a generated block with ``<!-- figures:NAME -->`` ... ``<!-- /figures:NAME -->``.
``python tools/docs_figures.py`` rewrites the blocks in place (``make docs-figures``);
``--check`` exits 1 when a committed block is stale (the tests run the same comparison).
"""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from fm_constructs.planning.fsx_sizing import (  # noqa: E402
    format_sizing_table,
    reference_sizings,
)


def _fsx_sizing() -> str:
    return format_sizing_table(reference_sizings())


def _fsx_sizing_reasoning() -> str:
    lines: list[str] = []
    for name, result in reference_sizings().items():
        lines.append(f"{name}:")
        lines.extend(f"  {line}" for line in result.reasoning)
    return "```text\n" + "\n".join(lines) + "\n```"


def _plan_default() -> str:
    from fm_constructs.cli.main import main

    out = io.StringIO()
    with redirect_stdout(out):
        main(["plan", "--config", str(ROOT / "config" / "default.toml")])
    return "```text\n$ fmc plan --config config/default.toml\n" + out.getvalue().rstrip() + "\n```"


FIGURES: dict[str, Callable[[], str]] = {
    "fsx-sizing": _fsx_sizing,
    "fsx-sizing-reasoning": _fsx_sizing_reasoning,
    "plan-default": _plan_default,
}

_BLOCK = re.compile(r"(<!-- figures:([a-z0-9-]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.DOTALL)


def render(text: str) -> str:
    """``text`` with every figures block replaced by freshly generated content."""
    return _BLOCK.sub(lambda m: m.group(1) + FIGURES[m.group(2)]() + "\n" + m.group(4), text)


def stale_documents() -> list[Path]:
    """Docs whose generated blocks differ from what the code produces now."""
    return [p for p in sorted(ROOT.glob("docs/**/*.md")) if render(p.read_text()) != p.read_text()]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = stale_documents()
        for path in stale:
            print(f"stale figures in {path.relative_to(ROOT)}: run make docs-figures")
        return 1 if stale else 0
    for path in sorted(ROOT.glob("docs/**/*.md")):
        text = path.read_text()
        new = render(text)
        if new != text:
            path.write_text(new)
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
