"""What a CloudFormation template node names: the logical ids it references and the exports it
imports, walked through every nested dict and list. Shared by the tests that follow the wiring
of the synthesized stacks (teardown order, cross-stack imports), so each reads the intrinsics
the same way and none misses a form another reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def _sub_names(body: Any) -> Iterator[str]:
    """The names of ``${Name}`` and ``${Name.Attribute}`` in an ``Fn::Sub`` string (its
    variables map is walked as any other node); pseudo parameters and ``${!Literal}`` are
    not logical ids."""
    text = body[0] if isinstance(body, list) else body
    for part in str(text).split("${")[1:]:
        name = part.split("}")[0].split(".")[0]
        if not name.startswith(("AWS::", "!")):
            yield name


def referenced_ids(node: Any) -> Iterator[str]:
    """Logical ids ``node`` references through ``Ref``, ``Fn::GetAtt`` and ``${...}`` in
    ``Fn::Sub``; a ``Ref`` to a pseudo parameter (``AWS::Region``) is none."""
    if isinstance(node, dict):
        ref = node.get("Ref")
        if isinstance(ref, str) and not ref.startswith("AWS::"):
            yield ref
        if "Fn::GetAtt" in node:
            target = node["Fn::GetAtt"]
            yield target[0] if isinstance(target, list) else str(target).split(".")[0]
        if "Fn::Sub" in node:
            yield from _sub_names(node["Fn::Sub"])
        for value in node.values():
            yield from referenced_ids(value)
    elif isinstance(node, list):
        for value in node:
            yield from referenced_ids(value)


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
