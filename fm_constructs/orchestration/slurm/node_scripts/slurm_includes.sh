#!/usr/bin/env bash
# Keep the controller's slurm.conf including the library's files: slurm_includes.sh [--reconfigure]
#
# HyperPod's agent owns slurm.conf and writes it anew (nodes joining, leaving or replaced; a
# restart of sagemaker-cluster-agent), and a new file carries none of the include lines the
# lifecycle scripts appended, so accounting, GresTypes and the job hooks would quietly stop.
# Installed as /usr/local/sbin/fm-slurm-includes, this appends an `include` line for each of
# accounting.conf and fm-hooks.conf that exists and is not included yet. It runs from
# setup_slurm.sh, before every slurmctld start (ExecStartPre of a drop-in) and whenever
# slurm.conf changes (fm-slurm-includes.path), one run at a time (a lock); with --reconfigure
# and a line added while slurmctld runs, slurmctld is restarted, since accounting settings are
# read only at its start (its state is saved, running jobs go on).
set -euo pipefail

FM_ROOT="${FM_ROOT:-}"
SLURM_PREFIX="${SLURM_PREFIX:-/opt/slurm}"
SLURM_ETC="${FM_ROOT}${SLURM_PREFIX}/etc"
CONF="${SLURM_ETC}/slurm.conf"

if [[ ! -f "$CONF" ]]; then
  echo "fm-slurm-includes: no ${CONF} yet"
  exit 0
fi
mkdir -p "${FM_ROOT}/run/lock"
exec 9> "${FM_ROOT}/run/lock/fm-slurm-includes.lock"
flock 9
added=0
for name in accounting.conf fm-hooks.conf; do
  [[ -f "${SLURM_ETC}/${name}" ]] || continue
  if ! grep -Eqi \
    "^[[:space:]]*include[[:space:]]+([^[:space:]]*/)?${name//./\\.}[[:space:]]*(#.*)?$" "$CONF"
  then
    # A file without a final newline would glue the include to its last line.
    [[ -z "$(tail -c 1 "$CONF")" ]] || echo >> "$CONF"
    echo "include ${SLURM_PREFIX}/etc/${name}" >> "$CONF"
    echo "fm-slurm-includes: slurm.conf now includes ${name}"
    added=1
  fi
done
if ((added)) && [[ "${1:-}" == "--reconfigure" ]] && systemctl is-active --quiet slurmctld; then
  systemctl restart slurmctld
  echo "fm-slurm-includes: slurmctld restarted to read them"
fi
