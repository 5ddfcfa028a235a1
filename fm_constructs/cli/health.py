"""``fmc health``: the DCGM diagnostics job (level 2) for a workload of the profile, rendered
for its nodes: instance type, GPU count, node count, namespace, queue and service account.

The job is :func:`fm_constructs.kubernetes.jobs.dcgm_diag_job` (one pod per node, each taking
every GPU of its node); docs/first-job/eks.md shows it for the default profile and how to run
it. EKS and HyperPod EKS only: HyperPod Slurm nodes run HyperPod's own deep health checks.
"""

from __future__ import annotations

import yaml

from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.output import Reporter
from fm_constructs.cli.targets import job_target
from fm_constructs.config import Profile
from fm_constructs.kubernetes.jobs import dcgm_diag_job

SCHEMA = "fmc.health/v1"


def run_health(
    profile: Profile, reporter: Reporter, *, workload: str | None, nodes: int | None
) -> ExitCode:
    """Print the DCGM job of ``workload`` (default: the first enabled one) as YAML or JSON."""
    enabled = [w for w in profile.enabled_workloads if not w.orchestrator.is_slurm]
    if workload is None:
        if not enabled:
            raise CliError(
                f"health: {profile.source} has no enabled workload on EKS (HyperPod Slurm nodes "
                "run HyperPod's deep health checks; on AWS PCS run dcgmi diag through sbatch)",
                ExitCode.USAGE,
            )
        chosen = enabled[0]
    else:
        found = [w for w in enabled if w.name == workload.replace("-", "_")]
        if not found:
            names = ", ".join(w.name for w in enabled) or "(none)"
            raise CliError(
                f"health: --workload must name an enabled workload on EKS of {profile.source}: "
                f"{names}",
                ExitCode.USAGE,
            )
        chosen = found[0]
    count = chosen.instance_count if nodes is None else nodes
    if count < 1:
        raise CliError(f"health: --nodes must be 1 or more, got {count}", ExitCode.USAGE)
    try:
        job = dcgm_diag_job(job_target(chosen), count)
    except ValueError as error:
        raise CliError(f"health: {error}", ExitCode.USAGE) from None
    if reporter.json_mode:
        reporter.emit_json({"schema": SCHEMA, "workload": chosen.name, "objects": [job]})
    else:
        reporter.print(
            f"# DCGM diagnostics level 2 on {count} x {chosen.instance_type} ({chosen.name}); "
            f"kubectl apply -f this file, then: kubectl -n {job['metadata']['namespace']} wait "
            "--for=condition=complete job/dcgm-diag --timeout=30m"
        )
        reporter.print(yaml.safe_dump(job, sort_keys=False).rstrip())
    return ExitCode.OK
