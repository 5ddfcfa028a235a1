"""Snapshot testing for apps built from fm-constructs: templates that compare equal across runs,
machines and aws-cdk-lib patch releases unless what they deploy changed.

What varies without the deployment changing, and how it is masked:

- content hashes of assets (Lambda code, layers, custom-resource providers, bootstrap asset
  keys): every run of 64 hex digits, in keys and values, becomes ``<hash>``;
- the ``CDKMetadata`` resource and its ``CDKMetadataAvailable`` condition, which ``cdk synth``
  adds with the CDK version compressed into it: dropped.

Usage in a pytest test (see ``examples/training-cluster/tests/test_app.py``)::

    from fm_constructs.testing import assert_matches_snapshot, new_app, stable_template

    def test_stack_matches_snapshot():
        app = new_app()
        stack = MyStack(app, "team-training", env=...)
        assert_matches_snapshot(stable_template(stack), SNAPSHOTS / "team-training.json")

``FM_SNAPSHOT_UPDATE=1 pytest`` (re)writes the snapshot files; review the diff and commit them.
With syrupy, ``assert stable_template(stack) == snapshot`` works the same way.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Template

from fm_constructs.feature_flags import feature_flags

__all__ = [
    "HASH_PLACEHOLDER",
    "UPDATE_ENV",
    "assert_matches_snapshot",
    "mask_unstable",
    "new_app",
    "stable_template",
]

#: What a masked content hash reads as.
HASH_PLACEHOLDER = "<hash>"
#: Environment variable that makes :func:`assert_matches_snapshot` write instead of compare.
UPDATE_ENV = "FM_SNAPSHOT_UPDATE"

_HASH = re.compile(r"[0-9a-f]{64}")
_METADATA_RESOURCE = "CDKMetadata"
_METADATA_CONDITION = "CDKMetadataAvailable"


def new_app(*, context: Mapping[str, Any] | None = None, outdir: str | None = None) -> cdk.App:
    """A ``cdk.App`` with the feature flags the constructs are tested with, plus ``context``."""
    return cdk.App(context={**feature_flags(), **(context or {})}, outdir=outdir)


def mask_unstable(value: Any) -> Any:
    """``value`` (any JSON-like structure) with every content hash replaced by ``<hash>``."""
    if isinstance(value, Mapping):
        return {_HASH.sub(HASH_PLACEHOLDER, str(k)): mask_unstable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [mask_unstable(v) for v in value]
    if isinstance(value, str):
        return _HASH.sub(HASH_PLACEHOLDER, value)
    return value


def stable_template(source: cdk.Stack | Template | Mapping[str, Any]) -> dict[str, Any]:
    """The CloudFormation template of ``source`` (a stack, which synthesizes its app; an
    ``assertions.Template``; or a template already parsed from ``cdk.out``), masked."""
    if isinstance(source, cdk.Stack):
        template: Mapping[str, Any] = Template.from_stack(source).to_json()
    elif isinstance(source, Template):
        template = source.to_json()
    else:
        template = source
    masked: dict[str, Any] = mask_unstable(template)
    resources = masked.get("Resources")
    if isinstance(resources, dict):
        resources.pop(_METADATA_RESOURCE, None)
    conditions = masked.get("Conditions")
    if isinstance(conditions, dict):
        conditions.pop(_METADATA_CONDITION, None)
        if not conditions:
            del masked["Conditions"]
    return masked


#: Longest value shown in a difference line; longer ones end in "...".
_SHOWN = 80
#: Difference lines an assertion message holds at most (the rest are counted).
_MAX_LINES = 40


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def _differences(old: Any, new: Any, path: str) -> list[str]:
    """One line per changed leaf: its property path, the snapshot's value and the new one."""
    if old == new:
        return []
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        lines: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in old:
                lines.append(f"  {where}: added {_shown(new[key])}")
            elif key not in new:
                lines.append(f"  {where}: removed (was {_shown(old[key])})")
            else:
                lines += _differences(old[key], new[key], where)
        return lines
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            line
            for index, (a, b) in enumerate(zip(old, new, strict=True))
            for line in _differences(a, b, f"{path}[{index}]")
        ]
    return [f"  {path}: {_shown(old)} -> {_shown(new)}"]


def _summary(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Which sections and resources differ, by logical ID, and under each changed one every
    changed property by its path (``Resources.<id>.Properties.<key>...``) with the snapshot's
    value and the new one."""
    lines: list[str] = []
    for section in sorted(set(expected) | set(actual)):
        old, new = expected.get(section), actual.get(section)
        if old == new:
            continue
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            lines += [f"  {section}: added {k}" for k in sorted(set(new) - set(old))]
            lines += [f"  {section}: removed {k}" for k in sorted(set(old) - set(new))]
            for key in sorted(k for k in set(old) & set(new) if old[k] != new[k]):
                lines.append(f"  {section}: changed {key}")
                lines += [f"  {d}" for d in _differences(old[key], new[key], f"{section}.{key}")]
        else:
            lines.append(f"  {section}: changed")
            lines += [f"  {d}" for d in _differences(old, new, section)]
    if len(lines) > _MAX_LINES:
        lines = [*lines[:_MAX_LINES], f"  ... and {len(lines) - _MAX_LINES} more lines"]
    return lines


def assert_matches_snapshot(
    template: Mapping[str, Any], path: str | Path, *, update: bool | None = None
) -> None:
    """Compare ``template`` (pass it through :func:`stable_template` first) with the JSON
    snapshot at ``path``.

    With ``update`` (default: the ``FM_SNAPSHOT_UPDATE`` environment variable is ``1``) the
    snapshot is written instead. A missing snapshot fails rather than being created silently.
    """
    snapshot = Path(path)
    if update is None:
        update = os.environ.get(UPDATE_ENV) == "1"
    if update:
        snapshot.parent.mkdir(parents=True, exist_ok=True)
        snapshot.write_text(json.dumps(template, indent=1) + "\n", encoding="utf-8")
        return
    if not snapshot.exists():
        raise AssertionError(
            f"no snapshot at {snapshot}; write it with {UPDATE_ENV}=1, review and commit it"
        )
    expected = json.loads(snapshot.read_text(encoding="utf-8"))
    if expected != template:
        details = "\n".join(_summary(expected, template))
        raise AssertionError(
            f"template differs from the snapshot {snapshot}:\n{details}\n"
            f"if the change is intended, rerun with {UPDATE_ENV}=1 and commit the snapshot"
        )
