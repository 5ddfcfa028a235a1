"""Typed, path-aware reads from a parsed TOML document that record problems instead of raising.

Each read names the full key path (``pretraining.capacity.kind``) so that a user sees exactly
which line of the profile to fix; unknown keys are reported too, because a typo that is silently
ignored deploys the wrong thing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, TypeVar

from fm_constructs.errors import Problems

E = TypeVar("E", bound=StrEnum)

_TYPE_NAMES = {bool: "a boolean", int: "an integer", str: "a string", float: "a number"}


class TableReader:
    """Reads the keys of one TOML table, recording every problem in a shared collector."""

    def __init__(
        self, data: Mapping[str, Any], path: str, problems: Problems, known: Iterable[str]
    ) -> None:
        self.data = data
        self.path = path
        self.problems = problems
        known_keys = sorted(known)
        for key in data:
            if key not in known_keys:
                problems.add(
                    self.key_path(key),
                    key,
                    f"unknown key; allowed keys here are {', '.join(known_keys)}",
                )

    def key_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def _typed(self, key: str, kind: type, required: bool) -> Any:
        if key not in self.data:
            if required:
                self.problems.add(self.key_path(key), None, f"is required ({_TYPE_NAMES[kind]})")
            return None
        value = self.data[key]
        ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not ok:
            requirement = f"must be {_TYPE_NAMES[kind]}"
            if kind is str and isinstance(value, int | float) and not isinstance(value, bool):
                requirement += f' (quote it: {key} = "{value}")'
            self.problems.add(self.key_path(key), value, requirement)
            return None
        return value

    def string(
        self,
        key: str,
        default: str | None = None,
        *,
        required: bool = False,
        pattern: str | None = None,
        hint: str = "",
    ) -> str | None:
        value = self._typed(key, str, required)
        if value is None:
            return default
        if pattern is not None and not re.fullmatch(pattern, value):
            self.problems.add(self.key_path(key), value, hint or f"must match {pattern}")
            return default
        return str(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self._typed(key, bool, False)
        return default if value is None else bool(value)

    def integer(
        self,
        key: str,
        default: int | None = None,
        *,
        required: bool = False,
        minimum: int | None = None,
        maximum: int | None = None,
    ) -> int | None:
        value = self._typed(key, int, required)
        if value is None:
            return default
        if minimum is not None and value < minimum:
            self.problems.add(self.key_path(key), value, f"must be >= {minimum}")
            return default
        if maximum is not None and value > maximum:
            self.problems.add(self.key_path(key), value, f"must be <= {maximum}")
            return default
        return int(value)

    def number(self, key: str, *, minimum_exclusive: float = 0.0) -> float | None:
        value = self._typed(key, float, False)
        if value is None:
            return None
        if value <= minimum_exclusive:
            self.problems.add(self.key_path(key), value, f"must be > {minimum_exclusive:g}")
            return None
        return float(value)

    def choice(self, key: str, enum: type[E], default: E | None, *, required: bool = False) -> E:
        """Read a string restricted to an enum's values; falls back to ``default``."""
        value = self._typed(key, str, required)
        if value is None:
            return default if default is not None else next(iter(enum))
        allowed = [member.value for member in enum]
        if value not in allowed:
            self.problems.add(
                self.key_path(key), value, f"must be one of {', '.join(map(repr, allowed))}"
            )
            return default if default is not None else next(iter(enum))
        return enum(value)

    def string_list(self, key: str, *, required: bool = False) -> tuple[str, ...]:
        if key not in self.data:
            if required:
                self.problems.add(self.key_path(key), None, "is required (a list of strings)")
            return ()
        value = self.data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problems.add(self.key_path(key), value, "must be a list of strings")
            return ()
        return tuple(value)

    def table(self, key: str, known: Iterable[str]) -> TableReader:
        """Reader for a sub-table; a missing sub-table reads as empty (all defaults)."""
        value = self.data.get(key, {})
        if not isinstance(value, Mapping):
            self.problems.add(self.key_path(key), value, "must be a table")
            value = {}
        return TableReader(value, self.key_path(key), self.problems, known)
