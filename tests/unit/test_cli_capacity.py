"""fmc capacity search|purchase with stubbed EC2: duration rule, price per instance-hour,
refusal without --yes, the profile lines after a purchase, and AWS errors."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from fm_constructs.cli.capacity import is_valid_duration_hours
from tests.unit.cli_stubs import DEFAULT_PROFILE, Stubs, run, stubs

__all__ = ["stubs"]

START = datetime(2026, 10, 5, 11, 30, tzinfo=UTC)


def _offering(offering_id: str, zone: str, fee: str, hours: int = 48, count: int = 4) -> dict:  # type: ignore[type-arg]
    return {
        "CapacityBlockOfferingId": offering_id,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": zone,
        "InstanceCount": count,
        "StartDate": START,
        "EndDate": datetime(2026, 10, 7, 11, 30, tzinfo=UTC),
        "CapacityBlockDurationHours": hours,
        "UpfrontFee": fee,
        "CurrencyCode": "USD",
    }


@pytest.mark.parametrize("hours", [24, 48, 336, 504, 672, 4368])
def test_valid_durations(hours: int) -> None:
    assert is_valid_duration_hours(hours)


@pytest.mark.parametrize("hours", [0, 12, 25, 360, 480, 4536])
def test_invalid_durations(hours: int) -> None:
    # 360 h = 15 days: past 14 days only whole weeks; 4536 h = 189 days > 182
    assert not is_valid_duration_hours(hours)


def test_search_prices_per_instance_hour(stubs: Stubs) -> None:
    stubs["ec2"].add_response(
        "describe_capacity_block_offerings",
        {
            "CapacityBlockOfferings": [
                _offering("cb-0aaaaaaaaaaaaaaaa", "us-east-1b", "7680.00"),
                _offering("cb-0bbbbbbbbbbbbbbbb", "us-east-1a", "3840.00"),
            ]
        },
        {
            "InstanceType": "p5.48xlarge",
            "InstanceCount": 4,
            "CapacityDurationHours": 48,
            "StartDateRange": datetime(2026, 10, 1, tzinfo=UTC),
        },
    )
    result = run(
        "capacity",
        "search",
        "--config",
        DEFAULT_PROFILE,
        "--days",
        "2",
        "--start",
        "2026-10-01",
        "--json",
    )
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["schema"] == "fmc.capacity.search/v1"
    first, second = doc["offerings"]
    # $3840 / (4 instances * 48 h) = $20.00 per instance-hour, cheapest first
    assert first["offering_id"] == "cb-0bbbbbbbbbbbbbbbb"
    assert first["price_per_instance_hour"] == pytest.approx(20.0)
    assert second["price_per_instance_hour"] == pytest.approx(40.0)
    stubs.assert_done()


def test_search_text_marks_other_zones(stubs: Stubs) -> None:
    stubs["ec2"].add_response(
        "describe_capacity_block_offerings",
        {"CapacityBlockOfferings": [_offering("cb-0aaaaaaaaaaaaaaaa", "us-east-1b", "7680.00")]},
    )
    result = run("capacity", "search", "--config", DEFAULT_PROFILE, "--duration-hours", "48")
    assert result.code == 0
    assert "us-east-1b (not GPU zone)" in result.out
    # $7680 / (4 * 48) = $40/instance-hour, $5/GPU-hour
    assert "40" in result.out and "fmc capacity purchase --offering-id" in result.out


def test_search_without_offerings_exits_1(stubs: Stubs) -> None:
    stubs["ec2"].add_response("describe_capacity_block_offerings", {"CapacityBlockOfferings": []})
    result = run("capacity", "search", "--config", DEFAULT_PROFILE, "--days", "1")
    assert result.code == 1
    assert "no Capacity Block offering" in result.out


def test_invalid_duration_is_refused_before_any_call(stubs: Stubs) -> None:
    result = run("capacity", "search", "--config", DEFAULT_PROFILE, "--days", "15")
    assert result.code == 2
    assert "then whole weeks up to 182 days" in result.err and "got 360 hours" in result.err
    stubs.assert_done()


def test_search_throttled_exits_3(stubs: Stubs) -> None:
    stubs["ec2"].add_client_error(
        "describe_capacity_block_offerings", service_error_code="Throttling"
    )
    result = run("capacity", "search", "--config", DEFAULT_PROFILE, "--days", "1")
    assert result.code == 3
    assert "ec2:DescribeCapacityBlockOfferings: AWS throttled the request" in result.err
    assert "Traceback" not in result.err


def test_purchase_refused_without_yes(stubs: Stubs) -> None:
    result = run(
        "capacity", "purchase", "--config", DEFAULT_PROFILE, "--offering-id", "cb-0aaaaaaaaaaaaaaaa"
    )
    assert result.code == 2
    assert "refusing to buy" in result.err and "nothing was bought" in result.err
    assert stubs.stubbers == {}  # no client was even created


def test_purchase_prints_reservation_and_profile_lines(stubs: Stubs) -> None:
    stubs["ec2"].add_response(
        "purchase_capacity_block",
        {
            "CapacityReservation": {
                "CapacityReservationId": "cr-0123456789abcdef0",
                "InstanceType": "p5.48xlarge",
                "AvailabilityZone": "us-east-1b",
                "TotalInstanceCount": 4,
                "State": "scheduled",
                "StartDate": START,
            }
        },
        {"CapacityBlockOfferingId": "cb-0aaaaaaaaaaaaaaaa", "InstancePlatform": "Linux/UNIX"},
    )
    result = run(
        "capacity",
        "purchase",
        "--config",
        DEFAULT_PROFILE,
        "--offering-id",
        "cb-0aaaaaaaaaaaaaaaa",
        "--yes",
    )
    assert result.code == 0, result.err
    assert "purchased cr-0123456789abcdef0" in result.out
    assert "[pretraining.capacity]" in result.out
    assert 'kind = "capacity-block"' in result.out
    assert 'reservation_id = "cr-0123456789abcdef0"' in result.out
    assert "reserved_instance_count = 4" in result.out
    assert 'platform.availability_zone = "us-east-1b"' in result.out
    stubs.assert_done()


def test_purchase_access_denied_exits_3(stubs: Stubs) -> None:
    stubs["ec2"].add_client_error(
        "purchase_capacity_block", service_error_code="UnauthorizedOperation"
    )
    result = run(
        "capacity",
        "purchase",
        "--config",
        DEFAULT_PROFILE,
        "--offering-id",
        "cb-0aaaaaaaaaaaaaaaa",
        "--yes",
    )
    assert result.code == 3
    assert "ec2:PurchaseCapacityBlock: access denied" in result.err
