"""fmc behaves like its peers (eksctl, pcluster, git): ``--version``, one error prefix, a
description for every command, ``--json`` wherever it is offered, quiet when its reader goes
away (``| head``), a default profile found from the package and not from the working
directory, and a bash completion script that completes."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fm_constructs import __version__
from fm_constructs.cli import profiles
from fm_constructs.cli.completion import bash_script
from fm_constructs.cli.main import BROKEN_PIPE, build_parser
from tests.unit.cli_stubs import DEFAULT_PROFILE, REPO, run


def _commands(
    parser: argparse.ArgumentParser, path: str = "fmc"
) -> list[tuple[str, argparse.ArgumentParser]]:
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                found.append((f"{path} {name}", child))
                found += _commands(child, f"{path} {name}")
    return found


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--version").code == 0
    assert capsys.readouterr().out.strip() == f"fmc {__version__}"


def test_a_usage_error_has_one_prefix_and_points_to_help() -> None:
    result = run("plan", "--config", DEFAULT_PROFILE, "--mfu", "x")
    assert result.code == 2
    line = result.err.strip()
    assert line.startswith("fmc: error: plan: argument --mfu:"), line
    assert line.count("fmc:") == 1 and "fmc plan:" not in line
    assert line.endswith("(see fmc plan --help)")
    top = run("frobnicate").err.strip()
    assert top.startswith("fmc: error: argument COMMAND: invalid choice") and top.count("fmc:") == 1


def test_every_command_has_a_description() -> None:
    commands = _commands(build_parser())
    assert {name for name, _ in commands} >= {
        "fmc init",
        "fmc plan",
        "fmc preflight",
        "fmc capacity",
        "fmc capacity search",
        "fmc capacity purchase",
        "fmc validate",
        "fmc completion",
    }
    for name, parser in commands:
        assert parser.description, f"{name} has no description"


def test_every_command_that_reads_a_profile_has_the_same_config_default() -> None:
    for name, parser in _commands(build_parser()):
        configs = [a for a in parser._actions if "--config" in a.option_strings]
        if not configs:
            continue
        assert "FMC_CONFIG" in (configs[0].help or ""), name
        assert str(profiles.SHIPPED_DEFAULT) in (configs[0].help or ""), name


def test_json_is_json_for_every_offline_command(tmp_path: Path) -> None:
    """The commands that offer --json and need no AWS: each prints one JSON document."""
    cases = [
        ("plan", "--config", DEFAULT_PROFILE),
        ("health", "--config", DEFAULT_PROFILE),
        ("validate", "--config", DEFAULT_PROFILE, "--workload", "pretraining", "--nodes", "2"),
        (
            "init",
            str(tmp_path / "mine.toml"),
            "--offline",
            "--workloads",
            "inference",
            "--no-input",
        ),
    ]
    for argv in cases:
        result = run(*argv, "--json")
        assert result.code == 0, (argv, result.err)
        document = json.loads(result.out)
        assert document["schema"].startswith("fmc."), argv
    rendered = json.loads(
        run("validate", "--config", DEFAULT_PROFILE, "--workload", "pretraining", "--json").out
    )
    assert rendered["orchestrator"] == "eks"
    assert {o["kind"] for o in rendered["objects"]} >= {"TrainJob"}


def test_output_into_a_closed_pipe_ends_quietly() -> None:
    """``fmc plan | head -1``: the reader leaves before fmc writes; no traceback, exit 141."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    child = subprocess.Popen(
        [sys.executable, "-m", "fm_constructs.cli", "plan", "--config", DEFAULT_PROFILE],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader is gone before the first line is written
    stderr = child.stderr.read().decode()
    assert child.wait(timeout=120) == BROKEN_PIPE, stderr
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr


def test_head_reads_the_first_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            "bash",
            "-c",
            f"set -o pipefail; {sys.executable} -m fm_constructs.cli plan --config "
            f"{DEFAULT_PROFILE} | head -1",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        cwd=tmp_path,
        check=False,
    )
    assert result.stdout.startswith("plan of ")
    assert "Traceback" not in result.stderr, result.stderr


def test_the_default_profile_does_not_depend_on_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(profiles.CONFIG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)  # no config/ here
    result = run("plan", "--json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["profile"] == str(REPO / "config" / "default.toml")

    mine = tmp_path / "mine.toml"
    mine.write_text((REPO / "config" / "inference-g6e.toml").read_text())
    monkeypatch.setenv(profiles.CONFIG_ENV, str(mine))
    assert json.loads(run("plan", "--json").out)["profile"] == str(mine)


def test_without_a_shipped_default_the_command_asks_for_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A package installed from a wheel has no config/ beside it."""
    monkeypatch.delenv(profiles.CONFIG_ENV, raising=False)
    monkeypatch.setattr(profiles, "SHIPPED_DEFAULT", tmp_path / "none" / "default.toml")
    result = run("plan")
    assert result.code == 2
    assert "no profile given: pass --config FILE (or set FMC_CONFIG)" in result.err


def _complete(script: str, *words: str) -> list[str]:
    """COMPREPLY of the completion function for ``words`` (the last one being completed)."""
    line = " ".join(f"'{w}'" for w in words)
    program = f"""
{script}
COMP_WORDS=({line})
COMP_CWORD={len(words) - 1}
_fmc_complete
printf '%s\\n' "${{COMPREPLY[@]}}"
"""
    result = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return result.stdout.split()


def test_bash_completion_completes_commands_and_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("completion", "bash").code == 0
    result = run("completion", "bash")
    script = result.out
    assert (
        script == bash_script(build_parser())
        or script.rstrip() == bash_script(build_parser()).rstrip()
    )
    assert _complete(script, "fmc", "pl") == ["plan"]
    assert set(_complete(script, "fmc", "")) >= {"init", "plan", "preflight", "completion"}
    assert _complete(script, "fmc", "capacity", "se") == ["search"]
    assert _complete(script, "fmc", "plan", "--pa") == ["--params"]
    assert "--reservation-id" in _complete(script, "fmc", "init", "--res")
    assert _complete(script, "fmc", "capacity", "search", "--dur") == ["--duration-hours"]


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
def test_the_completion_script_is_shellcheck_clean(tmp_path: Path) -> None:
    path = tmp_path / "fmc.bash"
    path.write_text(run("completion", "bash").out)
    result = subprocess.run(
        ["shellcheck", "-s", "bash", str(path)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout
