"""Fixtures of the deploy rehearsal: one local AWS per test session (moto's server in this
process, with the extensions of ``local_aws``), the profiles synthesized once by the CDK CLI,
and a fresh account for each test that asks for one.

Every test here carries the ``rehearsal`` marker: ``make unit`` leaves them out
(``-m 'not rehearsal'``), ``make rehearsal`` runs them.
"""

from __future__ import annotations

import json
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.rehearsal import local_aws
from tests.rehearsal.cdk import Cdk
from tests.rehearsal.local_aws import custom_resources, resources
from tests.rehearsal.local_aws.server import LocalAws, assert_loopback, start

HERE = Path(__file__).parent
ROOT = HERE.parents[1]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under tests/rehearsal ``rehearsal`` and keep them on one xdist worker
    (they share the session's local AWS)."""
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.rehearsal)
            item.add_marker(pytest.mark.xdist_group("rehearsal"))


@pytest.fixture(scope="session")
def local() -> Iterator[LocalAws]:
    """moto's server on a free loopback port with every extension installed."""
    server, aws = start()
    local_aws.install(aws.endpoint)
    try:
        yield aws
    finally:
        server.stop()


@pytest.fixture(scope="session")
def cdk(local: LocalAws, tmp_path_factory: pytest.TempPathFactory) -> Cdk:
    """The pinned CDK CLI, bound to the local AWS."""
    return Cdk(local, tmp_path_factory.mktemp("cdk-home"))


def reset(local: LocalAws) -> None:
    """Empty the local AWS: a fresh account, as if nothing had ever been deployed."""
    assert_loopback(local.endpoint)
    request = urllib.request.Request(f"{local.endpoint}/moto-api/reset", method="POST")
    with urllib.request.urlopen(request, timeout=30) as response:
        assert response.status == 200
    resources.STORE.clear()
    custom_resources._DEPLOYED.clear()


class Assemblies:
    """Cloud assemblies synthesized by the CDK CLI, once per profile and session."""

    def __init__(self, cdk: Cdk, root: Path) -> None:
        self.cdk = cdk
        self.root = root
        self.seconds: dict[str, float] = {}

    def get(self, profile: str) -> Path:
        target = self.root / profile
        if not (target / "manifest.json").exists():
            start_time = time.monotonic()
            self.cdk.synth(ROOT / "config" / f"{profile}.toml", target)
            self.seconds[profile] = time.monotonic() - start_time
        return target


@pytest.fixture(scope="session")
def assemblies(cdk: Cdk, tmp_path_factory: pytest.TempPathFactory) -> Assemblies:
    return Assemblies(cdk, tmp_path_factory.mktemp("assemblies"))


def stacks_of(assembly: Path) -> dict[str, str]:
    """Stack name -> region of every stack in a cloud assembly, in manifest order."""
    manifest = json.loads((assembly / "manifest.json").read_text())
    found = {}
    for name, artifact in manifest["artifacts"].items():
        if artifact["type"] == "aws:cloudformation:stack":
            found[name] = artifact["environment"].rsplit("/", 1)[-1]
    return found


def scratch_copy(assembly: Path) -> Path:
    """A copy of ``assembly`` a test may change (the self-test mutates templates)."""
    import shutil

    target = Path(tempfile.mkdtemp(prefix="assembly-"))
    shutil.copytree(assembly, target, dirs_exist_ok=True)
    return target
