"""The ``--json`` form of a command's frozen dataclasses, written once instead of one mapper
per class.

A dataclass becomes an object of its fields in declaration order, then of the properties its
class names in ``JSON_PROPERTIES``; a field's ``metadata["json"]`` renames its key and
``metadata["encode"]`` converts its value (for a type the command does not own). A value with
its own ``to_json()`` gives that; a named tuple becomes an object, other tuples and lists
arrays, enums their values.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import Enum
from typing import Any


def json_field(name: str | None = None, *, encode: Callable[[Any], Any] | None = None) -> Any:
    """Field metadata for :func:`document`: ``name`` is the key (default: the field's name),
    ``encode`` converts the value."""
    metadata: dict[str, Any] = {}
    if name is not None:
        metadata["json"] = name
    if encode is not None:
        metadata["encode"] = encode
    return metadata


def document(value: object) -> Any:
    """``value`` as JSON-ready data (dicts, lists, strings, numbers, booleans, None)."""
    to_json = getattr(value, "to_json", None)
    if callable(to_json) and not isinstance(value, type):
        return to_json()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            encode = f.metadata.get("encode")
            out[f.metadata.get("json", f.name)] = (
                encode(item) if encode is not None and item is not None else document(item)
            )
        for name in getattr(type(value), "JSON_PROPERTIES", ()):
            out[name] = document(getattr(value, name))
        return out
    if isinstance(value, Enum):
        return value.value
    as_dict = getattr(value, "_asdict", None)
    if isinstance(value, tuple) and callable(as_dict):
        return {key: document(item) for key, item in as_dict().items()}
    if isinstance(value, tuple | list):
        return [document(item) for item in value]
    if isinstance(value, dict):
        return {str(key): document(item) for key, item in value.items()}
    return value
