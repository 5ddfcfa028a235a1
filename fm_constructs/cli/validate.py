"""``fmc validate``: prove a deployed cluster reaches its EFA bandwidth with nccl-tests.

Two modes:

* ``--config PROFILE --workload NAME [--nodes N] [--submit]`` renders the nccl-tests job of the
  workload: on EKS (and HyperPod on EKS) the MPI TrainingRuntime and the TrainJob as YAML, which
  ``--submit`` applies with the user's current kubectl context, waits for, reads the launcher's
  log from and judges; on HyperPod Slurm the exact ``sbatch`` command for the login node.
* ``--from-log FILE [--instance-type TYPE] [--nodes N]`` judges a saved ``all_reduce_perf``
  log (see :mod:`fm_constructs.cli.nccl_log` for the rules); the node count and the GPU type
  are read from the log's device list when not given, and a log that contradicts what is
  given is refused.

kubectl is run as a subprocess (found on PATH), never through a Kubernetes client library, so
the user's kubeconfig, context and credentials plugins apply unchanged.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.nccl_log import (
    ParsedLog,
    Verdict,
    contradictions,
    instance_types_in_log,
    judge,
    parse_log,
)
from fm_constructs.cli.output import Reporter, render_pairs
from fm_constructs.cli.targets import job_target
from fm_constructs.config import Orchestrator, Profile, WorkloadConfig
from fm_constructs.errors import FmValidationError
from fm_constructs.kubernetes import images
from fm_constructs.kubernetes.jobs import NCCL_TESTS_JOB, max_message_bytes, nccl_tests_trainjob
from fm_constructs.kubernetes.node_shape import WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import mpi_runtime

SCHEMA = "fmc.validate/v1"
#: Where the HyperPod lifecycle scripts put the Slurm job scripts (on the shared FSx).
SLURM_JOBS_DIR = "/fsx/fm-jobs"
#: Slurm partition of the accelerated group (``patterns.hyperpod_workload.WORKER_GROUP``).
SLURM_PARTITION = "accelerated-workers"
#: The Slurm partition of an AWS PCS workload's accelerated nodes (its queue's name).
PCS_PARTITION = "accelerated"
#: Labels JobSet puts on the pods of a replicated job.
JOBSET_NAME_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"

Runner = Callable[[Sequence[str], str | None], subprocess.CompletedProcess[str]]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``validate`` options (both modes)."""
    from fm_constructs.cli.profiles import describe_default

    parser.add_argument(
        "--config",
        "-c",
        help=f"profile TOML file (render/submit mode; default: {describe_default()})",
    )
    parser.add_argument("--workload", help="workload of the profile: pretraining, post_training")
    parser.add_argument(
        "--nodes", type=int, help="nodes to test across (default: the workload's instance_count)"
    )
    parser.add_argument(
        "--submit",
        action="store_true",
        help="EKS: apply the job with the current kubectl context, wait, collect and judge "
        "the log (Slurm: prints the sbatch command to run on the login node)",
    )
    parser.add_argument(
        "--timeout-minutes",
        type=int,
        default=30,
        help="--submit: how long to wait for the job (default 30)",
    )
    parser.add_argument("--from-log", metavar="FILE", help="judge a saved all_reduce_perf log")
    parser.add_argument(
        "--instance-type",
        help="--from-log: instance type the run used (default: from the GPUs the log names)",
    )
    parser.add_argument("--json", action="store_true", help="machine-readable output on stdout")


# ------------------------------------------------------------------------------ judging


def report_verdict(verdict: Verdict, reporter: Reporter, *, instance_type: str, nodes: int) -> int:
    """Print the verdict; return its exit code (0 pass, 1 fail)."""
    code = ExitCode.OK if verdict.passed else ExitCode.CHECK_FAILED
    if reporter.json_mode:
        reporter.emit_json(
            {
                "schema": SCHEMA,
                "instance_type": instance_type,
                "nodes": nodes,
                **verdict.to_json(),
            }
        )
        return int(code)
    exp = verdict.expectation
    pairs: list[tuple[str, object]] = [
        ("verdict", "PASS" if verdict.passed else "FAIL"),
        ("nodes", f"{nodes} x {instance_type}"),
        ("largest message", _bytes(verdict.largest_message_bytes)),
        ("measured busbw", _gbs(verdict.measured_gb_s)),
    ]
    if exp is not None:
        pairs += [
            ("expected busbw", _gbs(exp.busbw_gb_s)),
            ("pass threshold", _gbs(exp.threshold_gb_s)),
            ("rule", exp.rule),
        ]
    reporter.print(render_pairs(pairs))
    reporter.print(verdict.reason)
    if verdict.causes:
        reporter.print("likely causes:")
        for cause in verdict.causes:
            reporter.print(f"  - {cause}")
    return int(code)


def _gbs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} GB/s"


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value} B ({value / (1 << 30):g} GiB)" if value >= 1 << 30 else f"{value} B"


def _shape_from_log(
    log: ParsedLog, instance_type: str | None, nodes: int | None
) -> tuple[str, int]:
    """The run's instance type and node count: as given, else as the log's device list shows
    them (nccl-tests prints one ``#  Rank N ... on HOST device D [BUS] GPU`` line per rank)."""
    if nodes is None:
        if not log.hosts:
            raise CliError(
                "validate --from-log: the log has no '# Using devices' list to count the nodes "
                "from; give --nodes N",
                ExitCode.USAGE,
            )
        nodes = len(log.hosts)
    if instance_type is None:
        candidates = instance_types_in_log(log)
        if len(candidates) != 1:
            shown = ", ".join(sorted(log.gpu_names)) or "no GPU names"
            which = f"it fits {', '.join(candidates)}" if candidates else "no catalogued type fits"
            raise CliError(
                f"validate --from-log: the log shows {shown} ({which}); give --instance-type TYPE",
                ExitCode.USAGE,
            )
        (instance_type,) = candidates
    return instance_type, nodes


def run_from_log(args: argparse.Namespace, reporter: Reporter) -> int:
    if args.nodes is not None and args.nodes < 1:
        raise CliError(f"validate: --nodes must be 1 or more, got {args.nodes}", ExitCode.USAGE)
    path = Path(args.from_log)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as error:
        raise CliError(f"validate: cannot read {path}: {error.strerror}", ExitCode.USAGE) from None
    log = parse_log(text)
    instance_type, nodes = _shape_from_log(log, args.instance_type, args.nodes)
    try:
        against = contradictions(log, instance_type, nodes)
    except FmValidationError as error:
        raise CliError(f"validate: {error}", ExitCode.USAGE) from None
    if against:
        raise CliError(
            f"validate --from-log: the log contradicts {nodes} x {instance_type}, so no "
            f"judgement: {'; '.join(against)} (omit --instance-type/--nodes to take them from "
            "the log)",
            ExitCode.USAGE,
        )
    verdict = judge(log, instance_type, nodes)
    return report_verdict(verdict, reporter, instance_type=instance_type, nodes=nodes)


# ------------------------------------------------------------------------------ rendering


def _workload(profile: Profile, name: str | None) -> WorkloadConfig:
    workloads = profile.workloads_by_name
    enabled = [w.name for w in profile.enabled_workloads if w.name != "inference"]
    if name is None or name.replace("-", "_") not in workloads or name == "inference":
        raise CliError(
            f"validate: --workload must name a training workload of {profile.source}: "
            f"{', '.join(enabled) or '(none enabled)'}",
            ExitCode.USAGE,
        )
    workload = workloads[name.replace("-", "_")]
    if not workload.enabled:
        raise CliError(
            f"validate: workload {workload.name!r} is not enabled in {profile.source} "
            f"(set [{workload.name}] enabled = true)",
            ExitCode.USAGE,
        )
    return workload


def kubernetes_objects(target: WorkloadTarget, nodes: int) -> list[dict[str, Any]]:
    """What ``--submit`` applies: the MPI runtime (idempotent) and the nccl-tests TrainJob."""
    return [mpi_runtime(target), nccl_tests_trainjob(target, nodes)]


def sbatch_command(
    workload: WorkloadConfig, nodes: int, *, partition: str = SLURM_PARTITION
) -> str:
    """The nccl-tests command a user runs on the Slurm login node."""
    target = WorkloadTarget(workload.name, workload.instance_type)
    size = max_message_bytes(target) >> 30
    return (
        f"sbatch --nodes={nodes} --ntasks-per-node={target.accelerators} "
        f"--partition={partition} "
        f"--export=ALL,IMAGE={images.NCCL_TESTS.enroot_reference},MAX_BYTES={size}G "
        f"{SLURM_JOBS_DIR}/nccl-tests.sbatch"
    )


def torchrun_sbatch_command(nodes: int, script: str, *args: str) -> str:
    """The multi-node torchrun command of the Slurm first-job guide."""
    return (
        f"sbatch --nodes={nodes} --partition={SLURM_PARTITION} "
        f"--export=ALL,IMAGE={images.PYTORCH_TRAINING.enroot_reference} "
        f"{SLURM_JOBS_DIR}/torchrun.sbatch {' '.join([script, *args])}"
    )


def run_config(args: argparse.Namespace, reporter: Reporter, profile: Profile, run: Runner) -> int:
    workload = _workload(profile, args.workload)
    nodes = workload.instance_count if args.nodes is None else args.nodes
    if nodes < 1:
        raise CliError(f"validate: --nodes must be 1 or more, got {nodes}", ExitCode.USAGE)
    if nodes > workload.instance_count:
        reporter.progress(
            f"warning: --nodes {nodes} exceeds the {workload.instance_count} nodes of "
            f"{workload.name}: the job stays pending until that many nodes are free"
        )
    if workload.orchestrator.is_slurm:
        pcs = workload.orchestrator is Orchestrator.PCS
        command = sbatch_command(
            workload, nodes, partition=PCS_PARTITION if pcs else SLURM_PARTITION
        )
        if reporter.json_mode:
            reporter.emit_json({"schema": SCHEMA, "orchestrator": "slurm", "command": command})
        else:
            reporter.print("# on the cluster's login node (the job scripts are on the shared FSx):")
            reporter.print(command)
            reporter.print(
                f"# then judge the output: fmc validate --from-log nccl-tests-<jobid>.out "
                f"--instance-type {workload.instance_type} --nodes {nodes}"
            )
        return int(ExitCode.OK)
    target = job_target(workload)
    try:
        objects = kubernetes_objects(target, nodes)
    except (ValueError, FmValidationError) as error:
        raise CliError(f"validate: {error}", ExitCode.USAGE) from None
    manifest = yaml.safe_dump_all(objects, sort_keys=False)
    if not args.submit and reporter.json_mode:
        reporter.emit_json({"schema": SCHEMA, "orchestrator": "eks", "objects": objects})
        return int(ExitCode.OK)
    if not args.submit:
        reporter.print(manifest.rstrip())
        return int(ExitCode.OK)
    return submit(args, reporter, target, nodes, manifest, run)


# ------------------------------------------------------------------------------ submitting


def default_runner(argv: Sequence[str], stdin: str | None) -> subprocess.CompletedProcess[str]:
    """Run kubectl (or any argv) and capture its output."""
    return subprocess.run(list(argv), input=stdin, capture_output=True, text=True, check=False)


def _kubectl(run: Runner, *args: str, stdin: str | None = None) -> str:
    result = run(["kubectl", *args], stdin)
    if result.returncode != 0:
        raise CliError(
            f"validate: kubectl {' '.join(args[:3])} failed ({result.returncode}): "
            f"{(result.stderr or result.stdout).strip()}",
            ExitCode.CHECK_FAILED,
        )
    return result.stdout


def _condition(trainjob: dict[str, Any]) -> str | None:
    """'Complete' or 'Failed' once the TrainJob has finished, else None."""
    for condition in (trainjob.get("status") or {}).get("conditions") or []:
        if condition.get("type") in ("Complete", "Failed") and condition.get("status") == "True":
            return str(condition["type"])
    return None


def submit(
    args: argparse.Namespace,
    reporter: Reporter,
    target: WorkloadTarget,
    nodes: int,
    manifest: str,
    run: Runner,
    *,
    poll_seconds: float = 10.0,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Apply, wait, collect the launcher's log and judge it."""
    if run is default_runner and shutil.which("kubectl") is None:
        raise CliError("validate --submit: kubectl is not on PATH", ExitCode.USAGE)
    namespace = target.namespace
    context = _kubectl(run, "config", "current-context").strip()
    reporter.progress(f"kubectl context {context}: submitting {NCCL_TESTS_JOB} in {namespace}")
    _kubectl(
        run,
        "delete",
        "trainjob",
        NCCL_TESTS_JOB,
        "-n",
        namespace,
        "--ignore-not-found",
        "--wait=true",
    )
    _kubectl(run, "apply", "-f", "-", stdin=manifest)
    deadline = args.timeout_minutes * 60
    waited = 0.0
    state: str | None = None
    while True:
        trainjob = json.loads(
            _kubectl(run, "get", "trainjob", NCCL_TESTS_JOB, "-n", namespace, "-o", "json")
        )
        state = _condition(trainjob)
        if state is not None or waited >= deadline:
            break
        sleep(poll_seconds)
        waited += poll_seconds
    selector = f"{JOBSET_NAME_LABEL}={NCCL_TESTS_JOB},{REPLICATED_JOB_LABEL}=launcher"
    log = _kubectl(run, "logs", "-n", namespace, "-l", selector, "--tail=-1")
    if state is None:
        reporter.error(
            f"{NCCL_TESTS_JOB} did not finish within {args.timeout_minutes} minutes "
            f"(kubectl -n {namespace} describe trainjob {NCCL_TESTS_JOB}: pending nodes, "
            "images still pulling, or a Kueue quota); judging the log so far"
        )
    elif state == "Failed":
        reporter.error(f"{NCCL_TESTS_JOB} failed; judging its log")
    log_path = Path(f"{NCCL_TESTS_JOB}-{namespace}.log")
    log_path.write_text(log, encoding="utf-8")
    reporter.progress(f"launcher log saved to {log_path}")
    verdict = judge(parse_log(log), target.instance_type, nodes)
    code = report_verdict(verdict, reporter, instance_type=target.instance_type, nodes=nodes)
    return code if state == "Complete" else max(code, int(ExitCode.CHECK_FAILED))


def run_validate(
    args: argparse.Namespace,
    reporter: Reporter,
    load: Callable[[str], Profile],
    run: Runner = default_runner,
) -> int:
    """Dispatch between the two modes."""
    if args.from_log:
        if args.config or args.submit or args.workload:
            raise CliError(
                "validate: --from-log judges a saved log; it takes no --config, --workload or "
                "--submit",
                ExitCode.USAGE,
            )
        return run_from_log(args, reporter)
    if not args.config and not args.workload:
        raise CliError(
            "validate: give --config PROFILE --workload NAME (render or --submit the "
            "nccl-tests job), or --from-log FILE [--instance-type TYPE] [--nodes N]",
            ExitCode.USAGE,
        )
    return run_config(args, reporter, load(args.config), run)
