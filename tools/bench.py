"""`make bench`: the speed goals of the project, measured side by side in one run.

- Wall time of `cdk synth` (the real CLI) for every profile, against an empty one-stack app;
- what 15 extra EFA node groups cost a consumer app, against the same app with one group
  (tools/node_groups_app.py);
- the estimated wall time of `cdk deploy --all --concurrency 4` of the default profile
  (fm_constructs.planning.deploy_time, the method of docs/operations/shared-cluster.md).

Each synth runs REPEATS times into a throw-away output directory, in rounds that run every case
once in turn (so a change of the machine's load weighs on all cases alike), and the median is
reported with the spread, so the ratios are comparable across machines; a wide spread says the
machine was busy. The exit status is 0 whatever the verdicts: this
reports, the tests gate.
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
sys.path.insert(0, str(ROOT))

from fm_constructs.planning.deploy_time import total_minutes  # noqa: E402
from tools.deploy_time import estimate  # noqa: E402

REPEATS = 3
#: The default profile's synth, at most this many times the empty app's.
GOAL_RATIO = 1.5
#: The 1,024-node profile may take at most this much longer than the default profile.
SCALE_PROFILE = "config/pretraining-1024.toml"
SCALE_RATIO = 1.5
#: 15 extra EFA node groups may cost at most this share of the one-group app's synth.
EXTRA_NODE_GROUPS = 15
NODE_GROUPS_RATIO = 0.5
#: The default profile's estimated deploy, at most this many minutes.
DEPLOY_PROFILE = "config/default.toml"
DEPLOY_MINUTES = 30.0


def synth_once(extra_args: list[str]) -> float:
    """Wall time of one `cdk synth` with ``extra_args``, into a throw-away output directory."""
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
        elapsed = time.perf_counter() - start
        if result.returncode != 0:
            sys.stderr.write(result.stderr)
            raise SystemExit(f"cdk synth {' '.join(extra_args)} failed")
        return elapsed
    finally:
        shutil.rmtree(outdir, ignore_errors=True)


def synth_rounds(cases: dict[str, list[str]]) -> dict[str, list[float]]:
    """REPEATS rounds, each synthesizing every case once in turn, so that a change in the
    machine's load during the run weighs on every case alike instead of on the cases that
    happened to run then."""
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(REPEATS):
        for name, extra_args in cases.items():
            times[name].append(synth_once(extra_args))
    return times


def verdict(value: float, goal: float) -> str:
    return "meets" if value <= goal else "misses"


def main() -> int:
    python = str(Path(sys.executable))
    groups_app = ["--app", f"{python} tools/node_groups_app.py"]
    one_group = "consumer app, 1 EFA node group"
    many_groups = f"consumer app, {1 + EXTRA_NODE_GROUPS} EFA node groups"
    cases = {"empty one-stack app": ["--app", f"{python} tools/empty_app.py"]}
    for profile in sorted((ROOT / "config").glob("*.toml")):
        rel = profile.relative_to(ROOT)
        cases[str(rel)] = ["-c", f"config={rel}"]
    cases[one_group] = [*groups_app, "-c", "node_groups=1"]
    cases[many_groups] = [*groups_app, "-c", f"node_groups={1 + EXTRA_NODE_GROUPS}"]
    runs = synth_rounds(cases)
    rows = [(name, statistics.median(seconds)) for name, seconds in runs.items()]
    baseline = rows[0][1]
    width = max(len(name) for name, _ in rows)
    print(f"cdk synth wall time, median of {REPEATS} rounds (each round runs every case once)")
    print(f"{'case':<{width}}  {'seconds':>8}  {'x empty':>8}  {'min-max':>11}")
    for name, seconds in rows:
        spread = f"{min(runs[name]):.2f}-{max(runs[name]):.2f}"
        print(f"{name:<{width}}  {seconds:>8.2f}  {seconds / baseline:>8.2f}  {spread:>11}")
    print()
    times = dict(rows)
    default = times["config/default.toml"]
    print(
        f"default profile: {default / baseline:.2f}x the empty app, "
        f"{verdict(default / baseline, GOAL_RATIO)} the goal of <= {GOAL_RATIO:.1f}x"
    )
    scale = times.get(SCALE_PROFILE)
    if scale is not None:
        print(
            f"{SCALE_PROFILE}: {scale / default:.2f}x the default profile, "
            f"{verdict(scale / default, SCALE_RATIO)} the goal of <= {SCALE_RATIO:.1f}x"
        )
    extra = (times[many_groups] - times[one_group]) / times[one_group]
    print(
        f"{EXTRA_NODE_GROUPS} extra EFA node groups: {extra:.2f}x the one-group app, "
        f"{verdict(extra, NODE_GROUPS_RATIO)} the goal of <= {NODE_GROUPS_RATIO:.1f}x"
    )
    minutes = total_minutes(estimate(ROOT / DEPLOY_PROFILE, concurrency=4))
    print(
        f"{DEPLOY_PROFILE} deploy estimate (--concurrency 4): {minutes:.1f} min, "
        f"{verdict(minutes, DEPLOY_MINUTES)} the goal of <= {DEPLOY_MINUTES:.0f} min"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
