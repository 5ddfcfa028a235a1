"""Real Slurm daemons for a test, in private namespaces: a bash script run as root under
``unshare`` (mount, PID and UTS namespaces: every daemon it starts ends with it), its output
cut into the sections it prints as ``== <name>`` lines, and the daemons' logs for the
failure message."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

UNSHARE = (
    "unshare",
    *("--fork", "--pid", "--kill-child", "--mount-proc", "--mount", "--uts"),
    *("--propagation", "private"),
)


def skip_without(commands: Iterable[str], packages: str) -> None:
    """Skip the test unless every command is on PATH (``packages``: the Debian packages that
    have them) and the test runs as root with ``unshare``."""
    missing = [name for name in commands if shutil.which(name) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed (Debian: {packages})")
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        pytest.skip("needs root and unshare for private mount, PID and UTS namespaces")


@contextlib.contextmanager
def daemon_directory(prefix: str) -> Iterator[Path]:
    """A directory under /tmp the daemons' users can read (0755), removed afterwards."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
    try:
        base.chmod(0o755)
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


#: Put before every script: strict mode and wait_for <seconds> <command...>, which retries the
#: command (5 s each try) once a second until it succeeds.
PRELUDE = r"""set -euo pipefail
wait_for() {
  local n="$1"; shift
  until timeout 5 "$@" > /dev/null 2>&1; do
    ((n-- > 0)) || { echo "timed out: $*" >&2; return 1; }
    sleep 1
  done
}
"""


@dataclass(frozen=True)
class NamespaceRun:
    """What the script printed, by section, and the tail of every log under the state dir."""

    result: subprocess.CompletedProcess[str]
    sections: dict[str, str]
    logs: str

    @property
    def output(self) -> str:
        return self.result.stdout + self.result.stderr + self.logs


def run_in_namespaces(script: str, state: Path, env: dict[str, str]) -> NamespaceRun:
    """Run :data:`PRELUDE` and ``script`` with ``env`` (added to this process's environment).

    ``state`` holds the daemons' ``*.out`` and ``*.log`` files.
    """
    result = subprocess.run(
        [*UNSHARE, "bash", "-c", PRELUDE + script],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    logs = "\n".join(
        f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"
        for path in sorted(state.glob("*.out")) + sorted(state.glob("*.log"))
    )
    sections = dict(part.split("\n", 1) for part in result.stdout.split("== ")[1:] if "\n" in part)
    return NamespaceRun(result, sections, logs)
