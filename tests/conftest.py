"""Shared fixtures. Synthesis through jsii costs seconds, so each profile is synthesized once
per test process and every stack-level test reads the cached templates.

Every test process gets its own scratch directory as ``TMPDIR`` before aws_cdk is imported,
so the cloud assemblies written by synths (``cdk.out*`` directories of apps without an outdir,
profile synths, staged assets) land there and are removed when the process ends instead of
filling the machine's temporary directory run after run.
"""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

from stacks.runtime import prefer_venv_node

SCRATCH = tempfile.mkdtemp(prefix="fm-tests-")
os.environ["TMPDIR"] = SCRATCH
tempfile.tempdir = SCRATCH

prefer_venv_node()


def pytest_unconfigure() -> None:
    """Remove this process's scratch directory (each xdist worker removes its own)."""
    shutil.rmtree(SCRATCH, ignore_errors=True)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Fail fast when ``--dist loadgroup`` has stopped grouping: each profile's tests share one
    synthesis only when they run on one worker, and without the grouping every worker would
    synthesize every profile (and install the consumer example) again."""
    if not getattr(config.option, "loadgroup", False):
        return
    ungrouped = [
        item.nodeid
        for item in items
        if item.get_closest_marker("xdist_group") is not None and "@" not in item.nodeid
    ]
    if ungrouped:
        raise pytest.UsageError(
            f"pytest-xdist did not group {len(ungrouped)} tests marked xdist_group (first: "
            f"{ungrouped[0]}) under pytest {pytest.__version__}: use the pytest pinned in "
            "pyproject.toml (make setup)"
        )
