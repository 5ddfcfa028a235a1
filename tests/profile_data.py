"""Profile documents for tests: one small valid profile and a way to change keys of any
profile by dotted path, so each test states only what it varies."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from typing import Any

#: The smallest valid profile: pre-training on two p5 nodes in us-west-2.
BASE: dict[str, Any] = {
    "platform": {
        "region": "us-west-2",
        "availability_zone": "us-west-2b",
        "availability_zones": ["us-west-2a", "us-west-2b"],
    },
    "pretraining": {"enabled": True, "instance_type": "p5.48xlarge", "instance_count": 2},
}

#: BASE with an inference workload on one g6e.48xlarge node (no model).
INFERENCE = {"inference": {"enabled": True, "instance_type": "g6e.48xlarge", "instance_count": 1}}

#: A value for :func:`changed` that removes the key.
DELETE = object()


def changed(data: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of ``data`` with each dotted-path key of ``changes`` set (tables created on
    the way), or removed when its value is :data:`DELETE`."""
    out = copy.deepcopy(dict(data))
    for dotted, value in changes.items():
        *parents, leaf = dotted.split(".")
        node = out
        for key in parents:
            node = node.setdefault(key, {})
        if value is DELETE:
            node.pop(leaf, None)
        else:
            node[leaf] = copy.deepcopy(value)
    return out


def profile_with(**changes: Any) -> dict[str, Any]:
    """BASE with dotted-path keys replaced, e.g. ``profile_with(**{"platform.region": "x"})``."""
    return changed(BASE, changes)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):  # an inline table (inside an array: an array of tables)
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value) if isinstance(value, str) else repr(value)


def to_toml(data: Mapping[str, Any], prefix: str = "") -> str:
    """A small TOML writer for the profile shapes (tables of scalars and lists)."""
    scalars = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    out = ([f"[{prefix}]"] if prefix and scalars else []) + scalars
    for key, value in data.items():
        if isinstance(value, dict):
            out += ["", to_toml(value, f"{prefix}.{key}" if prefix else key)]
    return "\n".join(out)
