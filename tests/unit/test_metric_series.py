"""The Prometheus series estimate: counted from the shipped scrape allowlists."""

from __future__ import annotations

from fm_constructs.catalog import get_instance_type
from fm_constructs.cli.series import SCRAPE_INTERVAL_SECONDS, scrape_configuration
from fm_constructs.planning.metric_series import (
    CPU_MODES,
    kept_names,
    samples_per_second,
    series_per_node,
)


def test_kept_names_come_from_the_shipped_scrape_configuration() -> None:
    kept = kept_names(scrape_configuration())
    assert {"dcgm-exporter", "node-exporter", "kube-state-metrics"} <= set(kept)
    assert "node_cpu_seconds_total" in kept["node-exporter"]
    assert all(name.startswith("DCGM_") for name in kept["dcgm-exporter"])


def test_series_per_node_follow_gpus_cpus_efa_devices_and_pods() -> None:
    kept = kept_names(scrape_configuration())
    p5en = get_instance_type("p5en.48xlarge")
    estimate = series_per_node(p5en, kept, max_pods=32)
    assert estimate.by_job["dcgm-exporter"] == len(kept["dcgm-exporter"]) * 8
    cpu = p5en.vcpus * CPU_MODES
    assert estimate.by_job["node-exporter"] >= cpu
    more_pods = series_per_node(p5en, kept, max_pods=64)
    assert more_pods.per_node > estimate.per_node
    # the relabeling is what bounds it: keeping one name fewer sends fewer series
    trimmed = dict(kept)
    trimmed["node-exporter"] = tuple(
        n for n in kept["node-exporter"] if n != "node_cpu_seconds_total"
    )
    assert series_per_node(p5en, trimmed, max_pods=32).per_node == estimate.per_node - cpu
    # Trainium nodes run no DCGM exporter
    trn2 = series_per_node(get_instance_type("trn2.48xlarge"), kept, max_pods=32)
    assert trn2.by_job["dcgm-exporter"] == 0


def test_ingestion_rate_is_series_over_the_interval() -> None:
    assert samples_per_second(2_297_856, SCRAPE_INTERVAL_SECONDS) == 76_596
