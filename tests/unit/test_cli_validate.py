"""fmc validate: both modes through ``main``, the submit path against a fake kubectl on PATH,
and the Slurm command. No cluster, no AWS."""

from __future__ import annotations

import json
import os
import stat
import textwrap
from pathlib import Path

import pytest
import yaml

from fm_constructs.cli.validate import SLURM_PARTITION
from fm_constructs.kubernetes import images
from fm_constructs.patterns.hyperpod_workload import WORKER_GROUP
from tests.kubernetes_schemas import assert_valid
from tests.unit.cli_stubs import DEFAULT_PROFILE, REPO, run
from tests.unit.nccl_logs import busbw_curve, efa_info, nccl_log, socket_info

SLURM_PROFILE = str(REPO / "config" / "hyperpod-slurm.toml")


def _write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "run.log"
    path.write_text(text)
    return str(path)


def test_help_documents_both_modes(capsys: pytest.CaptureFixture[str]) -> None:
    result = run("validate", "--help")
    assert result.code == 0
    shown = capsys.readouterr().out
    for text in ("--from-log FILE [--instance-type TYPE] [--nodes N]", "--submit", "90%"):
        assert text in shown


def test_from_log_passes_a_healthy_run(tmp_path: Path) -> None:
    path = _write(tmp_path, nccl_log(info=efa_info("ip-10-1-0-11", 32)))
    result = run("validate", "--from-log", path, "--instance-type", "p5.48xlarge", "--nodes", "2")
    assert result.code == 0, result.out + result.err
    assert "PASS" in result.out and "487.09" in result.out


def test_from_log_fails_a_tcp_fallback_with_measured_expected_and_causes(tmp_path: Path) -> None:
    path = _write(tmp_path, nccl_log(info=socket_info("h"), busbw=busbw_curve(11.0)))
    result = run("validate", "--from-log", path, "--instance-type", "p5.48xlarge", "--nodes", "2")
    assert result.code == 1
    assert "FAIL" in result.out and "measured busbw" in result.out
    assert "expected busbw" in result.out and "TCP fallback" in result.out


def test_from_log_json(tmp_path: Path) -> None:
    path = _write(tmp_path, nccl_log(truncate_after=10))
    result = run(
        "validate",
        "--from-log",
        path,
        "--instance-type",
        "p5.48xlarge",
        "--nodes",
        "2",
        "--json",
    )
    assert result.code == 1
    doc = json.loads(result.out)
    assert doc["schema"] == "fmc.validate/v1" and doc["passed"] is False
    assert doc["reason"].startswith("truncated log")


def test_from_log_without_a_reference_figure_states_the_rule(tmp_path: Path) -> None:
    path = _write(tmp_path, nccl_log(gpu_name="NVIDIA H200", busbw=busbw_curve(410.0)))
    result = run("validate", "--from-log", path, "--instance-type", "p5en.48xlarge", "--nodes", "2")
    assert result.code == 0
    assert "no reference figure" in result.out and "line rate" in result.out


def test_from_log_reads_the_node_count_and_gpu_type_from_the_log(tmp_path: Path) -> None:
    hosts = tuple(f"ip-10-1-0-{n}" for n in range(11, 15))
    path = _write(tmp_path, nccl_log(hosts=hosts, info=efa_info(hosts[0], 32)))
    result = run("validate", "--from-log", path, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert (doc["instance_type"], doc["nodes"]) == ("p5.48xlarge", 4)


def test_from_log_refuses_a_judgement_the_log_contradicts(tmp_path: Path) -> None:
    path = _write(tmp_path, nccl_log(info=efa_info("ip-10-1-0-11", 32)))
    result = run("validate", "--from-log", path, "--instance-type", "p5.48xlarge", "--nodes", "4")
    assert result.code == 2
    assert "contradicts 4 x p5.48xlarge" in result.err and "on 2 host(s), not 4" in result.err
    other = run("validate", "--from-log", path, "--instance-type", "p6-b200.48xlarge")
    assert other.code == 2 and "a p6-b200.48xlarge has B200" in other.err


def test_from_log_without_a_device_list_needs_the_shape(tmp_path: Path) -> None:
    text = "".join(line + "\n" for line in nccl_log().splitlines() if "Rank" not in line)
    path = _write(tmp_path, text)
    result = run("validate", "--from-log", path)
    assert result.code == 2 and "give --nodes N" in result.err
    typed = run("validate", "--from-log", path, "--nodes", "2")
    assert typed.code == 2 and "give --instance-type TYPE" in typed.err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--from-log", "/nonexistent.log", "--instance-type", "p5.48xlarge", "--nodes", "2"],
            "cannot read",
        ),
        (["--from-log", "x.log", "--config", DEFAULT_PROFILE], "takes no --config"),
        ([], "give --config PROFILE --workload NAME"),
        (["--config", DEFAULT_PROFILE, "--workload", "training"], "must name a training"),
        (["--config", DEFAULT_PROFILE, "--workload", "inference"], "must name a training"),
    ],
)
def test_usage_errors(argv: list[str], message: str) -> None:
    result = run("validate", *argv)
    assert result.code == 2
    assert message in result.err


def test_an_unknown_instance_type_is_a_usage_error(tmp_path: Path) -> None:
    path = _write(tmp_path, nccl_log())
    result = run("validate", "--from-log", path, "--instance-type", "p9.huge", "--nodes", "2")
    assert result.code == 2
    assert "p9.huge" in result.err


def test_render_prints_schema_valid_runtime_and_trainjob() -> None:
    result = run("validate", "--config", DEFAULT_PROFILE, "--workload", "pretraining")
    assert result.code == 0, result.err
    objects = list(yaml.safe_load_all(result.out))
    assert [o["kind"] for o in objects] == ["TrainingRuntime", "TrainJob"]
    assert objects[1]["spec"]["trainer"]["numNodes"] == 4  # the workload's instance_count
    assert_valid(objects, kubernetes_version="1.35")


def test_slurm_prints_the_exact_sbatch_command() -> None:
    result = run("validate", "--config", SLURM_PROFILE, "--workload", "pretraining", "--nodes", "2")
    assert result.code == 0, result.err
    assert (
        f"sbatch --nodes=2 --ntasks-per-node=8 --partition={SLURM_PARTITION} "
        f"--export=ALL,IMAGE={images.NCCL_TESTS.enroot_reference},MAX_BYTES=16G "
        "/fsx/fm-jobs/nccl-tests.sbatch"
    ) in result.out


def test_the_slurm_partition_is_the_hyperpod_worker_group() -> None:
    assert SLURM_PARTITION == WORKER_GROUP


# ------------------------------------------------------------------------ fake kubectl

FAKE_KUBECTL = textwrap.dedent(
    """\
    #!/usr/bin/env python3
    import json, os, sys
    state = os.environ["FAKE_KUBECTL_DIR"]
    args = sys.argv[1:]
    with open(os.path.join(state, "calls.log"), "a") as log:
        log.write(" ".join(args) + "\\n")
    if args[:2] == ["config", "current-context"]:
        print("arn:aws:eks:us-east-1:111122223333:cluster/fm-pretraining")
    elif args[0] == "apply":
        open(os.path.join(state, "applied.yaml"), "w").write(sys.stdin.read())
        print("trainingruntime.trainer.kubeflow.org/fm-mpi configured")
    elif args[0] == "delete":
        pass
    elif args[:2] == ["get", "trainjob"]:
        count_file = os.path.join(state, "gets")
        count = int(open(count_file).read()) + 1 if os.path.exists(count_file) else 1
        open(count_file, "w").write(str(count))
        final = os.environ.get("FAKE_FINAL_STATE", "Complete")
        ready = count >= int(os.environ.get("FAKE_POLLS", "1"))
        conditions = [{"type": final, "status": "True"}] if ready and final != "none" else []
        print(json.dumps({"kind": "TrainJob", "status": {"conditions": conditions}}))
    elif args[0] == "logs":
        sys.stdout.write(open(os.path.join(state, "launcher.log")).read())
    else:
        sys.exit("unexpected kubectl call: " + " ".join(args))
    """
)


@pytest.fixture
def kubectl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "kubectl"
    fake.write_text(FAKE_KUBECTL)
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_KUBECTL_DIR", str(state))
    monkeypatch.chdir(tmp_path)
    return state


def _submit(*extra: str) -> object:
    return run(
        "validate",
        "--config",
        DEFAULT_PROFILE,
        "--workload",
        "pretraining",
        "--nodes",
        "2",
        "--submit",
        *extra,
    )


def test_submit_applies_waits_collects_and_judges(kubectl: Path) -> None:
    (kubectl / "launcher.log").write_text(nccl_log(info=efa_info("ip-10-1-0-11", 32)))
    result = _submit()
    assert result.code == 0, result.out + result.err  # type: ignore[attr-defined]
    calls = (kubectl / "calls.log").read_text().splitlines()
    assert calls[0] == "config current-context"
    assert calls[1].startswith("delete trainjob nccl-tests -n pretraining")
    assert calls[2] == "apply -f -"
    assert calls[3] == "get trainjob nccl-tests -n pretraining -o json"
    assert calls[4] == (
        "logs -n pretraining -l jobset.sigs.k8s.io/jobset-name=nccl-tests,"
        "jobset.sigs.k8s.io/replicatedjob-name=launcher --tail=-1"
    )
    applied = list(yaml.safe_load_all((kubectl / "applied.yaml").read_text()))
    assert applied[1]["spec"]["trainer"]["numNodes"] == 2
    assert "PASS" in result.out  # type: ignore[attr-defined]
    assert (kubectl.parent / "nccl-tests-pretraining.log").exists()


def test_submit_fails_when_the_bandwidth_is_low(kubectl: Path) -> None:
    (kubectl / "launcher.log").write_text(nccl_log(busbw=busbw_curve(40.0)))
    result = _submit()
    assert result.code == 1
    assert "below" in result.out  # type: ignore[attr-defined]


def test_submit_reports_a_failed_job(kubectl: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_FINAL_STATE", "Failed")
    (kubectl / "launcher.log").write_text(nccl_log(truncate_after=5))
    result = _submit()
    assert result.code == 1
    assert "nccl-tests failed" in result.err  # type: ignore[attr-defined]
    assert "truncated log" in result.out  # type: ignore[attr-defined]


def test_submit_times_out_and_still_judges_the_log(
    kubectl: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_FINAL_STATE", "none")
    (kubectl / "launcher.log").write_text(nccl_log(truncate_after=5))
    result = _submit("--timeout-minutes", "0")
    assert result.code == 1
    assert "did not finish within 0 minutes" in result.err  # type: ignore[attr-defined]


def test_pcs_prints_the_sbatch_command_for_its_queue() -> None:
    from fm_constructs.cli.validate import PCS_PARTITION
    from fm_constructs.patterns.pcs_workload import QUEUE_NAME

    assert PCS_PARTITION == QUEUE_NAME
    profile = str(REPO / "config" / "pcs.toml")
    result = run("validate", "--config", profile, "--workload", "pretraining", "--nodes", "2")
    assert result.code == 0, result.err
    assert (
        f"sbatch --nodes=2 --ntasks-per-node=8 --partition={PCS_PARTITION} "
        f"--export=ALL,IMAGE={images.NCCL_TESTS.enroot_reference},MAX_BYTES=16G "
        "/fsx/fm-jobs/nccl-tests.sbatch"
    ) in result.out
