"""The observability block and orchestration depend on each other one way only, and
observability never reaches up a floor: orchestration imports nothing of observability (a
cluster takes a remote-write target, ``IRemoteWriteTarget``, which a Prometheus workspace
satisfies), and observability imports no pattern, stack or profile module. Read from the
source with ``ast``, so a function-level or ``TYPE_CHECKING`` import counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _offenders(package: str, forbidden: tuple[str, ...]) -> list[str]:
    offenders = []
    for path in sorted((ROOT / "fm_constructs" / package).rglob("*.py")):
        for name in sorted(_imports(path)):
            if any(name == f or name.startswith(f"{f}.") for f in forbidden):
                offenders.append(f"{path.relative_to(ROOT)} imports {name}")
    return offenders


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [
        ("orchestration", ("fm_constructs.observability",)),
        (
            "observability",
            ("fm_constructs.patterns", "fm_constructs.config", "stacks"),
        ),
    ],
)
def test_block_does_not_import(package: str, forbidden: tuple[str, ...]) -> None:
    assert _offenders(package, forbidden) == []


def test_the_check_sees_an_import() -> None:
    """The scan finds the import it is meant to forbid (here one that exists)."""
    assert any(
        "fm_constructs.orchestration" in line
        for line in _offenders("observability", ("fm_constructs.orchestration",))
    )


def test_a_workspace_is_a_remote_write_target() -> None:
    """What HyperPodCluster's ``prometheus`` takes is what a workspace offers."""
    import aws_cdk as cdk

    from fm_constructs.observability import PrometheusWorkspace
    from fm_constructs.orchestration.remote_write import IRemoteWriteTarget

    stack = cdk.Stack(cdk.App(), "S")
    created = PrometheusWorkspace(stack, "Created")
    imported = PrometheusWorkspace.from_workspace_id(stack, "Imported", "ws-12345678")
    assert isinstance(created, IRemoteWriteTarget)
    assert isinstance(imported, IRemoteWriteTarget)
