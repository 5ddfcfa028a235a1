"""The nccl-tests log judge and the expected-bandwidth data: every log shape a launcher prints,
every failure the judge must name, and the sources behind the figures."""

from __future__ import annotations

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.cli.nccl_log import judge, parse_log
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


def test_a_type_without_a_figure_is_judged_on_its_efa_line_rate_and_says_so() -> None:
    expectation = bw.expectation_for("p5en.48xlarge", 2, 16 << 30)
    assert expectation.reference is None
    # 16 EFA cards x 200 Gbps = 3200 Gbps = 400 GB/s.
    assert expectation.busbw_gb_s == pytest.approx(400.0)
    assert "no reference figure" in expectation.rule
    assert "line rate" in expectation.rule
    # A node count without a figure falls back too (the p5 figures are for 2 nodes).
    assert bw.expectation_for("p5.48xlarge", 4, 16 << 30).reference is None


def test_the_sourced_figures_clear_their_line_rate_so_the_fallback_is_a_floor() -> None:
    for figure in bw.REFERENCE_FIGURES:
        assert figure.busbw_gb_s >= bw.efa_line_rate_gb_s(figure.instance_type)


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
