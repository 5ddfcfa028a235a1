"""Print the estimated wall time of ``cdk deploy --all --concurrency N`` for a profile.

    python tools/deploy_time.py config/default.toml [--concurrency 4]

Synthesizes the profile offline with the context of ``cdk.json`` (as ``cdk deploy`` does) and
applies :mod:`fm_constructs.planning.deploy_time` to its templates and stack dependencies.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from stacks.runtime import prefer_venv_node  # noqa: E402

prefer_venv_node()

from fm_constructs.config import load_profile  # noqa: E402
from fm_constructs.planning.deploy_time import (  # noqa: E402
    StackTiming,
    deployment_minutes,
    total_minutes,
)
from stacks.app_builder import build_stacks, create_app  # noqa: E402


def estimate(profile_path: Path, concurrency: int) -> dict[str, StackTiming]:
    with tempfile.TemporaryDirectory(prefix="fm-deploy-time-") as outdir:
        context = json.loads((ROOT / "cdk.json").read_text())["context"]
        app = create_app(outdir=outdir, context=context)
        stacks = build_stacks(app, load_profile(profile_path))
        assembly = app.synth()
        templates = {s.stack_name: s.template for s in assembly.stacks}
    return deployment_minutes(
        {
            stack.stack_name: (
                templates[stack.stack_name],
                [d.stack_name for d in stack.dependencies],
            )
            for stack in stacks.all
        },
        concurrency=concurrency,
    )


def table(timings: dict[str, StackTiming]) -> str:
    lines = ["| Stack | Starts (min) | Done (min) | Longest chain ends with |", "|---|---|---|---|"]
    for t in sorted(timings.values(), key=lambda t: (t.start, t.end)):
        lines.append(f"| {t.name} | {t.start:.1f} | {t.end:.1f} | `{t.path[-1]}` |")
    lines.append(f"| **all stacks** | | **{total_minutes(timings):.1f}** | |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", type=Path)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    print(table(estimate(args.profile, args.concurrency)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
