"""fmc plan's cost lines: every shipped profile gets a total, every catalog type is priced or
reported with a reason in every region the price table covers, every line has a source, and
the platform's own charges are separate lines."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fm_constructs.catalog import all_instance_types
from fm_constructs.cli.costs import SYSTEM_INSTANCE_TYPE, eks_cluster_count, nat_gateway_count
from fm_constructs.cli.main import main
from fm_constructs.cli.plan import build_plan
from fm_constructs.cli.pricing import load_prices
from fm_constructs.config import load_profile

ROOT = Path(__file__).resolve().parents[2]
PROFILES = sorted((ROOT / "config").glob("*.toml"))
PRICES = load_prices()
REGIONS = sorted(PRICES.regions)
CATALOG = [spec.name for spec in all_instance_types()]


def _missing_pattern(region: str) -> re.Pattern[str]:
    return re.compile(rf"^no price for \S.* in {re.escape(region)}( \([^)]+\))?: \S.*$")


@pytest.mark.parametrize("path", PROFILES, ids=[p.stem for p in PROFILES])
def test_every_shipped_profile_has_a_total_and_names_what_it_lacks(path: Path) -> None:
    plan = build_plan(load_profile(path), PRICES)
    assert plan.usd_per_hour > 0
    unpriced = [c for c in plan.costs if c.usd_per_hour is None]
    assert plan.partial == bool(unpriced)
    assert len(plan.missing_prices) == len(unpriced)
    for message in plan.missing_prices:
        assert _missing_pattern(plan.region).match(message), message
    assert all(c.source for c in plan.costs)


def test_the_table_covers_every_region_a_shipped_profile_uses() -> None:
    used = {load_profile(path).platform.region for path in PROFILES}
    assert used <= set(REGIONS)


@pytest.mark.parametrize("region", REGIONS)
@pytest.mark.parametrize("instance_type", [*CATALOG, SYSTEM_INSTANCE_TYPE])
def test_every_catalog_type_is_priced_or_reported_with_a_reason(
    region: str, instance_type: str
) -> None:
    """A figure, or the region's own ``no_price`` entry: never the generic fallback, never
    both (a listed reason next to a figure would be stale)."""
    price = PRICES.on_demand_usd_per_hour(region, instance_type)
    listed = PRICES.regions[region].get("no_price", {}).get(instance_type)
    if price is None:
        assert listed, f"{instance_type} in {region}: no figure and no reason in prices.json"
    else:
        assert price > 0
        assert listed is None, f"{instance_type} in {region} has a price and a no_price entry"


@pytest.mark.parametrize("region", REGIONS)
def test_every_region_names_the_source_of_its_instance_prices(region: str) -> None:
    source = PRICES.source_of("on_demand_usd_per_hour", region)
    assert source != PRICES.sources["on_demand_usd_per_hour"], "no region-specific source"
    assert re.search(r"\d{4}-\d{2}-\d{2}", source), "the source names the date of its figures"


@pytest.mark.parametrize("region", REGIONS)
def test_fsx_is_priced_or_reported_in_every_region(region: str) -> None:
    tiers = PRICES.regions[region].get("fsx_lustre_usd_per_gb_month", {}).get("PERSISTENT_2")
    listed = PRICES.regions[region].get("no_price", {}).get("fsx_lustre")
    assert bool(tiers) != bool(listed), region


def test_an_unpriced_type_is_reported_by_the_plan_with_its_reason(tmp_path: Path) -> None:
    """p5e.48xlarge has no On-Demand figure in us-east-1: the plan says so on a line of its own
    and the total covers the rest, marked partial."""
    text = (ROOT / "config" / "default.toml").read_text(encoding="utf-8")
    config = tmp_path / "p5e.toml"
    config.write_text(
        text.replace('instance_type = "p5.48xlarge"', 'instance_type = "p5e.48xlarge"', 1),
        encoding="utf-8",
    )
    plan = build_plan(load_profile(config), PRICES)
    reason = PRICES.no_price_reason("us-east-1", "p5e.48xlarge")
    assert f"no price for p5e.48xlarge in us-east-1 (pretraining): {reason}" in plan.missing_prices
    assert plan.partial and plan.usd_per_hour > 0


@pytest.mark.parametrize("path", PROFILES, ids=[p.stem for p in PROFILES])
def test_platform_lines_are_separate_and_priced_or_explained(path: Path) -> None:
    profile = load_profile(path)
    plan = build_plan(profile, PRICES)
    items = [c.item for c in plan.costs]
    assert "NAT gateways" in items
    if eks_cluster_count(profile):
        assert "EKS control planes" in items
        assert any(i.startswith("EKS system nodes") for i in items)
    platform = [c for c in plan.costs if ":" not in c.item]
    # A platform line without a figure is one the region's table lists, with its reason.
    listed = PRICES.regions[plan.region].get("no_price", {})
    for line in platform:
        if line.usd_per_hour is None:
            assert (line.priced or line.item) in listed, line.item


def test_capacity_block_profile_total_is_partial_and_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["plan", "--config", "config/pretraining-capacity-block.toml"]) == 0
    out = capsys.readouterr().out
    assert "PARTIAL" in out
    assert (
        "no price for FSx for Lustre PERSISTENT_2 at 500 MB/s/TiB in us-east-2 (pretraining): "
        in out
    )
    assert "no price for p5.48xlarge" not in out
    assert "total: n/a" not in out


def test_a_price_file_completes_a_partial_total(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        '{"regions": {"us-east-2": {"on_demand_usd_per_hour": {"m7i.xlarge": 0.2},'
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
    plan = build_plan(load_profile(ROOT / "config" / "default.toml"), PRICES)
    prometheus = next(c for c in plan.costs if c.item == "Managed Prometheus workspace")
    assert prometheus.usage_only and prometheus.usd_per_hour == 0.0
    assert "samples ingested" in prometheus.usage


def _table_row(out: str, header: str, first_cell: str) -> dict[str, str]:
    """The row of the terminal table headed ``header`` whose first cell is ``first_cell``,
    keyed by column name (columns are separated by two or more spaces)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = re.split(r"\s{2,}", lines[start].strip())
    for line in lines[start + 2 :]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        if cells[0] == first_cell:
            return dict(zip(names, cells, strict=True))
    raise AssertionError(f"no row {first_cell!r} under {header!r}")


def test_fsx_is_a_line_of_its_own_not_inside_the_nodes_figure(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`fmc plan` of the default profile: the workload table prices the nodes alone
    (4 x p5.48xlarge), the FSx table gives the file system's own $/hour, and the two add up
    to the workload's cost lines."""
    assert main(["plan", "--config", "config/default.toml"]) == 0
    out = capsys.readouterr().out
    nodes = _table_row(out, "workload ", "pretraining")
    fsx = _table_row(out, "workload       sizing", "pretraining")
    plan = build_plan(load_profile(ROOT / "config" / "default.toml"), PRICES)
    node_line = next(c for c in plan.costs if c.item == "pretraining: p5.48xlarge")
    fsx_line = next(c for c in plan.costs if c.item.startswith("pretraining: FSx"))
    assert node_line.usd_per_hour is not None and fsx_line.usd_per_hour is not None
    assert nodes["nodes $/hour"] == f"${4 * 55.04:,.2f}" == f"${node_line.usd_per_hour:,.2f}"
    assert fsx["$/hour"] == f"${fsx_line.usd_per_hour:,.2f}"
    assert fsx["$/month"] == f"${fsx_line.usd_per_hour * 730:,.2f}"


@pytest.mark.parametrize("path", PROFILES, ids=[p.stem for p in PROFILES])
def test_no_shipped_profile_prints_n_a(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Every figure of `fmc plan` (with a training goal, so its cost line too) is a dollar
    amount or "no price" with the reason on a line of its own."""
    plan = build_plan(load_profile(path), PRICES)
    trained = [w.name for w in plan.workloads if w.name in {"pretraining", "post_training"}]
    goal = ["--params", "8B", "--tokens", "1T", "--goal-workload", trained[0]] if trained else []
    code = main(["plan", "--config", str(path.relative_to(ROOT)), *goal])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "n/a" not in out
    assert bool(trained) == ("  cost " in out)
    for message in plan.missing_prices:
        assert message in out


def test_a_goal_without_an_fsx_price_costs_the_nodes_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """pretraining-capacity-block (us-east-2) has no FSx figure: the goal's cost is the nodes'
    (16 x p5.48xlarge for the estimated wall-clock hours), and the line says what it leaves out."""
    goal_plan = [
        "plan",
        "--config",
        "config/pretraining-capacity-block.toml",
        "--params",
        "8B",
        "--tokens",
        "1T",
    ]
    assert main(goal_plan) == 0
    out = capsys.readouterr().out
    cost = next(line for line in out.splitlines() if line.startswith("  cost "))
    plan = build_plan(load_profile(ROOT / "config" / "pretraining-capacity-block.toml"), PRICES)
    days = re.search(r"= ([\d,.]+) days on", out)
    assert days is not None
    hours = float(days.group(1).replace(",", "")) * 24
    nodes = next(c for c in plan.costs if c.item == "pretraining: p5.48xlarge")
    assert nodes.usd_per_hour is not None
    match = re.search(r"\$([\d,.]+) for the nodes alone at \$([\d,.]+)/hour", cost)
    assert match is not None, cost
    assert float(match.group(2).replace(",", "")) == pytest.approx(nodes.usd_per_hour, abs=0.01)
    # The days are printed to one decimal: the cost agrees with them to that precision.
    assert float(match.group(1).replace(",", "")) == pytest.approx(
        hours * nodes.usd_per_hour, rel=0.005
    )
    assert "its file system has no price" in cost
    goal = next(w for w in plan.workloads if w.name == "pretraining").goal
    assert goal is None  # no goal without --params/--tokens: the JSON below carries it
    assert main([*goal_plan, "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    estimate = document["workloads"][0]["training_goal"]
    assert estimate["usd"] is None  # the total needs the missing FSx price
    assert estimate["nodes_usd"] == pytest.approx(float(match.group(1).replace(",", "")), abs=0.01)


def test_a_profile_with_every_workload_disabled_plans_the_platform_cost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The user turns every workload off: `fmc plan` still prices what the platform stack
    deploys, each charge on its own line, and names the platform's share of the total."""
    text = (ROOT / "config" / "default.toml").read_text(encoding="utf-8")
    for workload in ("pretraining", "post_training", "inference"):
        text = re.sub(
            rf"(\[{workload}\]\n(?:[^\[].*\n)*?)enabled = true", r"\1enabled = false", text, count=1
        )
    config = tmp_path / "off.toml"
    config.write_text(text, encoding="utf-8")
    plan = build_plan(load_profile(config), PRICES)
    assert plan.workloads == ()
    assert main(["plan", "--config", str(config)]) == 0
    out = capsys.readouterr().out
    assert "no workload is enabled" in out
    items = {c.item for c in plan.costs}
    assert {"NAT gateways", "Managed Grafana workspace (1 editor)"} <= items
    assert any(i.startswith("interface VPC endpoints (") for i in items)
    assert plan.usd_per_hour > 0
    assert plan.platform_usd_per_hour == pytest.approx(plan.usd_per_hour)
    assert f"of which platform: ${plan.platform_usd_per_hour:,.2f}/hour" in out


def test_the_platform_share_leaves_out_every_workload_line() -> None:
    plan = build_plan(load_profile(ROOT / "config" / "default.toml"), PRICES)
    workload_lines = [c for c in plan.costs if c.owner in {w.name for w in plan.workloads}]
    assert len(workload_lines) == 6  # 4 node rows, 2 file systems
    assert plan.platform_usd_per_hour == pytest.approx(
        plan.usd_per_hour - sum(c.usd_per_hour or 0.0 for c in workload_lines)
    )
    assert plan.to_json()["totals"]["platform_usd_per_hour"] == plan.platform_usd_per_hour
