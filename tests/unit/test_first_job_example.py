"""The first-job example's metrics exporter: served over HTTP, in the names and types of the
job-metrics contract, histogram buckets cumulative."""

from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "first-job"
sys.path.insert(0, str(EXAMPLE))

from job_metrics_exporter import STEP_BUCKETS, Progress, serve_metrics  # noqa: E402


def _scrape(progress: Progress) -> str:
    server = serve_metrics(progress, port=0, host="127.0.0.1")
    try:
        port = server.server_address[1]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
            assert response.status == 200
            return str(response.read().decode())
    finally:
        server.shutdown()
        server.server_close()


def test_progress_is_served_in_prometheus_text_format() -> None:
    progress = Progress()
    progress.step(tokens=8192, loss=7.5, seconds=0.3)
    progress.step(tokens=8192, loss=7.0, seconds=3.0)
    progress.last_checkpoint = 1_700_000_000.0
    values = {
        line.split(" ")[0]: float(line.split(" ")[1])
        for line in _scrape(progress).splitlines()
        if line and not line.startswith("#")
    }
    assert values["fm_training_steps_total"] == 2
    assert values["fm_training_tokens_total"] == 16384
    assert values["fm_training_loss"] == 7.0
    assert values["fm_training_last_checkpoint_timestamp_seconds"] == 1_700_000_000.0
    assert values['fm_training_step_duration_seconds_bucket{le="0.25"}'] == 0
    assert values['fm_training_step_duration_seconds_bucket{le="0.5"}'] == 1
    assert values['fm_training_step_duration_seconds_bucket{le="5.0"}'] == 2
    assert values['fm_training_step_duration_seconds_bucket{le="+Inf"}'] == 2
    assert values["fm_training_step_duration_seconds_count"] == 2
    assert values["fm_training_step_duration_seconds_sum"] == pytest.approx(3.3)


def test_exporter_follows_the_job_metrics_contract() -> None:
    contract = pytest.importorskip(
        "fm_constructs.domain.job_metrics", reason="the job-metrics contract is not in this tree"
    )
    served = {
        line.split("{")[0].split(" ")[0]
        for line in _scrape(Progress()).splitlines()
        if line and not line.startswith("#")
    }
    assert served <= contract.metric_names()
    assert tuple(STEP_BUCKETS) == tuple(contract.STEP_DURATION_BUCKETS)
    from job_metrics_exporter import METRICS_PORT

    assert contract.METRICS_PORT == METRICS_PORT
