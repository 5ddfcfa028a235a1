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

from stacks.runtime import prefer_venv_node

SCRATCH = tempfile.mkdtemp(prefix="fm-tests-")
os.environ["TMPDIR"] = SCRATCH
tempfile.tempdir = SCRATCH

prefer_venv_node()


def pytest_unconfigure() -> None:
    """Remove this process's scratch directory (each xdist worker removes its own)."""
    shutil.rmtree(SCRATCH, ignore_errors=True)
