"""Typed, path-aware reads from a parsed TOML document that record problems instead of raising.

Each read names the full key path (``pretraining.capacity.kind``) so that a user sees exactly
which line of the profile to fix; unknown keys are reported too, because a typo that is silently
ignored deploys the wrong thing.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any, TypeVar

from fm_constructs.errors import Problems
from fm_constructs.rules.findings import info

UNKNOWN_KEY = info(
    "FM001",
    "A key the table does not have (often a typo).",
    "Fix the spelling (the message suggests the closest key) or remove the key.",
)
WRONG_TYPE = info(
    "FM002",
    "A value of the wrong TOML type (a number where a string is expected, ...).",
    "Write the value with the type the message names; quote strings such as '1.35'.",
)
REQUIRED = info("FM003", "A required key is missing.", "Add the key.")
OUT_OF_RANGE = info(
    "FM004", "A number outside its allowed range.", "Use a value within the range shown."
)
NOT_ALLOWED = info(
    "FM005",
    "A value outside the allowed choices or form (an enum value, a name pattern).",
    "Use one of the values, or the form, the message shows.",
)
UNREADABLE = info(
    "FM006",
    "The profile file cannot be read, or is not valid TOML.",
    "Check the path (cdk synth -c config=<file>) and fix the TOML syntax at the line shown.",
)
KEY_NOT_HERE = info(
    "FM010",
    "A key is set on a workload that does not take it (for example a model on pre-training).",
    "Remove the key, or move it to the workload it belongs to.",
)

E = TypeVar("E", bound=StrEnum)

_TYPE_NAMES = {bool: "a boolean", int: "an integer", str: "a string", float: "a number"}


def _is_number(text: str, kind: type) -> bool:
    """``text`` (a TOML string) reads as a number of ``kind``: a value quoted by mistake."""
    try:
        kind(text.strip())
    except ValueError:
        return False
    return True


class TableReader:
    """Reads the keys of one TOML table, recording every problem in a shared collector.

    ``elsewhere`` maps keys this table does not take but other tables do (an inference key
    on a training workload) to those tables (``[inference]``), so the message says where the
    key belongs.
    """

    def __init__(
        self,
        data: Mapping[str, Any],
        path: str,
        problems: Problems,
        known: Iterable[str],
        *,
        elsewhere: Mapping[str, str] | None = None,
    ) -> None:
        self.data = data
        self.path = path
        self.problems = problems
        known_keys = sorted(known)
        #: Known keys an unknown key is probably a misspelling of (no "required" line then).
        self._misspelled: set[str] = set()
        for key in data:
            if key in known_keys:
                continue
            if elsewhere and key in elsewhere:
                problems.add(
                    self.key_path(key),
                    data[key],
                    f"only {elsewhere[key]} takes {key!r}; [{path}] takes {', '.join(known_keys)}",
                    code=KEY_NOT_HERE,
                    fix=f"remove it, or move it to {elsewhere[key]}",
                )
            else:
                close = difflib.get_close_matches(key, known_keys, n=1, cutoff=0.75)
                self._misspelled.update(close)
                problems.add(
                    self.key_path(key),
                    key,
                    f"unknown key; allowed keys here are {', '.join(known_keys)}",
                    code=UNKNOWN_KEY,
                    fix=f"did you mean {close[0]!r}?" if close else "",
                )

    def key_path(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def _typed(self, key: str, kind: type, required: bool) -> Any:
        if key not in self.data:
            if required and key not in self._misspelled:
                self.problems.add(
                    self.key_path(key), None, f"is required ({_TYPE_NAMES[kind]})", code=REQUIRED
                )
            return None
        value = self.data[key]
        ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if not ok:
            requirement = f"must be {_TYPE_NAMES[kind]}"
            fix = ""
            if kind is str and isinstance(value, int | float) and not isinstance(value, bool):
                requirement += f' (quote it: {key} = "{value}")'
            elif kind in (int, float) and isinstance(value, str) and _is_number(value, kind):
                fix = f"write it without quotes: {key} = {value.strip()}"
            self.problems.add(self.key_path(key), value, requirement, code=WRONG_TYPE, fix=fix)
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
            self.problems.add(
                self.key_path(key), value, hint or f"must match {pattern}", code=NOT_ALLOWED
            )
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
            self.problems.add(self.key_path(key), value, f"must be >= {minimum}", code=OUT_OF_RANGE)
            return default
        if maximum is not None and value > maximum:
            self.problems.add(self.key_path(key), value, f"must be <= {maximum}", code=OUT_OF_RANGE)
            return default
        return int(value)

    def number(self, key: str, *, minimum_exclusive: float = 0.0) -> float | None:
        value = self._typed(key, float, False)
        if value is None:
            return None
        if value <= minimum_exclusive:
            self.problems.add(
                self.key_path(key), value, f"must be > {minimum_exclusive:g}", code=OUT_OF_RANGE
            )
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
                self.key_path(key),
                value,
                f"must be one of {', '.join(map(repr, allowed))}",
                code=NOT_ALLOWED,
            )
            return default if default is not None else next(iter(enum))
        return enum(value)

    def string_list(self, key: str, *, required: bool = False) -> tuple[str, ...]:
        if key not in self.data:
            if required:
                self.problems.add(
                    self.key_path(key), None, "is required (a list of strings)", code=REQUIRED
                )
            return ()
        value = self.data[key]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.problems.add(
                self.key_path(key), value, "must be a list of strings", code=WRONG_TYPE
            )
            return ()
        return tuple(value)

    def table(
        self, key: str, known: Iterable[str], *, elsewhere: Mapping[str, str] | None = None
    ) -> TableReader:
        """Reader for a sub-table; a missing sub-table reads as empty (all defaults)."""
        value = self.data.get(key, {})
        if not isinstance(value, Mapping):
            self.problems.add(self.key_path(key), value, "must be a table", code=WRONG_TYPE)
            value = {}
        return TableReader(value, self.key_path(key), self.problems, known, elsewhere=elsewhere)
