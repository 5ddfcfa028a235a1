"""What a CloudFormation template node names: the logical ids it references (the library's own
reader, :func:`fm_constructs.planning.deploy_time.referenced_ids`, which the deploy-time
estimate follows) and the exports it imports, walked through every nested dict and list. Shared
by the tests that follow the wiring of the synthesized stacks (teardown order, cross-stack
imports), so each reads the intrinsics the same way and none misses a form another reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from fm_constructs.planning.deploy_time import referenced_ids as referenced_ids


def imported_names(node: Any) -> Iterator[Any]:
    """The export names ``node`` imports with ``Fn::ImportValue`` (a string, or the intrinsic
    that builds one)."""
    if isinstance(node, dict):
        if "Fn::ImportValue" in node:
            yield node["Fn::ImportValue"]
        for value in node.values():
            yield from imported_names(value)
    elif isinstance(node, list):
        for value in node:
            yield from imported_names(value)
