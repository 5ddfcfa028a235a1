"""Wall time of `cdk synth` (the real CLI) for every profile and for an empty one-stack app.

Run with `make bench`. Each case runs REPEATS times into a throw-away output directory and the
median is reported, with its ratio to the empty app, so the figures are comparable across
machines.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 3
GOAL_RATIO = 2.0
#: The 1,024-node profile may take at most this much longer than the default profile.
SCALE_PROFILE = "config/pretraining-1024.toml"
SCALE_RATIO = 1.5


def synth_seconds(extra_args: list[str]) -> float:
    """Median wall time of `cdk synth` with ``extra_args`` over REPEATS runs."""
    times = []
    for _ in range(REPEATS):
        outdir = tempfile.mkdtemp(prefix="fm-bench-")
        try:
            start = time.perf_counter()
            result = subprocess.run(
                ["cdk", "synth", "--quiet", "--output", outdir, *extra_args],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=False,
            )
            times.append(time.perf_counter() - start)
            if result.returncode != 0:
                sys.stderr.write(result.stderr)
                raise SystemExit(f"cdk synth {' '.join(extra_args)} failed")
        finally:
            shutil.rmtree(outdir, ignore_errors=True)
    return statistics.median(times)


def main() -> int:
    python = str(Path(sys.executable))
    baseline = synth_seconds(["--app", f"{python} tools/empty_app.py"])
    rows = [("empty one-stack app", baseline)]
    for profile in sorted((ROOT / "config").glob("*.toml")):
        rel = profile.relative_to(ROOT)
        rows.append((str(rel), synth_seconds(["-c", f"config={rel}"])))
    width = max(len(name) for name, _ in rows)
    print(f"cdk synth wall time, median of {REPEATS} runs")
    print(f"{'case':<{width}}  {'seconds':>8}  {'x empty':>8}")
    for name, seconds in rows:
        print(f"{name:<{width}}  {seconds:>8.2f}  {seconds / baseline:>8.2f}")
    default = dict(rows).get("config/default.toml")
    if default is not None:
        verdict = "meets" if default / baseline <= GOAL_RATIO else "misses"
        print(f"default profile {verdict} the goal of <= {GOAL_RATIO:.1f}x the empty app")
    scale = dict(rows).get(SCALE_PROFILE)
    if default is not None and scale is not None:
        verdict = "meets" if scale / default <= SCALE_RATIO else "misses"
        print(
            f"{SCALE_PROFILE} takes {scale / default:.2f}x the default profile: {verdict} the "
            f"goal of <= {SCALE_RATIO:.1f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
