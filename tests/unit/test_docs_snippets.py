"""Every Python code block of the docs parses, imports each name from the public module it
really lives in, and imports every class it uses; the example apps follow the same import
rule. Fast: nothing is synthesized (the example apps are synthesized by tests/stacks)."""

from __future__ import annotations

import ast
import builtins
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')
#: Where a documented name may be imported from: the package, or one of its public
#: subpackages (``__all__`` lists what each one exports).
PUBLIC_MODULES = (
    "fm_constructs",
    "fm_constructs.compute",
    "fm_constructs.network",
    "fm_constructs.storage",
    "fm_constructs.orchestration",
    "fm_constructs.orchestration.hyperpod",
    "fm_constructs.observability",
    "fm_constructs.patterns",
    "fm_constructs.policy",
    "fm_constructs.planning",
    "fm_constructs.config",
    "fm_constructs.catalog",
    "fm_constructs.testing",
)


def _blocks() -> list[tuple[Path, int, str]]:
    found = []
    for path in sorted(ROOT.joinpath("docs").rglob("*.md")):
        text = path.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append((path, line, match.group(1)))
    return found


BLOCKS = _blocks()
EXAMPLES = sorted(ROOT.joinpath("examples").glob("*/app.py"))


def _id(block: tuple[Path, int, str]) -> str:
    return f"{block[0].relative_to(ROOT / 'docs')}:{block[1]}"


def _source(block: tuple[Path, int, str]) -> str:
    """The block's code; an include line (``--8<-- "path"``) reads the included file."""
    code = block[2]
    include = _INCLUDE.match(code.strip())
    if include:
        path = ROOT / include.group(1)
        assert path.is_file(), f"{_id(block)} includes {include.group(1)}, which does not exist"
        return path.read_text(encoding="utf-8")
    assert "--8<--" not in code and "--8 <" not in code, f"{_id(block)}: a broken include line"
    return code


def _imports(tree: ast.Module) -> list[tuple[str, str]]:
    return [
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("fm_")
        for alias in node.names
    ]


def test_the_scan_finds_the_blocks() -> None:
    assert len(BLOCKS) >= 10
    assert EXAMPLES


@pytest.mark.parametrize("block", BLOCKS, ids=_id)
def test_block_parses(block: tuple[Path, int, str]) -> None:
    ast.parse(_source(block), filename=_id(block))


@pytest.mark.parametrize(
    "source",
    [*BLOCKS, *((path, 1, path.read_text(encoding="utf-8")) for path in EXAMPLES)],
    ids=lambda b: str(b[0].relative_to(ROOT)) + f":{b[1]}",
)
def test_names_come_from_their_public_module(source: tuple[Path, int, str]) -> None:
    tree = ast.parse(_source(source) if source[0].suffix == ".md" else source[2])
    wrong = []
    for module_name, name in _imports(tree):
        if module_name not in PUBLIC_MODULES:
            wrong.append(f"{name} from {module_name}: import it from a public package")
            continue
        module = importlib.import_module(module_name)
        if name not in getattr(module, "__all__", ()):
            wrong.append(f"{name} is not exported by {module_name}")
    assert not wrong, wrong


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.FunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


@pytest.mark.parametrize(
    "page", sorted({path for path, _, _ in BLOCKS}), ids=lambda p: str(p.relative_to(ROOT))
)
def test_every_class_a_page_uses_is_imported_on_the_page(page: Path) -> None:
    """A block may continue an earlier one on its page (``stack``, ``vpc``), but each class it
    uses must be imported on the page: a reader copies the imports with the code."""
    trees = [ast.parse(_source(b)) for b in BLOCKS if b[0] == page]
    defined = set().union(*(_defined(t) for t in trees)) | set(dir(builtins))
    used = {
        node.id
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id[0].isupper()
    }
    assert not sorted(used - defined), f"used but not imported: {sorted(used - defined)}"
