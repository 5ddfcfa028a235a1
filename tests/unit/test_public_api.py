"""`from fm_constructs import ...` works for every public and every documented name, and
importing the package (or its floor-1 parts) does not load aws_cdk."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import fm_constructs

ROOT = Path(__file__).resolve().parents[2]
DOC_IMPORT = re.compile(r"from (fm_constructs[\w.]*) import \(?([\w,\s]+)\)?")


def test_all_lists_exactly_the_exports() -> None:
    exports = fm_constructs._EXPORTS
    assert fm_constructs.__all__ == ["__version__", *sorted(exports, key=str)] or sorted(
        fm_constructs.__all__
    ) == sorted(["__version__", *exports])
    assert len(set(fm_constructs.__all__)) == len(fm_constructs.__all__)


def test_every_public_name_imports_and_is_documented() -> None:
    for name in fm_constructs.__all__:
        value = getattr(fm_constructs, name)
        if name != "__version__":
            assert (value.__doc__ or "").strip(), f"{name} has no docstring"
            assert value.__name__ == name


def test_every_class_the_docs_import_is_exported() -> None:
    """Each class a docs page or an example app imports, from the top or from a submodule, is
    public at the top (``from fm_constructs import ...`` works for it)."""
    names: set[str] = set()
    sources = [*ROOT.joinpath("docs").rglob("*.md"), *ROOT.joinpath("examples").glob("*/app.py")]
    for path in sources:
        for _module, listed in DOC_IMPORT.findall(path.read_text(encoding="utf-8")):
            names.update(n.strip() for n in listed.replace("\n", ",").split(",") if n.strip())
    documented = {n for n in names if n[0].isupper() and not n.isupper()}
    assert {"PretrainingWorkload", "GpuEksCluster"} <= documented  # the scan finds them
    missing = sorted(n for n in documented if n not in fm_constructs.__all__)
    assert not missing, f"documented but not exported from fm_constructs: {missing}"


def test_every_pattern_is_exported() -> None:
    """The patterns package's own public names are all public at the top."""
    import fm_constructs.patterns as patterns

    missing = sorted(set(patterns.__all__) - set(fm_constructs.__all__))
    assert not missing, f"patterns not exported from fm_constructs: {missing}"


def test_type_checkers_see_the_same_names() -> None:
    tree = ast.parse(Path(fm_constructs.__file__).read_text(encoding="utf-8"))
    seen = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.If)
        for child in node.body
        if isinstance(child, ast.ImportFrom)
        for alias in child.names
    }
    assert seen == set(fm_constructs._EXPORTS)


def test_importing_the_package_does_not_load_aws_cdk() -> None:
    code = (
        "import sys, fm_constructs, fm_constructs.config, fm_constructs.rules\n"
        "from fm_constructs import FmValidationError, load_profile, EfaLayout\n"
        "assert 'aws_cdk' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
