#!/usr/bin/env bash
# Job hooks and log rotation of a Slurm node: slurm_hooks.sh <role> <group> <params>
#
# Every node gets the library's Prolog and Epilog (slurm_hooks/prolog.sh: GPU health check
# before a job; slurm_hooks/epilog.sh: /dev/shm cleanup after it) under
# ${SLURM_PREFIX}/etc/scripts (/opt/slurm/etc/scripts on HyperPod), outside the lifecycle
# download directory so they survive a reboot, plus fm-node.env beside them with the number of
# GPUs the node must show; slurmctld checks the scripts exist and slurmd runs them. On AWS PCS
# the compute nodes run this as workers (pcs_node.sh) and the cluster's Prolog and Epilog
# settings name the same paths under the PCS Slurm prefix.
# The HyperPod controller points Slurm at them in fm-hooks.conf, which slurm.conf includes
# (slurm_includes.sh keeps the include line there), unless HyperPod's slurm.conf already names
# a Prolog or Epilog of its own, which is then kept. Slurm's logs are rotated at 100 MB, four
# kept (logrotate.d/fm-slurm); the daemons reopen them on SIGUSR2.
set -euo pipefail

ROLE="$1"
GROUP="$2"
PARAMS="$3"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
load_params
SLURM_ETC="${FM_ROOT}${SLURM_PREFIX}/etc"
HOOKS_DIR="${SLURM_PREFIX}/etc/scripts"

install_hooks() {
  local gpus=0
  mkdir -p "${FM_ROOT}${HOOKS_DIR}"
  install -m 0755 "${SCRIPT_DIR}/slurm_hooks/prolog.sh" "${FM_ROOT}${HOOKS_DIR}/fm-prolog.sh"
  install -m 0755 "${SCRIPT_DIR}/slurm_hooks/epilog.sh" "${FM_ROOT}${HOOKS_DIR}/fm-epilog.sh"
  if [[ "$ROLE" == "worker" ]]; then
    gpus="$(group_param "$GROUP" gpus)"
    [[ "$gpus" =~ ^[0-9]+$ ]] || gpus=0
  fi
  printf 'EXPECTED_GPUS=%s\n' "$gpus" > "${FM_ROOT}${HOOKS_DIR}/fm-node.env"
  chmod 0644 "${FM_ROOT}${HOOKS_DIR}/fm-node.env"
  echo "slurm_hooks: prolog and epilog in ${HOOKS_DIR} (${gpus} GPUs expected)"
}

configure_controller() {
  local conf="${SLURM_ETC}/slurm.conf" hooks="${SLURM_ETC}/fm-hooks.conf"
  if grep -Eqi '^[[:space:]]*(Prolog|Epilog)[[:space:]]*=' "$conf"; then
    echo "slurm_hooks: slurm.conf names its own Prolog or Epilog; keeping them"
    rm -f "$hooks"
    return 0
  fi
  printf 'Prolog=%s\nEpilog=%s\n' "${HOOKS_DIR}/fm-prolog.sh" "${HOOKS_DIR}/fm-epilog.sh" \
    > "$hooks"
  chmod 0644 "$hooks"
}

rotate_logs() {
  mkdir -p "${FM_ROOT}/etc/logrotate.d"
  cat > "${FM_ROOT}/etc/logrotate.d/fm-slurm" <<'CONF'
/var/log/slurm/*.log {
    size 100M
    rotate 4
    compress
    delaycompress
    missingok
    notifempty
    create 0640 slurm slurm
    sharedscripts
    postrotate
        pkill -x --signal SIGUSR2 slurmctld || true
        pkill -x --signal SIGUSR2 slurmd || true
        pkill -x --signal SIGUSR2 slurmdbd || true
    endscript
}
CONF
  chmod 0644 "${FM_ROOT}/etc/logrotate.d/fm-slurm"
}

install_hooks
rotate_logs
if [[ "$ROLE" == "controller" ]]; then
  configure_controller
fi
