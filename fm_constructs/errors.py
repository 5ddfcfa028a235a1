"""The one exception type the library raises for bad input, and a collector for problems.

Every check in the library reports *all* of its problems at once, each naming the field, the
bad value and what is allowed, so a user fixes a profile in one pass instead of one error per
synth.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class FmValidationError(ValueError):
    """Raised at synth time (or config load) when input cannot produce a valid deployment.

    ``problems`` holds one human-readable line per problem; ``str(error)`` lists them all.
    """

    def __init__(self, problems: Iterable[str], *, context: str | None = None) -> None:
        self.problems: tuple[str, ...] = tuple(problems)
        if not self.problems:
            raise ValueError("FmValidationError needs at least one problem")
        self.context = context
        header = f"{context}: " if context else ""
        if len(self.problems) == 1:
            message = f"{header}{self.problems[0]}"
        else:
            lines = "\n".join(f"  - {p}" for p in self.problems)
            message = f"{header}{len(self.problems)} problems:\n{lines}"
        super().__init__(message)


class Problems:
    """Collects validation problems so that a check can report every one of them together.

    Usage: ``problems = Problems()``, ``problems.add("field", value, "must be ...")``, then
    ``problems.raise_if_any()``.
    """

    def __init__(self, context: str | None = None, *, field_prefix: str = "") -> None:
        self._items: list[str] = []
        self.context = context
        self.field_prefix = field_prefix

    def add(self, field: str, value: object, requirement: str) -> None:
        """Record that ``field`` holds ``value`` which breaks ``requirement``.

        ``field_prefix`` (e.g. ``"pretraining.storage."``) lets a check written for a
        construct's own props report problems under a profile's key paths.
        """
        self._items.append(f"{self.field_prefix}{field}: {requirement}, got {value!r}")

    def add_message(self, message: str) -> None:
        """Record a problem already phrased in full (for rules spanning several fields)."""
        self._items.append(message)

    def extend(self, other: Iterable[str]) -> None:
        self._items.extend(other)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def raise_if_any(self) -> None:
        """Raise one FmValidationError listing every recorded problem, if there are any."""
        if self._items:
            raise FmValidationError(self._items, context=self.context)
