"""The smallest CDK app (one empty stack): the baseline that `make bench` compares against."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from stacks.runtime import prefer_venv_node

prefer_venv_node()

import aws_cdk as cdk  # noqa: E402

app = cdk.App()
cdk.Stack(app, "Empty")
app.synth()
