#!/usr/bin/env bash
# Slurm Prolog: runs as root on every node of a job before the job starts there.
#
# Refuses a node whose GPUs are not all usable: fewer GPUs than the node was set up with, an
# nvidia-smi that does not answer within a minute, or a GPU whose row remapping failed
# (uncorrectable memory errors it can no longer map out). Slurm drains a node whose prolog
# fails and requeues the job on other nodes, so one bad GPU costs a requeue, not a training run;
# HyperPod then replaces the drained node. The reason goes to /var/log/slurm/fm-prolog.log.
#
# On a healthy node it records the job on each GPU Slurm gave it (SLURM_JOB_GPUS): one file per
# GPU index under /run/fm-dcgm-jobs holding the job ids, which the DCGM exporter reads
# (--hpc-job-mapping-dir) to label that GPU's series with hpc_job=<job id>. The epilog removes
# the job's lines again.
set -uo pipefail
# slurmd starts the script with a bare environment: make sure the system tools are found.
export PATH="${PATH:+${PATH}:}/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"

FM_ROOT="${FM_ROOT:-}"
# slurm_hooks.sh installs this script and fm-node.env side by side, under the Slurm prefix of
# the node (/opt/slurm on HyperPod, /opt/aws/pcs/scheduler/slurm-<version> on AWS PCS); slurmd
# runs it by its absolute path.
NODE_ENV="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fm-node.env"
LOG="${FM_ROOT}/var/log/slurm/fm-prolog.log"
NVIDIA_SMI_TIMEOUT="${NVIDIA_SMI_TIMEOUT:-60}"
JOB_MAP_DIR="${FM_ROOT}/run/fm-dcgm-jobs"

log() {
  mkdir -p "$(dirname "$LOG")"
  echo "$(date -u +%FT%TZ) job ${SLURM_JOB_ID:-?} on $(hostname): $*" >> "$LOG"
}

refuse() {
  log "refusing this node: $*"
  echo "fm-prolog: $*" >&2
  exit 1
}

EXPECTED_GPUS=0
if [[ -f "$NODE_ENV" ]]; then
  # shellcheck source=/dev/null
  source "$NODE_ENV"
fi
if ((EXPECTED_GPUS == 0)); then
  exit 0
fi
command -v nvidia-smi > /dev/null || refuse "nvidia-smi is missing (expected ${EXPECTED_GPUS} GPUs)"

if ! GPUS="$(timeout "$NVIDIA_SMI_TIMEOUT" nvidia-smi --query-gpu=index,remapped_rows.failure \
  --format=csv,noheader)"; then
  refuse "nvidia-smi failed or did not answer within ${NVIDIA_SMI_TIMEOUT}s (driver or GPU hung)"
fi
FOUND="$(grep -c . <<< "$GPUS" || true)"
if ((FOUND < EXPECTED_GPUS)); then
  refuse "${FOUND} of ${EXPECTED_GPUS} GPUs visible (a GPU fell off the bus)"
fi
FAILED="$(awk -F', *' '$2 == "Yes" {print $1}' <<< "$GPUS" | paste -sd, -)"
if [[ -n "$FAILED" ]]; then
  refuse "row remapping failed on GPU ${FAILED} (uncorrectable memory errors)"
fi

if [[ -n "${SLURM_JOB_GPUS:-}" && -n "${SLURM_JOB_ID:-}" ]]; then
  mkdir -p "$JOB_MAP_DIR"
  IFS=',' read -ra JOB_GPUS <<< "$SLURM_JOB_GPUS"
  for gpu in "${JOB_GPUS[@]}"; do
    [[ "$gpu" =~ ^[0-9]+$ ]] && echo "$SLURM_JOB_ID" >> "${JOB_MAP_DIR}/${gpu}"
  done
fi
exit 0
