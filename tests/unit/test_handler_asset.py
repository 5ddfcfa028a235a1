"""The custom-resource handlers' code packages import as Lambda imports them: ``handler.py``
as a top-level module from the package root, with ``cfn_response.py`` beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fm_constructs.observability.dashboards import stage_provisioner_asset
from fm_constructs.observability.data import shipped_dashboard_files
from fm_constructs.policy.handler_asset import stage_handler_asset
from fm_constructs.storage.teardown import HANDLER_DIRECTORY


def _package(name: str) -> Path:
    if name == "grafana-provisioner":
        return stage_provisioner_asset(shipped_dashboard_files())
    return stage_handler_asset(name, HANDLER_DIRECTORY / "handler.py")


@pytest.mark.parametrize("name", ["grafana-provisioner", "teardown-guard"])
def test_handler_imports_the_cfn_response_shipped_beside_it(name: str) -> None:
    root = _package(name)
    assert sorted(p.name for p in root.glob("*.py")) == ["cfn_response.py", "handler.py"]
    shown = subprocess.run(
        [sys.executable, "-c", "import handler; print(handler.cfn_response.__file__)"],
        cwd=root,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(shown.stdout.strip()) == root / "cfn_response.py"
