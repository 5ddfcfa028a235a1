"""FSx sized for data loading as well as checkpoints: every node reading at once."""

from __future__ import annotations

from fm_constructs.planning.fsx_sizing import (
    DEFAULT_READ_MB_S_PER_NODE,
    FsxSizingRequest,
    size_fsx_lustre,
)


def _request(**extra: object) -> FsxSizingRequest:
    return FsxSizingRequest(
        target_checkpoint_write_seconds=300,
        checkpoint_size_gib=1000,
        dataset_size_gib=2000,
        **extra,  # type: ignore[arg-type]
    )


def test_few_nodes_stay_sized_by_the_checkpoint_write() -> None:
    plain = size_fsx_lustre(_request())
    with_readers = size_fsx_lustre(_request(read_clients=4))
    assert with_readers.storage_capacity_gib == plain.storage_capacity_gib
    assert with_readers.throughput_mb_s_per_tib == plain.throughput_mb_s_per_tib


def test_a_thousand_readers_size_the_throughput() -> None:
    request = _request(read_clients=1024)
    assert request.read_mb_s == 1024 * DEFAULT_READ_MB_S_PER_NODE
    result = size_fsx_lustre(request)
    assert result.aggregate_throughput_mb_s >= request.read_mb_s
    assert any(line.startswith("data loading: 1,024 nodes x 50 MB/s") for line in result.reasoning)
    # a measured, lower figure per node buys less
    lean = size_fsx_lustre(_request(read_clients=1024, read_mb_s_per_client=5))
    assert lean.monthly_storage_cost_usd < result.monthly_storage_cost_usd
