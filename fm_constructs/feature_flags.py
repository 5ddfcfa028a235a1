"""The CDK feature flags the constructs are built and tested with.

aws-cdk-lib changes what some constructs synthesize behind feature flags (context keys such as
``@aws-cdk/aws-iam:minimizePolicies``). The repository's own app, its snapshot tests and the
example app all synthesize with exactly these values; a consumer app that sets them gets the
templates the tests checked. Put them in the app's ``cdk.json`` under ``"context"``::

    python -m fm_constructs.feature_flags > flags.json   # the block to paste

or pass them to the app in code: ``cdk.App(context=feature_flags())`` (values from ``cdk.json``
or ``-c`` still win over these).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def feature_flags() -> dict[str, Any]:
    """A fresh copy of every feature flag and its value, keyed by context name."""
    text = resources.files("fm_constructs").joinpath("feature_flags.json").read_text("utf-8")
    flags: dict[str, Any] = json.loads(text)["context"]
    return flags


def main() -> None:
    """Print the flags as a ``cdk.json`` ``"context"`` object."""
    print(json.dumps({"context": feature_flags()}, indent=2))


if __name__ == "__main__":
    main()
