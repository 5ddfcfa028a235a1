"""is_whole_number: ints in range only (never a bool or a float)."""

from __future__ import annotations

import pytest

from fm_constructs.domain.numbers import is_whole_number


@pytest.mark.parametrize(
    ("value", "low", "high", "whole"),
    [
        (1, 1, None, True),
        (0, 1, None, False),
        (35, 0, 35, True),
        (36, 0, 35, False),
        (-5, None, None, True),
        (True, None, None, False),
        (False, 0, None, False),
        (2.0, 1, None, False),
        ("3", 1, None, False),
        (None, None, None, False),
    ],
)
def test_is_whole_number(value: object, low: int | None, high: int | None, whole: bool) -> None:
    assert is_whole_number(value, low, high) is whole
