"""fmc plan's cost lines: every shipped profile gets a total, missing prices are named, every
line has a source, and the platform's own charges are separate lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from fm_constructs.cli.costs import eks_cluster_count, nat_gateway_count
from fm_constructs.cli.main import main
from fm_constructs.cli.plan import build_plan
from fm_constructs.cli.pricing import load_prices
from fm_constructs.config import load_profile

ROOT = Path(__file__).resolve().parents[2]
PROFILES = sorted((ROOT / "config").glob("*.toml"))


@pytest.mark.parametrize("path", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_shipped_profile_has_a_total_and_names_what_it_lacks(path: Path) -> None:
    plan = build_plan(load_profile(path), load_prices())
    assert plan.usd_per_hour > 0
    unpriced = [c for c in plan.costs if c.usd_per_hour is None]
    assert plan.partial == bool(unpriced)
    assert len(plan.missing_prices) == len(unpriced)
    for message in plan.missing_prices:
        assert message.startswith("no price for ") and message.endswith(f" in {plan.region}")
    assert all(c.source for c in plan.costs)


@pytest.mark.parametrize("path", PROFILES, ids=[p.stem for p in PROFILES])
def test_platform_lines_are_separate_and_priced(path: Path) -> None:
    profile = load_profile(path)
    plan = build_plan(profile, load_prices())
    items = [c.item for c in plan.costs]
    assert "NAT gateways" in items
    if eks_cluster_count(profile):
        assert "EKS control planes" in items
        assert any(i.startswith("EKS system nodes") for i in items)
    platform = [c for c in plan.costs if ":" not in c.item]
    # The built-in table prices the platform in every region a shipped profile uses.
    assert [c.item for c in platform if c.usd_per_hour is None] == []


def test_capacity_block_profile_total_is_partial_and_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--config", "config/pretraining-capacity-block.toml"]) == 0
    out = capsys.readouterr().out
    assert "PARTIAL" in out
    assert "no price for pretraining: p5.48xlarge in us-east-2" in out
    assert "total: n/a" not in out


def test_a_price_file_completes_a_partial_total(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        '{"regions": {"us-east-2": {"on_demand_usd_per_hour": {"p5.48xlarge": 55.04},'
        ' "fsx_lustre_usd_per_gb_month": {"PERSISTENT_2": {"500": 0.34}}}}}'
    )
    profile = load_profile(ROOT / "config" / "pretraining-capacity-block.toml")
    plan = build_plan(profile, load_prices(prices))
    assert not plan.partial
    gpu = next(c for c in plan.costs if c.item == "pretraining: p5.48xlarge")
    assert gpu.usd_per_hour == pytest.approx(16 * 55.04)


def test_single_nat_gateway_profile() -> None:
    profile = load_profile(ROOT / "config" / "pretraining-capacity-block.toml")
    assert nat_gateway_count(profile) == 1


def test_prometheus_is_usage_billed_not_missing() -> None:
    plan = build_plan(load_profile(ROOT / "config" / "default.toml"), load_prices())
    prometheus = next(c for c in plan.costs if c.item == "Managed Prometheus workspace")
    assert prometheus.usage_only and prometheus.usd_per_hour == 0.0
    assert "samples ingested" in prometheus.usage
