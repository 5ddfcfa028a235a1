"""The nccl-tests log judge and the expected-bandwidth data: every log shape a launcher prints,
every failure the judge must name, and the sources behind the figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.cli.nccl_log import contradictions, instance_types_in_log, judge, parse_log
from fm_constructs.planning import nccl_bandwidth as bw
from tests.unit.nccl_logs import busbw_curve, efa_info, nccl_log, socket_info

P5_HOSTS = ("ip-10-1-0-11", "ip-10-1-0-12")


# ----------------------------------------------------------------------------- expected data


def test_every_reference_figure_names_a_public_source_and_a_known_type() -> None:
    for figure in bw.REFERENCE_FIGURES:
        assert figure.source.startswith("https://"), figure
        assert get_instance_type(figure.instance_type).efa_supported
        assert figure.nodes >= 2 and figure.busbw_gb_s > 0


def test_p5_two_nodes_uses_the_figure_at_the_largest_size_the_run_reached() -> None:
    assert bw.expectation_for("p5.48xlarge", 2, 16 << 30).busbw_gb_s == 487.09
    assert bw.expectation_for("p5.48xlarge", 2, 4 << 30).busbw_gb_s == 443.72
    assert bw.expectation_for("ml.p5.48xlarge", 2, 16 << 30).reference is not None


def test_a_type_without_a_figure_is_judged_on_the_stated_model_and_says_so() -> None:
    expectation = bw.expectation_for("p5en.48xlarge", 2, 16 << 30)
    assert expectation.reference is None
    # 16 EFA cards x 200 Gbps = 3200 Gbps = 400 GB/s; 89 % of it up to 16 nodes.
    assert expectation.busbw_gb_s == pytest.approx(400.0 * 0.89)
    assert "no reference figure" in expectation.rule and "line rate" in expectation.rule
    assert "89%" in expectation.rule
    # A node count without a figure uses the model too.
    assert bw.expectation_for("p5.48xlarge", 6, 16 << 30).reference is None


@pytest.mark.parametrize(
    ("nodes", "share"), [(2, 0.89), (4, 0.89), (16, 0.89), (32, 0.80), (64, 0.71), (4096, 0.5)]
)
def test_the_model_falls_with_node_count_beyond_sixteen(nodes: int, share: float) -> None:
    assert bw.ring_efficiency(nodes) == pytest.approx(share)


def test_the_model_passes_every_published_healthy_figure() -> None:
    """Where a type and node count have a figure the figure is used; the model must still not
    fail any of them, so a node count between figures is judged on a consistent scale."""
    for figure in bw.REFERENCE_FIGURES:
        model = bw.model_expectation(figure.instance_type, figure.nodes)
        assert figure.busbw_gb_s >= model.threshold_gb_s, figure


# ----------------------------------------------------------------------------- parsing


@pytest.mark.parametrize("prefix", ["mpirun", "srun", "none"])
def test_every_launcher_prefix_parses_to_the_same_rows(prefix: str) -> None:
    log = parse_log(nccl_log(prefix=prefix, info=efa_info(P5_HOSTS[0], 32)))
    assert len(log.rows) == 32  # 8 B ... 16 GiB
    assert log.largest is not None and log.largest.size_bytes == 16 << 30
    assert log.avg_busbw_gb_s is not None and log.out_of_bounds == 0
    assert log.hosts == {P5_HOSTS[0]: 8, P5_HOSTS[1]: 8}
    assert log.efa_nics == 32 and log.ofi_transport and not log.socket_transport


def test_the_real_awsome_excerpt_shape_parses() -> None:
    """Rows exactly as the AWS sample README shows them for 2 x p5 (mpirun --tag-output)."""
    text = "\n".join(
        [
            "[1,0]<stdout>:#       size         count      type   redop    root     time   "
            "algbw   busbw #wrong     time   algbw   busbw #wrong",
            "[1,0]<stdout>:           0             0     float     sum      -1    15.51    0.00"
            "    0.00      0    15.52    0.00    0.00      0",
            "[1,0]<stdout>:  2147483648     536870912     float     sum      -1   9197.5  233.49"
            "  437.79      0   9195.2  233.54  437.89      0",
            "[1,0]<stdout>:# Out of bounds values : 0 OK",
            "[1,0]<stdout>:# Avg bus bandwidth    : 52.9753",
        ]
    )
    log = parse_log(text)
    assert [r.size_bytes for r in log.rows] == [0, 2 << 30]
    assert log.largest is not None and log.largest.busbw_gb_s == 437.79
    assert log.avg_busbw_gb_s == 52.9753


# ----------------------------------------------------------------------------- verdicts


def test_a_healthy_p5_run_passes_against_the_sourced_figure() -> None:
    verdict = judge(parse_log(nccl_log(info=efa_info(P5_HOSTS[0], 32))), "p5.48xlarge", 2)
    assert verdict.passed, verdict.reason
    assert verdict.expectation is not None and verdict.expectation.reference is not None
    assert verdict.measured_gb_s == pytest.approx(478.13, abs=0.01)


def test_a_run_without_info_lines_still_passes_on_bandwidth() -> None:
    verdict = judge(parse_log(nccl_log(prefix="srun")), "p5.48xlarge", 2)
    assert verdict.passed


def test_tcp_fallback_fails_and_names_the_socket_transport() -> None:
    text = nccl_log(info=socket_info(P5_HOSTS[0]), busbw=busbw_curve(11.0))
    verdict = judge(parse_log(text), "p5.48xlarge", 2)
    assert not verdict.passed
    assert verdict.measured_gb_s is not None and verdict.measured_gb_s < 12
    assert any(c.startswith("TCP fallback") for c in verdict.causes)


def test_missing_efa_devices_fail_and_say_how_many_were_found() -> None:
    text = nccl_log(info=efa_info(P5_HOSTS[0], 4), busbw=busbw_curve(55.0))
    verdict = judge(parse_log(text), "p5.48xlarge", 2)
    assert not verdict.passed
    assert any("found 4 EFA NICs" in c and "has 32" in c for c in verdict.causes)


def test_no_efa_provider_is_named() -> None:
    info = [
        "ip-10-1-0-11:2841:2841 [0] NCCL WARN NET/OFI No eligible providers were found",
        *socket_info(P5_HOSTS[0]),
    ]
    verdict = judge(parse_log(nccl_log(info=info, busbw=busbw_curve(9.0))), "p5.48xlarge", 2)
    assert not verdict.passed
    assert verdict.causes[0].startswith("no EFA provider")


def test_low_bandwidth_over_efa_points_at_one_slow_node() -> None:
    text = nccl_log(info=efa_info(P5_HOSTS[0], 32), busbw=busbw_curve(300.0))
    verdict = judge(parse_log(text), "p5.48xlarge", 2)
    assert not verdict.passed
    assert any(c.startswith("one slow node") for c in verdict.causes)
    assert "below" in verdict.reason and "487.09" in verdict.reason


def test_low_bandwidth_without_info_lines_asks_for_nccl_debug_info() -> None:
    verdict = judge(parse_log(nccl_log(busbw=busbw_curve(100.0))), "p5.48xlarge", 2)
    assert not verdict.passed
    assert any("NCCL_DEBUG=INFO" in c for c in verdict.causes)


def test_wrong_results_fail_whatever_the_bandwidth() -> None:
    verdict = judge(parse_log(nccl_log(wrong_at=1 << 20)), "p5.48xlarge", 2)
    assert not verdict.passed
    assert "#wrong > 0" in verdict.reason and "1048576" in verdict.reason


def test_out_of_bounds_values_fail() -> None:
    verdict = judge(parse_log(nccl_log(out_of_bounds=7)), "p5.48xlarge", 2)
    assert not verdict.passed
    assert "7 out-of-bounds values" in verdict.reason


def test_a_truncated_log_fails_clearly() -> None:
    verdict = judge(parse_log(nccl_log(truncate_after=20)), "p5.48xlarge", 2)
    assert not verdict.passed
    assert verdict.reason.startswith("truncated log")


def test_a_log_without_result_rows_fails_clearly() -> None:
    text = "[1,0]<stdout>:x:1:1 [0] NCCL WARN NET/OFI Unable to find a provider\n"
    verdict = judge(parse_log(text), "p5.48xlarge", 2)
    assert not verdict.passed
    assert "no all_reduce_perf result rows" in verdict.reason
    assert verdict.causes


def test_a_run_that_stopped_below_the_reference_size_asks_for_larger_messages() -> None:
    verdict = judge(parse_log(nccl_log(max_bytes=1 << 30)), "p5.48xlarge", 2)
    assert not verdict.passed
    assert "rerun with -e 2048M" in verdict.reason


def test_line_rate_rule_on_a_type_without_a_figure() -> None:
    text = nccl_log(gpu_name="NVIDIA H200", busbw=busbw_curve(410.0))
    verdict = judge(parse_log(text), "p5en.48xlarge", 2)
    assert verdict.passed
    assert verdict.expectation is not None and verdict.expectation.reference is None
    failed = judge(parse_log(nccl_log(busbw=busbw_curve(300.0))), "p5en.48xlarge", 2)
    assert not failed.passed


def test_single_node_checks_correctness_only_and_says_efa_was_not_measured() -> None:
    text = nccl_log(hosts=("ip-10-1-0-11",), busbw=busbw_curve(360.0))
    verdict = judge(parse_log(text), "p5.48xlarge", 1)
    assert verdict.passed and "EFA was not" in verdict.reason


def test_a_host_count_different_from_nodes_is_reported() -> None:
    text = nccl_log(hosts=("a", "b"), busbw=busbw_curve(100.0))
    verdict = judge(parse_log(text), "p5.48xlarge", 4)
    assert any("spanned 2 host(s), not 4" in c for c in verdict.causes)


# ------------------------------------------------- published runs and each failure kind

#: The GPU names nccl-tests prints (from the CUDA device name) for each type.
GPU_NAMES = {
    "p4de.24xlarge": "NVIDIA A100-SXM4-80GB",
    "p5.48xlarge": "NVIDIA H100 80GB HBM3",
    "p5en.48xlarge": "NVIDIA H200",
    "p6-b200.48xlarge": "NVIDIA B200",
    "p6-b300.48xlarge": "NVIDIA B300 SXM6 AC",
}
NODE_COUNTS = (2, 4, 8, 16, 32)
TYPES = ("p5.48xlarge", "p5en.48xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge")


def _hosts(nodes: int) -> tuple[str, ...]:
    return tuple(f"ip-10-1-{i // 200}-{10 + i % 200}" for i in range(nodes))


def _shaped(busbw_gb_s: float, at_bytes: int) -> Callable[[int], float]:
    """A curve whose bus bandwidth at ``at_bytes`` is ``busbw_gb_s``."""
    return busbw_curve(busbw_gb_s * (at_bytes + (64 << 20)) / at_bytes)


def _run(instance_type: str, nodes: int, busbw: float, at: int = 16 << 30, **kw: Any) -> str:
    spec = get_instance_type(instance_type)
    kw.setdefault("info", efa_info("ip-10-1-0-10", spec.max_efa_interfaces))
    return nccl_log(
        hosts=_hosts(nodes),
        gpu_name=GPU_NAMES[instance_type],
        max_bytes=at,
        busbw=_shaped(busbw, at),
        **kw,
    )


@pytest.mark.parametrize(
    "figure",
    bw.REFERENCE_FIGURES,
    ids=[f"{f.nodes}x{f.instance_type}@{f.message_bytes >> 30}G" for f in bw.REFERENCE_FIGURES],
)
def test_a_log_shaped_like_each_published_figure_passes(figure: bw.ReferenceFigure) -> None:
    text = _run(figure.instance_type, figure.nodes, figure.busbw_gb_s, figure.message_bytes)
    verdict = judge(parse_log(text), figure.instance_type, figure.nodes)
    assert verdict.passed, verdict.reason
    assert verdict.expectation is not None and verdict.expectation.reference == figure


def test_the_published_untuned_4_node_p6_b200_run_passes_on_the_model() -> None:
    """377 GB/s on 4 x p6-b200 (awsome-distributed-ai aws-pcs tests/compute-test.md, message
    size not stated there: no reference figure, the model judges it)."""
    verdict = judge(parse_log(_run("p6-b200.48xlarge", 4, 377.0)), "p6-b200.48xlarge", 4)
    assert verdict.passed, verdict.reason
    assert verdict.expectation is not None and verdict.expectation.reference is None


@pytest.mark.parametrize("nodes", NODE_COUNTS)
@pytest.mark.parametrize("instance_type", TYPES)
def test_each_failure_kind_fails_with_its_cause(instance_type: str, nodes: int) -> None:
    healthy = bw.expectation_for(instance_type, nodes, 16 << 30).busbw_gb_s
    assert judge(parse_log(_run(instance_type, nodes, healthy)), instance_type, nodes).passed

    # One node's links at half rate: the ring runs at the slowest member's pace.
    half = judge(parse_log(_run(instance_type, nodes, healthy / 2)), instance_type, nodes)
    assert not half.passed
    assert any(c.startswith("one slow node or link") for c in half.causes), half.causes

    # TCP fallback: NCCL's Socket transport over the ENA interface.
    tcp_log = _run(instance_type, nodes, 11.0, info=socket_info("ip-10-1-0-10"))
    tcp = judge(parse_log(tcp_log), instance_type, nodes)
    assert not tcp.passed and any(c.startswith("TCP fallback") for c in tcp.causes)

    wrong = judge(
        parse_log(_run(instance_type, nodes, healthy, wrong_at=1 << 20)), instance_type, nodes
    )
    assert not wrong.passed and "#wrong > 0" in wrong.reason and "DCGM" in wrong.reason

    cut = judge(
        parse_log(_run(instance_type, nodes, healthy, truncate_after=25)), instance_type, nodes
    )
    assert not cut.passed and cut.reason.startswith("truncated log")
    assert "time limit, or a rank crashed" in cut.reason


# ---------------------------------------------------------- the run's shape, from the log


@pytest.mark.parametrize("instance_type", sorted(GPU_NAMES))
def test_the_log_names_the_node_count_and_the_gpu_type(instance_type: str) -> None:
    log = parse_log(_run(instance_type, 4, 300.0))
    assert len(log.hosts) == 4
    assert instance_types_in_log(log) == (
        ("p5e.48xlarge", "p5en.48xlarge") if instance_type == "p5en.48xlarge" else (instance_type,)
    )
    assert contradictions(log, instance_type, 4) == ()


def test_a_log_that_contradicts_the_shape_is_named() -> None:
    log = parse_log(_run("p5.48xlarge", 4, 300.0))
    found = contradictions(log, "p6-b200.48xlarge", 2)
    assert any("on 4 host(s), not 2" in f for f in found)
    assert any("'NVIDIA H100 80GB HBM3', a p6-b200.48xlarge has B200" in f for f in found)
    half_gpus = parse_log(nccl_log(hosts=_hosts(2), gpus=4))
    assert any("4 rank(s) per host" in f for f in contradictions(half_gpus, "p5.48xlarge", 2))
