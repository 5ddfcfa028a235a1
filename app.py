"""CDK app entry point: ``cdk synth -c config=config/<profile>.toml``.

Reads the profile named by the ``config`` context value, validates it, and builds its stacks.
Bad input ends with a message naming every problem and exit status 1, never a stack trace.
"""

from __future__ import annotations

import sys

from stacks.runtime import prefer_venv_node

prefer_venv_node()

from fm_constructs.config import load_profile  # noqa: E402
from fm_constructs.errors import FmValidationError  # noqa: E402
from fm_constructs.policy import enable_nag  # noqa: E402
from stacks.app_builder import build_stacks, create_app  # noqa: E402

DEFAULT_PROFILE = "config/default.toml"


def main() -> int:
    app = create_app()
    config_path = str(app.node.try_get_context("config") or DEFAULT_PROFILE)
    try:
        profile = load_profile(config_path)
        build_stacks(app, profile)
    except FmValidationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    enable_nag(app)
    app.synth()
    return 0


if __name__ == "__main__":
    sys.exit(main())
