"""Shared fixtures. Synthesis through jsii costs seconds, so each profile is synthesized once
per test process and every stack-level test reads the cached templates.

Every test process gets its own scratch directory as ``TMPDIR`` before aws_cdk is imported,
so the cloud assemblies written by synths (``cdk.out*`` directories of apps without an outdir,
profile synths, staged assets) land there and are removed when the process ends instead of
filling the machine's temporary directory run after run. A run writes some 3.4 GB there (each
synthesis with an EKS cluster stages 58 MB of kubectl and AWS CLI layer archives): it goes to
memory (``/dev/shm``) when ``TMPDIR`` is not set and that file system has room for it (a warm
``make test`` 71-72 s against 76-80 s on disk), else to the default temporary directory.

The end of a run waits for nothing it does not need: each process's scratch directory is
removed by a process of its own (about a second per worker), and an xdist worker, once it has
reported every result and stopped the jsii kernel, ends without the interpreter's teardown of
its heap (every synthesized profile and aws-cdk-lib: some 2.5 s after the last test).
"""

from __future__ import annotations

import atexit
import gc
import itertools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from _pytest.mark.expression import Expression

from stacks.runtime import prefer_venv_node

#: Room a run's scratch needs on a memory file system (its peak was 3.4 GB) before one is used.
MEMORY_SCRATCH_BYTES = 8 * 2**30


def _scratch_parent() -> str | None:
    """``/dev/shm`` when ``TMPDIR`` is unset (a worker inherits its controller's scratch as
    ``TMPDIR``) and it is a writable file system with room that runs programs (the tests run
    fake commands and node scripts from their scratch); None: the default."""
    shm = "/dev/shm"
    if "TMPDIR" in os.environ or not os.path.isdir(shm) or not os.access(shm, os.W_OK):
        return None
    stats = os.statvfs(shm)
    if stats.f_flag & getattr(os, "ST_NOEXEC", 0):
        return None
    return shm if stats.f_bavail * stats.f_frsize >= MEMORY_SCRATCH_BYTES else None


SCRATCH = tempfile.mkdtemp(prefix="fm-tests-", dir=_scratch_parent())
os.environ["TMPDIR"] = SCRATCH
tempfile.tempdir = SCRATCH

prefer_venv_node()


def pytest_unconfigure() -> None:
    """Remove this process's scratch directory (each xdist worker removes its own) in the
    background, so the run's result does not wait for the deletion."""
    subprocess.Popen(
        ["rm", "-rf", "--", SCRATCH],
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _end_worker() -> None:
    """Registered before aws_cdk is imported, so it runs after every other exit handler (the
    jsii kernel's stop among them): an xdist worker has sent its results by then, and ends
    here without tearing its heap down object by object. The controller exits as usual."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


atexit.register(_end_worker)


REHEARSAL_DIR = Path(__file__).with_name("rehearsal")


def _deselects_rehearsal(markexpr: str) -> bool:
    """Whether ``-m markexpr`` leaves out every test marked ``rehearsal``, whatever other marks
    it carries: false under every assignment of the expression's other names."""
    if not markexpr.strip():
        return False
    expression = Expression.compile(markexpr)
    others = sorted(set(re.findall(r"[\w:.\-]+", markexpr)) - {"and", "or", "not", "rehearsal"})
    if len(others) > 8:
        return False  # too many names to try every assignment: collect, let -m deselect
    for values in itertools.product((False, True), repeat=len(others)):
        marks = dict(zip(others, values, strict=True), rehearsal=True)

        def carries(name: str, /, marks: dict[str, bool] = marks, **_: object) -> bool:
            return marks.get(name, False)

        if expression.evaluate(carries):
            return False
    return True


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Leave tests/rehearsal uncollected when ``-m`` deselects its tests anyway (``make unit``):
    every test there is marked ``rehearsal`` (tests/rehearsal/conftest.py), and importing its
    local AWS (moto's EC2 and CloudFormation models) costs each worker seconds of collection."""
    if collection_path == REHEARSAL_DIR and _deselects_rehearsal(config.option.markexpr):
        return True
    return None


def _uses_shared_fixture(item: pytest.Item) -> bool:
    """Whether ``item`` uses a fixture set up once for several tests of its module or class."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.scope in ("module", "class", "package")
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


#: xdist groups that run first: the longest ones, so the two workers finish together.
FIRST_GROUPS = ("consumer-example", "shared-cluster-example")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Group tests for ``--dist loadgroup``: a test parametrized by ``profile`` joins that
    profile's group (one synthesis per profile and session); a test that uses a module- or
    class-scoped fixture joins its module's group (the fixture is set up once); the others
    stay free to run on either worker. The heaviest groups go first."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        if item.get_closest_marker("xdist_group") is not None:
            continue
        params = getattr(item, "callspec", None)
        profile = params.params.get("profile") if params is not None else None
        if isinstance(profile, str):
            item.add_marker(pytest.mark.xdist_group(profile))
        elif _uses_shared_fixture(item):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::", 1)[0]))

    def rank(item: pytest.Item) -> int:
        marker = item.get_closest_marker("xdist_group")
        group = marker.args[0] if marker is not None and marker.args else ""
        return FIRST_GROUPS.index(group) if group in FIRST_GROUPS else len(FIRST_GROUPS)

    items.sort(key=rank)


class _GroupCheck:
    """Runs after pytest-xdist has appended each test's group to its node id."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
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


def pytest_collection_finish(session: pytest.Session) -> None:
    """Move what collection leaves (aws-cdk-lib, the library and every test module: objects
    that live as long as the process) to the garbage collector's permanent generation, so the
    collections the tests cause walk only what the tests create (without it, some 9 s of each
    worker's run were full collections walking the imports again and again)."""
    gc.collect()
    gc.freeze()


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_GroupCheck(), "fm-xdist-group-check")
    if getattr(config.option, "loadgroup", False) and os.environ.get("PYTEST_XDIST_WORKER"):
        from tests.stacks import profiles

        profiles.GROUPED_BY_PROFILE = True
