"""FSx for Lustre sizing math (hand-computed cases) and every FSx validity rule."""

from __future__ import annotations

from typing import Any

import pytest

from fm_constructs.errors import FmValidationError
from fm_constructs.planning.fsx_sizing import (
    DEFAULT_BYTES_PER_PARAMETER,
    EFA_CAPACITY_STEP_GIB,
    METADATA_IOPS,
    FsxSizingRequest,
    LustreDeploymentType,
    aggregate_throughput_mb_s,
    efa_capacity_step_gib,
    format_sizing_table,
    is_valid_efa_capacity,
    is_valid_metadata_iops,
    is_valid_storage_capacity,
    next_valid_storage_capacity,
    reference_sizings,
    size_fsx_lustre,
    valid_per_unit_throughputs,
)
from fm_constructs.rules.storage import lustre_settings

P2 = LustreDeploymentType.PERSISTENT_2
P1 = LustreDeploymentType.PERSISTENT_1
S2 = LustreDeploymentType.SCRATCH_2
GIB_IN_MB = 1024**3 / 1000**2  # 1073.741824 MB per GiB


# ----------------------------------------------------------------------------- validity rules


@pytest.mark.parametrize("deployment", [P2, P1, S2])
@pytest.mark.parametrize("capacity", [1200, 2400, 4800, 7200, 24000, 480000])
def test_valid_capacities(deployment: LustreDeploymentType, capacity: int) -> None:
    assert is_valid_storage_capacity(deployment, capacity)


@pytest.mark.parametrize("deployment", [P2, P1, S2])
@pytest.mark.parametrize("capacity", [0, 1000, 1199, 1201, 3600, 6000, 2500, -2400, True])
def test_invalid_capacities(deployment: LustreDeploymentType, capacity: int) -> None:
    assert not is_valid_storage_capacity(deployment, capacity)


@pytest.mark.parametrize(
    ("minimum", "expected"),
    [(0, 1200), (1200, 1200), (1201, 2400), (2400, 2400), (2401, 4800), (9807, 12000)],
)
def test_next_valid_capacity(minimum: float, expected: int) -> None:
    assert next_valid_storage_capacity(P2, minimum) == expected


def test_per_unit_throughputs_per_deployment_type() -> None:
    assert valid_per_unit_throughputs(P2) == (125, 250, 500, 1000)
    assert valid_per_unit_throughputs(P1) == (50, 100, 200)
    assert valid_per_unit_throughputs(S2) == ()


def test_metadata_iops_values() -> None:
    # 1500, 3000, 6000, then 12000 .. 192000 step 12000 (16 values) = 19 values
    assert METADATA_IOPS[:5] == (1500, 3000, 6000, 12000, 24000)
    assert METADATA_IOPS[-1] == 192000
    assert len(METADATA_IOPS) == 19
    for good in (1500, 3000, 6000, 12000, 36000, 192000):
        assert is_valid_metadata_iops(good)
    for bad in (0, 1000, 4500, 9000, 18000, 204000, True):
        assert not is_valid_metadata_iops(bad)


def test_efa_capacity_steps() -> None:
    assert EFA_CAPACITY_STEP_GIB == {125: 38400, 250: 19200, 500: 9600, 1000: 4800}
    assert efa_capacity_step_gib(50) is None
    assert is_valid_efa_capacity(4800, 1000)
    assert is_valid_efa_capacity(9600, 1000)
    assert not is_valid_efa_capacity(2400, 1000)
    assert not is_valid_efa_capacity(4800, 500)  # 500 MB/s/TiB needs multiples of 9600
    assert is_valid_efa_capacity(19200, 250)
    assert not is_valid_efa_capacity(38400, 50)


def test_aggregate_throughput_follows_fsx_arithmetic() -> None:
    # API reference: 2.4 TiB (2400 GiB) x 50 MB/s/TiB = 120 MB/s
    assert aggregate_throughput_mb_s(2400, 50) == 120
    assert aggregate_throughput_mb_s(1200, 125) == 150


def _problems(**kwargs: object) -> list[str]:
    return [f.message() for f in lustre_settings(**kwargs)]  # type: ignore[arg-type]


def test_check_accepts_valid_settings() -> None:
    assert (
        _problems(deployment_type=P2, storage_capacity_gib=2400, throughput_mb_s_per_tib=250) == []
    )
    assert (
        _problems(deployment_type=P1, storage_capacity_gib=1200, throughput_mb_s_per_tib=200) == []
    )
    assert (
        _problems(deployment_type=S2, storage_capacity_gib=1200, throughput_mb_s_per_tib=None) == []
    )
    assert (
        _problems(
            deployment_type=P2,
            storage_capacity_gib=4800,
            throughput_mb_s_per_tib=1000,
            metadata_iops=12000,
            efa_enabled=True,
        )
        == []
    )


def test_check_names_bad_capacity_and_suggests_next() -> None:
    (problem,) = _problems(
        deployment_type=P2, storage_capacity_gib=3000, throughput_mb_s_per_tib=250
    )
    assert problem.startswith("storage_capacity_gib:")
    assert "next valid size up is 4800" in problem and "got 3000" in problem


@pytest.mark.parametrize(
    ("deployment", "throughput"), [(P2, 200), (P2, 50), (P1, 125), (P1, 250), (P2, 0)]
)
def test_check_rejects_tier_of_other_deployment_type(
    deployment: LustreDeploymentType, throughput: int
) -> None:
    (problem,) = _problems(
        deployment_type=deployment, storage_capacity_gib=1200, throughput_mb_s_per_tib=throughput
    )
    assert problem.startswith("throughput_mb_s_per_tib:") and f"got {throughput}" in problem


def test_check_rejects_throughput_on_scratch() -> None:
    (problem,) = _problems(
        deployment_type=S2, storage_capacity_gib=1200, throughput_mb_s_per_tib=200
    )
    assert "must not be set for SCRATCH_2" in problem


def test_check_metadata_iops_rules() -> None:
    (bad_value,) = _problems(
        deployment_type=P2,
        storage_capacity_gib=1200,
        throughput_mb_s_per_tib=250,
        metadata_iops=5000,
    )
    assert bad_value.startswith("metadata_iops:") and "got 5000" in bad_value
    (wrong_type,) = _problems(
        deployment_type=P1,
        storage_capacity_gib=1200,
        throughput_mb_s_per_tib=200,
        metadata_iops=1500,
    )
    assert "only available on PERSISTENT_2" in wrong_type


def test_check_efa_rules() -> None:
    (not_p2,) = _problems(
        deployment_type=P1, storage_capacity_gib=1200, throughput_mb_s_per_tib=200, efa_enabled=True
    )
    assert not_p2.startswith("efa_enabled:")
    (too_small,) = _problems(
        deployment_type=P2,
        storage_capacity_gib=2400,
        throughput_mb_s_per_tib=1000,
        efa_enabled=True,
    )
    assert "multiple of 4800 GiB" in too_small and "got 2400" in too_small


def test_check_reports_every_problem_at_once() -> None:
    problems = _problems(
        deployment_type=P2,
        storage_capacity_gib=1000,
        throughput_mb_s_per_tib=300,
        metadata_iops=7,
    )
    assert [p.split(":")[0] for p in problems] == [
        "storage_capacity_gib",
        "throughput_mb_s_per_tib",
        "metadata_iops",
    ]


# ----------------------------------------------------------------------------- sizing math


def test_default_bytes_per_parameter_is_documented_16() -> None:
    assert DEFAULT_BYTES_PER_PARAMETER == 16.0


def test_capacity_bound_case_picks_125_tier() -> None:
    # checkpoint 10 GiB, dataset 5000 GiB, keep 2 (+1 in flight), 20 % headroom:
    #   space = (5000 + 3 x 10) x 1.2 = 6036 GiB -> next valid 7200 GiB
    #   throughput need = 10 x 1073.741824 MB / 600 s = 17.9 MB/s (any tier meets it)
    #   cost: 7200 x 0.145 = 1044 (125) < 7200 x 0.210 = 1512 (250) ... -> 125 tier
    result = size_fsx_lustre(
        FsxSizingRequest(
            checkpoint_size_gib=10, target_checkpoint_write_seconds=600, dataset_size_gib=5000
        )
    )
    assert result.required_capacity_gib == pytest.approx(6036)
    assert (result.storage_capacity_gib, result.throughput_mb_s_per_tib) == (7200, 125)
    assert result.aggregate_throughput_mb_s == 900  # 7200 x 125 / 1000
    assert result.checkpoint_write_seconds == pytest.approx(10 * GIB_IN_MB / 900)
    assert result.monthly_storage_cost_usd == pytest.approx(1044)


def test_throughput_bound_case_picks_a_high_tier() -> None:
    # checkpoint 1000 GiB in 100 s: 1000 x 1073.741824 / 100 = 10737.4 MB/s
    #   space = (0 + 2 x 1000) x 1.0 = 2000 GiB -> 2400
    #   write capacity per tier = 10737.4 x 1000 / tier:
    #     125 -> 85899 -> 86400 ($12528); 250 -> 42950 -> 43200 ($9072)
    #     500 -> 21475 -> 21600 ($7344); 1000 -> 10737 -> 12000 ($7200)  <- cheapest
    result = size_fsx_lustre(
        FsxSizingRequest(
            checkpoint_size_gib=1000,
            target_checkpoint_write_seconds=100,
            checkpoints_to_keep=1,
            headroom_fraction=0,
        )
    )
    assert (result.storage_capacity_gib, result.throughput_mb_s_per_tib) == (12000, 1000)
    assert result.aggregate_throughput_mb_s == 12000
    assert result.checkpoint_write_seconds == pytest.approx(1000 * GIB_IN_MB / 12000)
    assert result.checkpoint_write_seconds <= 100
    assert result.monthly_storage_cost_usd == pytest.approx(7200)
    assert any("1000 MB/s/TiB: 12,000 GiB" in line for line in result.reasoning)


def test_parameters_times_bytes_per_parameter() -> None:
    # 7e9 params x 16 B = 112e9 B = 104.31 GiB; 112000 MB / 120 s = 933.3 MB/s
    #   space = (1000 + 4 x 104.31) x 1.2 = 1700.7 -> 2400
    #   125: 933.3 x 8 = 7467 -> 9600 ($1392); 250: 3733 -> 4800 ($1008)
    #   500: 1867 -> 2400 ($816) <- cheapest;  1000: 933 -> 1200, space 2400 ($1440)
    result = size_fsx_lustre(
        FsxSizingRequest(
            model_parameters=7e9,
            target_checkpoint_write_seconds=120,
            dataset_size_gib=1000,
            checkpoints_to_keep=3,
        )
    )
    assert result.checkpoint_size_gib == pytest.approx(112e9 / 1024**3)
    assert (result.storage_capacity_gib, result.throughput_mb_s_per_tib) == (2400, 500)
    assert result.checkpoint_write_seconds == pytest.approx(112000 / 1200)
    assert result.monthly_storage_cost_usd == pytest.approx(816)
    assert result.summary() == (
        "2400 GiB at 500 MB/s/TiB = 1,200 MB/s; checkpoint 104.3 GiB written in 93 s; ~$816/month"
    )


def test_efa_sizing_rounds_to_efa_quanta() -> None:
    # same 1000 GiB / 100 s need as above; EFA quanta: 125 -> 86400 -> 115200 (38400 x 3),
    # 250 -> 43200 -> 57600, 500 -> 21600 -> 28800, 1000 -> 12000 -> 14400 ($8640) <- cheapest
    result = size_fsx_lustre(
        FsxSizingRequest(
            checkpoint_size_gib=1000,
            target_checkpoint_write_seconds=100,
            checkpoints_to_keep=1,
            headroom_fraction=0,
            efa_enabled=True,
        )
    )
    assert (result.storage_capacity_gib, result.throughput_mb_s_per_tib) == (14400, 1000)
    assert is_valid_efa_capacity(result.storage_capacity_gib, result.throughput_mb_s_per_tib)


def test_reference_sizings_meet_their_targets() -> None:
    results = reference_sizings()
    assert list(results) == ["7B", "70B", "405B"]
    for result in results.values():
        assert result.checkpoint_write_seconds <= 120
        assert is_valid_storage_capacity(P2, result.storage_capacity_gib)
        assert result.storage_capacity_gib >= result.required_capacity_gib
    # 405B: 6.48e12 B / 120 s = 54000 MB/s -> at 1000 MB/s/TiB 54000 GiB -> 55200 GiB
    assert results["405B"].storage_capacity_gib == 55200
    assert results["405B"].throughput_mb_s_per_tib == 1000
    table = format_sizing_table(results)
    assert table.count("\n") == 4 and "| 405B |" in table


def test_request_problems_all_reported() -> None:
    with pytest.raises(FmValidationError) as raised:
        size_fsx_lustre(
            FsxSizingRequest(
                checkpoint_size_gib=10,
                model_parameters=7e9,
                target_checkpoint_write_seconds=0,
                dataset_size_gib=-1,
                checkpoints_to_keep=0,
                bytes_per_parameter=0,
                headroom_fraction=-0.1,
            )
        )
    text = str(raised.value)
    for field in (
        "checkpoint_size_gib / model_parameters",
        "bytes_per_parameter",
        "target_checkpoint_write_seconds",
        "dataset_size_gib",
        "checkpoints_to_keep",
        "headroom_fraction",
    ):
        assert field in text
    assert len(raised.value.problems) == 6


def test_request_needs_a_size_or_parameters() -> None:
    with pytest.raises(FmValidationError, match="give exactly one of them"):
        size_fsx_lustre(FsxSizingRequest(target_checkpoint_write_seconds=60))


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"checkpoint_size_gib": 0}, "checkpoint_size_gib"),
        ({"model_parameters": -1}, "model_parameters"),
    ],
)
def test_request_rejects_non_positive_sizes(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(FmValidationError, match=f"{field}: must be > 0"):
        size_fsx_lustre(FsxSizingRequest(target_checkpoint_write_seconds=60, **kwargs))
