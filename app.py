"""CDK app entry point: ``cdk synth -c config=config/<profile>.toml``.

Reads the profile named by the ``config`` context value, validates it, and builds its stacks.
Bad input ends with a message naming every problem and exit status 1, never a stack trace;
the profile's warnings are printed as ``fmc plan`` lists them.

The profile is always named: without ``-c config=...`` the app stops and lists the shipped
profiles, so that ``cdk deploy --all`` never deploys one nobody chose. Every run prints, on
stderr, which profile it builds: its deployment name, region, account and GPU nodes.
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path

from stacks.runtime import prefer_venv_node

prefer_venv_node()

# Run as the CDK app, not imported by a test: importing aws-cdk-lib and this library creates
# some 170,000 objects that live as long as the process (classes, functions, type hints) and no
# garbage: collections during the imports would only walk them (about 0.1 s), and so would
# every full collection after them. They are moved to the garbage collector's permanent
# generation once imported; later collections walk only what the synthesis creates.
_RUN_AS_APP = __name__ == "__main__"
if _RUN_AS_APP:
    gc.disable()
from fm_constructs.config import Profile, load_profile  # noqa: E402
from fm_constructs.errors import FmValidationError  # noqa: E402
from fm_constructs.policy import enable_nag  # noqa: E402
from stacks.app_builder import build_stacks, create_app  # noqa: E402

if _RUN_AS_APP:
    gc.freeze()
    gc.enable()

SHIPPED_PROFILES = Path(__file__).resolve().parent / "config"


def no_profile_message() -> str:
    """What a run without ``-c config=...`` prints: how to name one, and the shipped ones."""
    shipped = ", ".join(f"config/{p.name}" for p in sorted(SHIPPED_PROFILES.glob("*.toml")))
    return (
        "error: no profile named; every cdk command takes one: "
        "cdk synth -c config=<file>, e.g. cdk deploy --all -c config=profiles/mine.toml "
        f"(write your own with fmc init profiles/mine.toml; shipped: {shipped})"
    )


def profile_banner(path: str, profile: Profile) -> str:
    """The line every synthesis prints: which profile, where, and the GPU nodes it asks for."""
    platform = profile.platform
    account = platform.account or "the credentials' account"
    nodes = [
        f"{w.name} {w.instance_count} x {w.instance_type}"
        + (
            f" + {w.rollout_group.instance_count} x {w.rollout_group.instance_type}"
            if w.rollout_group is not None
            else ""
        )
        for w in profile.enabled_workloads
    ]
    return (
        f"fm-constructs: profile {path}: deployment {platform.name!r} in {platform.region}, "
        f"account {account}; {'; '.join(nodes) or 'no workload enabled'}"
    )


def main() -> int:
    app = create_app()
    config = app.node.try_get_context("config")
    if not config:
        print(no_profile_message(), file=sys.stderr)
        return 1
    config_path = str(config)
    try:
        profile = load_profile(config_path)
        build_stacks(app, profile)
    except FmValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    # The profile's warnings, as fmc plan lists them: what still bills, a missing model, ...
    for warning in profile.warnings:
        print(f"warning: {warning.line()}", file=sys.stderr)
    print(profile_banner(config_path, profile), file=sys.stderr)
    enable_nag(app)
    app.synth()
    return 0


if __name__ == "__main__":
    status = main()
    # Everything is written. The objects the synthesis left are moved out of the garbage
    # collector's reach too: the interpreter's collections at exit would walk them all (about
    # 0.4 s of every synthesis before the imports' objects were frozen), for memory the
    # operating system takes back anyway. Exit handlers (stopping jsii's node process) run.
    gc.freeze()
    sys.exit(status)
