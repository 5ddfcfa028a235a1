"""Whether a value given for a count, a number of days or a size is a whole number in range.

``True`` and ``False`` are ``int`` in Python; a count must not accept them, nor a float. The
constructs check a value with this unless it is a CDK token (resolved at deploy time).
"""

from __future__ import annotations


def is_whole_number(value: object, low: int | None = None, high: int | None = None) -> bool:
    """``value`` is an ``int`` (not a ``bool``) from ``low`` to ``high`` (each included, each
    unbounded when None)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return (low is None or value >= low) and (high is None or value <= high)
