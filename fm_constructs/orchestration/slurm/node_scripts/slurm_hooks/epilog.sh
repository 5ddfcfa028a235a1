#!/usr/bin/env bash
# Slurm Epilog: runs as root on every node of a job after the job ends there.
#
# Cleans up what a job leaves behind that Slurm's process tracking does not: the job user's
# files in /dev/shm (NCCL and data-loader shared memory, which would otherwise fill the node's
# memory job after job), once no other process of that user runs on the node. It never fails:
# Slurm drains a node whose epilog fails, and a cleanup problem is no reason to lose a node.
# It also takes the job off the GPU-to-job map the prolog wrote for the DCGM exporter.
set -uo pipefail
# slurmd starts the script with a bare environment: make sure the system tools are found.
export PATH="${PATH:+${PATH}:}/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

FM_ROOT="${FM_ROOT:-}"
LOG="${FM_ROOT}/var/log/slurm/fm-epilog.log"
SHM="${FM_ROOT}/dev/shm"
JOB_MAP_DIR="${FM_ROOT}/run/fm-dcgm-jobs"

log() {
  mkdir -p "$(dirname "$LOG")" 2> /dev/null || return 0
  echo "$(date -u +%FT%TZ) job ${SLURM_JOB_ID:-?} on $(hostname): $*" >> "$LOG" || true
}

if [[ -n "${SLURM_JOB_ID:-}" && -d "$JOB_MAP_DIR" ]]; then
  for map in "$JOB_MAP_DIR"/*; do
    [[ -f "$map" ]] || continue
    grep -vxF "$SLURM_JOB_ID" "$map" > "${map}.new" || true
    if [[ -s "${map}.new" ]]; then
      mv -f "${map}.new" "$map" || true
    else
      rm -f "${map}.new" "$map"
    fi
  done
fi

uid="${SLURM_JOB_UID:-}"
if [[ ! "$uid" =~ ^[0-9]+$ ]] || ((uid == 0)); then
  exit 0
fi
if pgrep -U "$uid" > /dev/null 2>&1; then
  log "uid ${uid} still runs processes here (another job); /dev/shm left as is"
  exit 0
fi
if [[ -d "$SHM" ]]; then
  removed="$(find "$SHM" -mindepth 1 -maxdepth 1 -uid "$uid" -print -exec rm -rf {} + \
    2> /dev/null | grep -c . || true)"
  if ((removed > 0)); then
    log "removed ${removed} entries of uid ${uid} from /dev/shm"
  fi
fi
exit 0
