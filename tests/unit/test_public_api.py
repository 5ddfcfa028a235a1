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


_FROM_IMPORT = re.compile(
    r"^\s*from (fm_constructs(?:\.\w+)*) import (?:\(([^)]*)\)|(.+))$", re.MULTILINE
)


def _documented_imports() -> dict[str, set[tuple[str, str]]]:
    """Name -> (module, file) for every ``from fm_constructs... import`` in the docs pages and
    the example apps, parenthesized lists included."""
    found: dict[str, set[tuple[str, str]]] = {}
    sources = [*ROOT.joinpath("docs").rglob("*.md"), *ROOT.joinpath("examples").rglob("*.py")]
    for path in sources:
        for module, listed, single in _FROM_IMPORT.findall(path.read_text(encoding="utf-8")):
            for entry in (listed or single).split("#", 1)[0].replace("\n", ",").split(","):
                name = entry.strip().split(" as ")[0].strip()
                if name:
                    found.setdefault(name, set()).add((module, str(path.relative_to(ROOT))))
    return found


def test_docs_and_examples_import_each_name_from_one_place() -> None:
    """A consumer copying from two pages gets the same import line: each public name is
    imported from one submodule everywhere (or from the package itself)."""
    found = _documented_imports()
    assert {"GpuClusterVpc", "EfaSecurityGroup", "FsxSizingRequest"} <= set(found)
    mixed = {
        name: sorted(places)
        for name, places in found.items()
        if len({module for module, _ in places} - {"fm_constructs"}) > 1
    }
    assert not mixed, f"imported from different modules: {mixed}"


def test_the_consumer_page_top_level_import_works() -> None:
    """The line docs/patterns/consumer-example.md shows, run as written."""
    page = (ROOT / "docs" / "patterns" / "consumer-example.md").read_text(encoding="utf-8")
    lines = [line for line in page.splitlines() if line.startswith("from fm_constructs import ")]
    assert lines
    for line in lines:
        exec(compile(line, "consumer-example.md", "exec"), {})


def test_every_class_whose_methods_the_docs_call_is_exported() -> None:
    """`ClusterAutoscaler.enable(cluster)`, `GpuEksCluster.from_..._attributes(...)`: a class
    the docs call a method of is importable from the package, like the ones they import."""
    called: set[str] = set()
    for path in ROOT.joinpath("docs").rglob("*.md"):
        called.update(
            re.findall(r"\b([A-Z][A-Za-z]+)\.[a-z_]+\(", path.read_text(encoding="utf-8"))
        )
    ours = {name for name in called if name not in {"cdk", "Stack", "App"}}
    assert {"ClusterAutoscaler", "DevicePlugins"} <= ours
    missing = sorted(name for name in ours if name not in fm_constructs.__all__)
    assert not missing, f"the docs call methods of names not exported: {missing}"
