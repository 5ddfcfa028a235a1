"""Counts on the command line: every option that takes one refuses a bad value the same way,
through the parser (a usage error naming the option), ``fmc init --instance-count`` included."""

from __future__ import annotations

import pytest

from tests.unit.cli_stubs import DEFAULT_PROFILE, run


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["health", "--config", DEFAULT_PROFILE, "--nodes", "-1"], "must be 1 or more, got '-1'"),
        (["health", "--config", DEFAULT_PROFILE, "--nodes", "0"], "must be 1 or more, got '0'"),
        (["health", "--config", DEFAULT_PROFILE, "--nodes", "two"], "must be a whole number"),
        (
            ["plan", "--config", DEFAULT_PROFILE, "--pod-ips-per-node", "-1"],
            "must be 0 or more, got '-1'",
        ),
        (
            ["init", "out.toml", "--offline", "--instance-count", "pretraining=0"],
            "must be 1 or more, got '0'",
        ),
        (
            ["init", "out.toml", "--offline", "--instance-count", "pretraining=x"],
            "must be a whole number, got 'x'",
        ),
    ],
)
def test_a_bad_count_is_a_usage_error(argv: list[str], message: str) -> None:
    result = run(*argv)
    assert result.code == 2, result.err
    assert message in result.err


def test_a_good_count_is_taken() -> None:
    result = run("health", "--config", DEFAULT_PROFILE, "--workload", "pretraining", "--nodes", "1")
    assert result.code == 0, result.err
