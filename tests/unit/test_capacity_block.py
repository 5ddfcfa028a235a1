"""Capacity Block timing: scale-up at the start, scale-down 40 minutes before the end (EC2
terminates from 30 minutes before), and the profile keys that carry the times."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from fm_constructs.config import parse_profile
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.capacity_block import (
    capacity_block_schedule,
    parse_utc,
    schedule_expression,
)
from fm_constructs.rules.capacity import capacity_block_times
from tests.profile_data import BASE, profile_with


def test_schedule_moments() -> None:
    schedule = capacity_block_schedule("2027-01-04T11:30:00Z", "2027-01-18T11:30:00Z")
    assert capacity_block_times("2027-01-04T11:30:00Z", "2027-01-18T11:30:00Z") == []
    assert schedule is not None
    assert schedule.scale_up_at == datetime(2027, 1, 4, 11, 30, tzinfo=UTC)
    assert schedule.scale_down_at == datetime(2027, 1, 18, 10, 50, tzinfo=UTC)
    assert schedule.ec2_terminates_at == datetime(2027, 1, 18, 11, 0, tzinfo=UTC)
    assert schedule.last_checkpoint_by == schedule.scale_down_at
    assert schedule_expression(schedule.scale_down_at) == "at(2027-01-18T10:50:00)"


@pytest.mark.parametrize(
    ("start", "end", "message"),
    [
        ("2027-01-04 11:30", "2027-01-18T11:30:00Z", "start_time: must be ISO 8601 UTC"),
        ("2027-01-04T11:30:00+02:00", "2027-01-18T11:30:00Z", "start_time: must be ISO"),
        ("2027-01-04T11:30:00Z", None, "give both times"),
        ("2027-01-04T11:30:00Z", "2027-01-04T12:00:00Z", "end_time: must be more than 40"),
    ],
)
def test_bad_times(start: str, end: str | None, message: str) -> None:
    assert capacity_block_schedule(start, end) is None
    messages = [f.message() for f in capacity_block_times(start, end)]
    assert any(message in m for m in messages), messages


def test_parse_utc() -> None:
    assert parse_utc("2027-01-04T11:30:00+00:00") == datetime(2027, 1, 4, 11, 30, tzinfo=UTC)
    assert parse_utc("yesterday") is None


def test_profile_keys_belong_to_their_kind() -> None:
    with pytest.raises(FmValidationError) as caught:
        parse_profile(
            profile_with(
                **{
                    "pretraining.capacity.start_time": "2027-01-04T11:30:00Z",
                    "pretraining.capacity.end_time": "2027-01-18T11:30:00Z",
                    "pretraining.capacity.fall_back_to_on_demand": True,
                }
            )
        )
    problems = "\n".join(caught.value.problems)
    assert "pretraining.capacity.start_time: does not apply to kind 'on-demand'" in problems
    assert "pretraining.capacity.fall_back_to_on_demand: does not apply" in problems
    assert parse_profile(BASE).pretraining.capacity.fall_back_to_on_demand is False
