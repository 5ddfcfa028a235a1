"""app.py as the CDK CLI runs it: a bad profile ends with every problem listed, no traceback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.stacks.profiles import ROOT

BAD_PROFILE = """
[platform]
region = "us-east-1"
availability_zone = "us-east-1a"
availability_zones = ["us-east-1a", "us-east-1b"]
regoin = "us-west-2"

[pretraining]
enabled = true
instance_type = "p5.48xlarge"
instance_count = 0

[pretraining.capacity]
kind = "capacity-block"
"""


def test_bad_profile_fails_with_every_problem_and_no_traceback(tmp_path: Path) -> None:
    profile = tmp_path / "bad.toml"
    profile.write_text(BAD_PROFILE)
    env = {
        **os.environ,
        "CDK_CONTEXT_JSON": json.dumps({"config": str(profile)}),
        "CDK_OUTDIR": str(tmp_path / "out"),
    }
    result = subprocess.run(
        [sys.executable, "app.py"], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    assert "3 problems" in result.stderr
    for key in (
        "platform.regoin: unknown key",
        "pretraining.instance_count: must be >= 1, got 0",
        "pretraining.capacity.reservation_id: a Capacity Block needs",
    ):
        assert key in result.stderr


def test_importing_app_leaves_the_garbage_collector_as_it_was() -> None:
    # app.py switches the collector off for its imports and freezes what they created only
    # when it is the program (the CDK app); a test that imports it keeps its collector.
    import gc
    import importlib

    import app

    frozen = gc.get_freeze_count()
    importlib.reload(app)
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
