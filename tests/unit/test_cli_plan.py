"""fmc plan: figures checked against hand arithmetic and against the floor-1 functions the
constructs call, the --json schema, price overrides and usage errors. No AWS, no CDK."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.cli.goal import parse_quantity
from fm_constructs.cli.plan import (
    build_plan,
    efa_layout_for,
    private_subnet_prefix,
)
from fm_constructs.cli.pricing import load_prices
from fm_constructs.config import load_profile
from fm_constructs.config.sizing import fsx_sizing_request
from fm_constructs.planning.efa_layout import (
    EfaLayout,
    efa_interface_count,
    efa_interface_layout,
)
from fm_constructs.planning.fsx_sizing import PERSISTENT_2_PRICE_USD_PER_GB_MONTH, size_fsx_lustre
from fm_constructs.planning.ip_budget import node_addressing
from tests.unit.cli_stubs import DEFAULT_PROFILE, PLATFORM, REPO, run, write_profile


@pytest.fixture(scope="module")
def default_json() -> dict:  # type: ignore[type-arg]
    result = run("plan", "--config", DEFAULT_PROFILE, "--json", "--params", "7B", "--tokens", "1T")
    assert result.code == 0, result.err
    return json.loads(result.out)  # type: ignore[no-any-return]


def _workload(doc: dict, name: str) -> dict:  # type: ignore[type-arg]
    (w,) = (w for w in doc["workloads"] if w["name"] == name)
    return w  # type: ignore[no-any-return]


def test_default_pretraining_cluster_figures(default_json: dict) -> None:  # type: ignore[type-arg]
    w = _workload(default_json, "pretraining")
    # 4 x p5.48xlarge, 8 H100 of 80 GiB each: 32 GPUs, 4 * 8 * 80 = 2560 GiB.
    assert (w["nodes"], w["accelerators"], w["accelerator"]) == (4, 32, "H100")
    assert w["total_accelerator_memory_gib"] == 2560
    # p5.48xlarge: NetworkPerformance "3200 Gigabit" per node; 4 nodes = 12800 Gbps.
    assert w["efa_interfaces_per_node"] == 32
    assert w["efa_bandwidth_gbps_per_node"] == 3200
    assert w["efa_bandwidth_gbps_total"] == 12800
    # efa-only layout: card 0 holds 2 interfaces (primary ENA + efa-only 0/1), so the VPC CNI
    # has 1 ENI of 50 addresses: node IP + 49 pod IPs = 50 per node, 4 nodes -> 200.
    assert (w["ip_addresses_per_node"], w["ip_addresses"]) == (50, 200)
    assert (w["kubelet_max_pods"], w["pod_ip_capacity"]) == (2 * 49 + 2, 49)
    # g6e.48xlarge: "400 Gigabit" (its four cards each repeat 400; not 1,600).
    rollout = _workload(default_json, "post_training.rollout")
    assert rollout["efa_bandwidth_gbps_per_node"] == 400
    # card 0 max 10 ENIs, one taken by efa-only: 9 ENIs x 50 = 450 addresses per node.
    assert rollout["ip_addresses_per_node"] == 450
    # inference autoscales to max_instance_count = 4: counted at 4, not at 2.
    inference = _workload(default_json, "inference")
    assert (inference["max_nodes"], inference["ip_addresses"]) == (4, 4 * 450)
    # all workloads share the /18 of us-east-1a: 16384 - 5 = 16379 usable;
    # nodes 4*50 + 2*150 (p5en: 3 ENIs) + 2*450 + 4*450 = 3200, plus the other addresses.
    subnet = default_json["subnet"]
    other = sum(o["addresses"] for o in subnet["other"])
    assert (subnet["prefix"], subnet["usable"], subnet["required"]) == (18, 16379, 3200 + other)
    assert {"what": "interface endpoints", "addresses": 12} in subnet["other"]


def test_default_pretraining_fsx_is_the_hand_computed_sizing(default_json: dict) -> None:  # type: ignore[type-arg]
    s = _workload(default_json, "pretraining")["storage"]
    # checkpoint = 70e9 params * 16 B / 2**30 = 1043.08 GiB (1,120,000 MB)
    assert s["checkpoint_size_gib"] == pytest.approx(70e9 * 16 / 2**30)
    # space = (2000 + (3 + 1) * 1043.08) * 1.2 = 7407 GiB -> next valid size 9600 (4 x 2400)
    # write: 1,120,000 MB / 300 s = 3733 MB/s; at 500 MB/s/TiB 9600 GiB gives 4800 MB/s
    # price: 9600 * 0.34 = 3264 $/month (cheaper than 16800 GiB at 250: 3528)
    assert (s["storage_capacity_gib"], s["throughput_mb_s_per_tib"]) == (9600, 500)
    assert s["aggregate_throughput_mb_s"] == 4800
    # write time: 1,120,000 MB / 4800 MB/s = 233.3 s
    assert s["checkpoint_write_seconds"] == pytest.approx(1_120_000 / 4800)
    assert s["usd_per_month"] == pytest.approx(9600 * 0.34)


def test_default_costs_are_list_price_times_nodes_plus_storage(default_json: dict) -> None:  # type: ignore[type-arg]
    w = _workload(default_json, "pretraining")
    # 4 * $55.04 = $220.16/h compute; 9600 GiB * $0.34 / 730 h = $4.4712/h storage
    assert w["cost"]["compute_usd_per_hour"] == pytest.approx(220.16)
    assert w["cost"]["storage_usd_per_hour"] == pytest.approx(3264 / 730)
    assert w["cost"]["usd_per_hour"] == pytest.approx(220.16 + 3264 / 730)
    inference = _workload(default_json, "inference")
    # inference has no FSx by default: 2 * $30.13118
    assert inference["storage"] is None
    assert inference["cost"]["usd_per_hour"] == pytest.approx(2 * 30.13118)
    # post_training: 2 * 63.296 + 4800 GiB * 0.21 / 730
    post = _workload(default_json, "post_training")
    assert post["cost"]["usd_per_hour"] == pytest.approx(2 * 63.296 + 4800 * 0.21 / 730)
    # the RL rollout group of post_training: 2 x g6e.48xlarge on demand, no storage
    rollout = _workload(default_json, "post_training.rollout")
    assert rollout["cost"]["usd_per_hour"] == pytest.approx(2 * 30.13118)
    workloads = sum(
        _workload(default_json, n)["cost"]["usd_per_hour"]
        for n in ("pretraining", "post_training", "post_training.rollout", "inference")
    )
    # platform, us-east-1: 2 NAT x $0.045, 12 endpoints x 2 zones x $0.01, one shared EKS control
    # plane x $0.10, 2 system nodes x m7i.xlarge $0.2016, Grafana $9 / 730 h; Prometheus by usage
    platform = 2 * 0.045 + 24 * 0.01 + 1 * 0.10 + 2 * 0.2016 + 9 / 730
    assert default_json["totals"]["usd_per_hour"] == pytest.approx(workloads + platform)
    assert default_json["totals"]["partial"] is False
    assert default_json["totals"]["missing_prices"] == []


def test_training_goal_hand_computed(default_json: dict) -> None:  # type: ignore[type-arg]
    g = _workload(default_json, "pretraining")["training_goal"]
    # 6 * 7e9 * 1e12 = 4.2e22 FLOPs
    assert g["flops"] == pytest.approx(4.2e22)
    # per GPU: 989e12 * 0.4 = 3.956e14 FLOP/s -> 4.2e22 / 3.956e14 / 3600 = 29,491 GPU-hours
    assert g["accelerator_hours"] == pytest.approx(4.2e22 / 3.956e14 / 3600)
    assert g["accelerator_hours"] == pytest.approx(29_491.07, rel=1e-5)
    # 32 GPUs: 921.6 h = 38.40 days
    assert g["wall_clock_days"] == pytest.approx(29_491.07 / 32 / 24, rel=1e-5)
    # cost: 921.6 h * (220.16 + 4.4712) $/h
    assert g["usd"] == pytest.approx(29_491.07 / 32 * (220.16 + 3264 / 730), rel=1e-5)


def test_json_schema(default_json: dict) -> None:  # type: ignore[type-arg]
    assert default_json["schema"] == "fmc.plan/v1"
    assert set(default_json) == {
        "schema",
        "profile",
        "region",
        "availability_zone",
        "prices",
        "workloads",
        "subnet",
        "costs",
        "totals",
        "problems",
        "clusters",
        "warnings",
        "limits",
    }
    assert set(default_json["prices"]) == {"as_of", "source"}
    assert set(default_json["subnet"]) >= {"prefix", "usable", "required", "free", "fits"}
    w = default_json["workloads"][0]
    assert set(w) >= {
        "name",
        "instance_type",
        "nodes",
        "accelerators",
        "total_accelerator_memory_gib",
        "efa_bandwidth_gbps_total",
        "ip_addresses",
        "cost",
        "storage",
        "training_goal",
        "notes",
    }
    assert set(w["cost"]) == {
        "instance_usd_per_hour",
        "compute_usd_per_hour",
        "storage_usd_per_hour",
        "usd_per_hour",
        "basis",
    }
    assert default_json["problems"] == []
    # No admin role in the shipped profile: flagged, as the loader and preflight flag it.
    assert any("[FM203]" in w for w in default_json["warnings"])


def test_plan_agrees_with_the_floor_1_functions() -> None:
    """Plan and template never disagree: every figure is what the construct-side functions
    return for the same profile."""
    profile = load_profile(DEFAULT_PROFILE)
    plan = build_plan(profile, load_prices())
    rows = {planned.name: planned for planned in plan.workloads}
    rollout = profile.post_training.rollout
    assert rows["post_training.rollout"].ip_addresses == rollout.instance_count * (
        node_addressing(
            get_instance_type(rollout.instance_type), EfaLayout.EFA_ONLY, vpc_cni=True
        ).per_node
    )
    for workload in profile.enabled_workloads:
        planned = rows[workload.name]
        spec = get_instance_type(workload.instance_type)
        layout = efa_layout_for(workload)
        assert planned.efa_interfaces_per_node == efa_interface_count(
            efa_interface_layout(spec, layout)
        )
        assert planned.efa_bandwidth_gbps_per_node == spec.network_performance_gbps
        per_node = node_addressing(spec, layout, vpc_cni=True).per_node
        nodes = workload.largest_size
        assert planned.ip_addresses == nodes * per_node
        request = fsx_sizing_request(workload.storage)
        if request is not None:
            sized = size_fsx_lustre(request)
            assert planned.storage is not None
            assert planned.storage.storage_capacity_gib == sized.storage_capacity_gib
            assert planned.storage.throughput_mb_s_per_tib == sized.throughput_mb_s_per_tib
            assert planned.storage.checkpoint_write_seconds == pytest.approx(
                sized.checkpoint_write_seconds
            )
    assert plan.subnet.required == sum(w.ip_addresses for w in plan.workloads) + sum(
        n for _, n in plan.subnet.fixed
    )
    assert private_subnet_prefix(profile.platform.vpc_cidr) == plan.subnet.prefix


def test_builtin_fsx_prices_match_the_sizing_prices() -> None:
    """The CLI's us-east-1 FSx prices are the ones sizing chooses with, so cost and choice agree."""
    prices = load_prices()
    for tier, price in PERSISTENT_2_PRICE_USD_PER_GB_MONTH.items():
        assert prices.fsx_usd_per_gb_month("us-east-1", "PERSISTENT_2", tier) == price
    assert prices.as_of and prices.source


def test_ip_budget_shortfall_is_a_profile_error(tmp_path: Path) -> None:
    # /20 VPC -> /22 node subnet: 1024 - 5 = 1019 usable. By the VPC CNI's arithmetic a p5 node
    # with the efa-only layout takes 50 addresses: 4 * 50 = 200 plus 12 endpoints, 8 EKS
    # control plane, 240 system nodes, 1 scraper and 3 FSx (1,200 GiB) = 464: fits. With 300
    # pods per node wanted the CNI still has only 49 addresses: the count stays 50 per node.
    config = write_profile(
        tmp_path,
        PLATFORM.replace("availability_zones", 'vpc_cidr = "10.0.0.0/20"\navailability_zones')
        + """
[pretraining]
enabled = true
instance_type = "p5.48xlarge"
instance_count = 4
""",
    )
    doc = json.loads(run("plan", "--config", config, "--json").out)
    expected = {"prefix": 22, "usable": 1019, "required": 464, "fits": True}
    assert doc["subnet"] | expected == doc["subnet"]
    capped = json.loads(run("plan", "--config", config, "--json", "--pod-ips-per-node", "300").out)
    assert capped["subnet"]["required"] == 464
    # 20 nodes: 20 * 50 + 264 = 1264 > 1019, short by 245.
    big = write_profile(
        tmp_path,
        PLATFORM.replace("availability_zones", 'vpc_cidr = "10.0.0.0/20"\navailability_zones')
        + """
[pretraining]
enabled = true
instance_type = "p5.48xlarge"
instance_count = 20
""",
    )
    result = run("plan", "--config", big, "--json")
    assert result.code == 2  # the profile does not load: the same line as cdk synth
    assert "platform.vpc_cidr: the private subnet /22" in result.err and big in result.err
    assert "short by 245" in result.err and "pretraining 20 x 50 = 1,000" in result.err
    assert "give platform.vpc_cidr a /19" in result.err and result.err.rstrip().endswith("[FM606]")


def test_unknown_peak_flops_is_said_not_guessed(tmp_path: Path) -> None:
    config = write_profile(
        tmp_path,
        PLATFORM
        + """
[inference]
enabled = true
instance_type = "g5.48xlarge"
instance_count = 1
""",
    )
    result = run(
        "plan",
        "--config",
        config,
        "--params",
        "1B",
        "--tokens",
        "1B",
        "--goal-workload",
        "inference",
    )
    assert result.code == 0, result.err
    assert "no peak FLOPS figure for A10G" in result.out


def test_price_override_file(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps(
            {
                "as_of": "2030-01-01",
                "source": "negotiated",
                "regions": {"us-east-1": {"on_demand_usd_per_hour": {"g6e.48xlarge": 10.0}}},
            }
        )
    )
    result = run("plan", "--config", DEFAULT_PROFILE, "--json", "--prices", str(prices))
    doc = json.loads(result.out)
    assert doc["prices"] == {"as_of": "2030-01-01", "source": "negotiated"}
    assert _workload(doc, "inference")["cost"]["usd_per_hour"] == pytest.approx(20.0)
    # untouched entries keep their built-in value
    assert _workload(doc, "pretraining")["cost"]["instance_usd_per_hour"] == 55.04


def test_text_output_names_every_section() -> None:
    result = run("plan", "--config", DEFAULT_PROFILE, "--params", "70B", "--tokens", "15T")
    assert result.code == 0
    for text in (
        "p5.48xlarge",
        "32 x H100",
        "FSx for Lustre",
        "IP budget",
        "training goal",
        "list prices as of",
    ):
        assert text in result.out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "--params", "70B"], "give --params and --tokens together"),
        (["plan", "--params", "seventy", "--tokens", "1T"], "must be a number"),
        (["plan", "--params", "70", "--tokens", "15T"], "'70' is 70 parameters"),
        (["plan", "--params", "70", "--tokens", "15T"], "write 70B for 70 billion"),
        (["plan", "--params", "70B", "--tokens", "15"], "'15' is 15 tokens"),
        (
            ["plan", "--mfu", "1.5", "--params", "1B", "--tokens", "1B"],
            "must be above 0 and at most 1",
        ),
        (["plan", "--config", "/nonexistent.toml"], "cannot read profile"),
        (["plan", "--prices", "/nonexistent.json"], "--prices: cannot read"),
        (["bogus"], "invalid choice"),
    ],
)
def test_usage_errors_exit_2_without_traceback(argv: list[str], message: str) -> None:
    if "--config" not in argv:
        argv = [*argv, "--config", DEFAULT_PROFILE] if argv[0] == "plan" else argv
    result = run(*argv)
    assert result.code == 2
    assert message in result.err
    assert "Traceback" not in result.err


def test_a_goal_from_the_command_line_uses_the_profiles_target_mfu(tmp_path: Path) -> None:
    """--params/--tokens without --mfu take the goal workload's target_mfu, as --help says."""
    text = (REPO / DEFAULT_PROFILE).read_text(encoding="utf-8")
    assert text.count("target_mfu = 0.4") == 1
    config = tmp_path / "mfu.toml"
    config.write_text(text.replace("target_mfu = 0.4", "target_mfu = 0.5"), encoding="utf-8")
    result = run("plan", "--config", str(config), "--json", "--params", "7B", "--tokens", "1T")
    assert result.code == 0, result.err
    assert _workload(json.loads(result.out), "pretraining")["training_goal"]["mfu"] == 0.5


def test_a_tiny_goal_shows_significant_digits_not_zero() -> None:
    result = run("plan", "--config", DEFAULT_PROFILE, "--params", "1M", "--tokens", "1M")
    assert result.code == 0, result.err
    time_line = next(line for line in result.out.splitlines() if line.startswith("  time "))
    assert " 0 accelerator-hours" not in time_line
    assert "e-06 accelerator-hours" in time_line


def test_the_pod_ip_note_is_printed_once_under_the_ip_budget() -> None:
    result = run("plan", "--config", DEFAULT_PROFILE)
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    notes = [i for i, line in enumerate(lines) if "stay ContainerCreating" in line]
    assert len(notes) == 1
    groups = "pretraining, post_training, post_training.rollout, inference"
    assert lines[notes[0]].startswith(f"  {groups}: kubelet admits more pods")
    budget = next(i for i, line in enumerate(lines) if line.startswith("IP budget:"))
    assert budget < notes[0] < next(i for i, line in enumerate(lines) if line.startswith("cost by"))


def test_help_documents_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--help").code == 0
    out = capsys.readouterr().out
    assert "exit codes:" in out and "3  AWS error" in out


def test_parse_quantity() -> None:
    assert parse_quantity("70B") == 70e9
    assert parse_quantity("15T") == 15e12
    assert parse_quantity("1.5e12") == 1.5e12
    assert parse_quantity("7g") == 7e9
    with pytest.raises(ValueError, match="greater than 0"):
        parse_quantity("0")


def test_module_entry_point_smoke() -> None:
    """`python -m fm_constructs.cli plan --json` in a fresh interpreter, without aws_cdk."""
    code = (
        "import sys, runpy; sys.argv = ['fmc', 'plan', '--json', '--config', sys.argv[1]];"
        "\ntry:\n    runpy.run_module('fm_constructs.cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    assert 'aws_cdk' not in sys.modules, 'fmc imported aws_cdk'\n"
        "    raise"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, DEFAULT_PROFILE],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["schema"] == "fmc.plan/v1"


def test_plan_takes_the_training_goal_from_the_profile() -> None:
    # 70B params x 2T tokens x 6 = 8.4e23 FLOPs, the default profile's [pretraining.training_goal]
    default = Path(__file__).resolve().parents[2] / "config" / "default.toml"
    result = run("plan", "--config", str(default), "--json")
    assert result.code == 0
    workloads = {w["name"]: w for w in json.loads(result.out)["workloads"]}
    goal = workloads["pretraining"]["training_goal"]
    assert goal["flops"] == pytest.approx(8.4e23)
    assert workloads["post_training"]["training_goal"] is None


def test_rollout_group_is_planned_as_its_own_row() -> None:
    default = Path(__file__).resolve().parents[2] / "config" / "default.toml"
    result = run("plan", "--config", str(default), "--json")
    rows = {w["name"]: w for w in json.loads(result.out)["workloads"]}
    rollout = rows["post_training.rollout"]
    # [post_training.rollout]: 2 x g6e.48xlarge, 8 L40S each, on demand, no FSx of its own
    assert (rollout["instance_type"], rollout["nodes"], rollout["accelerators"]) == (
        "g6e.48xlarge",
        2,
        16,
    )
    assert rollout["storage"] is None


def test_plan_shows_the_shared_cluster_and_queues_the_stacks_build(default_json: dict) -> None:  # type: ignore[type-arg]
    """The same mapping (config.options) feeds the plan and the stacks."""
    (cluster,) = default_json["clusters"]
    assert cluster["stack"] == "fm-cluster" and not cluster["dedicated"]
    assert cluster["workloads"] == ["pretraining", "post_training", "inference"]
    queues = {q["workload"]: q for q in cluster["queues"]}
    assert queues["pretraining"]["local_queue"] == "pretraining-jobs"
    (pool,) = queues["pretraining"]["pools"]
    assert pool["flavor"] == "pretraining-gpu"
    assert pool["quota"]["nvidia.com/gpu"] == 32
    assert [p["flavor"] for p in queues["post_training"]["pools"]] == [
        "post-training-gpu",
        "post-training-rollout",
    ]


def test_plan_says_how_long_a_node_roll_takes() -> None:
    """1,024 reserved p5en nodes in three groups, terminate first, 20 % of a group at once:
    floor(342 x 0.2) = 68 nodes a batch, ceil(342 / 68) = 6 batches of 13 minutes."""
    config = str(REPO / "config" / "pretraining-1024.toml")
    result = run("plan", "--config", config)
    assert result.code == 0, result.err
    assert (
        "  pretraining: 3 groups of 342/341 nodes, MINIMAL (terminate first), 68 at once "
        "(20 %): 6 batches x 13 min = about 1.3 h"
    ) in result.out
    (w,) = json.loads(run("plan", "--config", config, "--json").out)["workloads"]
    assert w["node_roll"] == {
        "update_strategy": "MINIMAL",
        "max_unavailable": None,
        "max_unavailable_percentage": 20,
        "node_groups": [342, 341, 341],
        "nodes_at_once": [68, 68, 68],
        "batches": 6,
        "minutes": 78.0,
    }
    on_demand = json.loads(run("plan", "--config", DEFAULT_PROFILE, "--json").out)
    roll = on_demand["workloads"][0]["node_roll"]
    assert (roll["update_strategy"], roll["max_unavailable"], roll["batches"]) == ("DEFAULT", 1, 4)


def test_pcs_plan_names_the_cluster_size_and_the_one_at_a_time_limit() -> None:
    from fm_constructs.cli.plan import pcs_note

    profile = str(Path(__file__).resolve().parents[2] / "config" / "pcs.toml")
    result = run("plan", "--config", profile)
    assert result.code == 0, result.err
    assert "PCS cluster size SMALL (up to 32 nodes and 256 jobs; 4 accelerated + 1 login)" in (
        result.out
    )
    assert "one cluster per account and region at a time" in result.out
    assert "size MEDIUM (up to 512 nodes" in pcs_note(32)  # 32 + the login node
    assert "more nodes than a LARGE PCS cluster runs" in pcs_note(2048)
