#!/usr/bin/env bash
# A node that lacks a component jobs need stays in the cluster, drained, until it has it:
#   node_components.sh schedule <role> <params>   (on_create.sh, after setup_slurm.sh)
#   node_components.sh retry <role> <params>      (fm-components-retry.service)
#   node_components.sh sync <role> <params>       (drain or resume by what is recorded, only)
#
# containers.sh names what it could not fetch or build (enroot, pyxis) in
# /var/lib/fm-constructs/missing-components instead of failing OnCreate: one unreachable
# download on one node must not roll back the whole cluster's creation. Then:
# - `schedule` drains a worker that lacks something, with a reason naming it (sinfo -R:
#   "fm-constructs: missing enroot pyxis"), and, when something is missing on any node type,
#   enables fm-components-retry.timer (every 10 minutes) with what it needs staged under
#   /opt/fm-components/lifecycle;
# - `retry` runs containers.sh again; once nothing is missing it undrains the worker, but only
#   when the drain is still this script's (a drain an operator or a health check set since is
#   left alone), restarts slurmd so it loads a newly built pyxis, and disables the timer.
# Only workers are drained: the controller and the login node are in no partition, so their
# missing components are logged and retried the same way. The exporters never drain a node
# (jobs do not need them; metrics.sh retries them on its own timer).
set -euo pipefail

COMMAND="$1"
ROLE="$2"
PARAMS="$3"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
load_params
SCONTROL="${FM_ROOT}${SLURM_PREFIX}/bin/scontrol"
STAGE_DIR=/opt/fm-components/lifecycle
#: Every drain reason of this script starts so; resume touches no other.
REASON_PREFIX="fm-constructs: missing"

node_name() {
  # slurmd (started without -N) registers under the short host name.
  hostname -s
}

drain_reason() {
  # The node's current drain reason (none when it has none), from scontrol show node, whose
  # Reason line ends with who set it and when ("[root@2026-12-01T22:00:00]").
  "$SCONTROL" show node "$(node_name)" 2> /dev/null \
    | awk '/^[[:space:]]*Reason=/ {sub(/^[[:space:]]*Reason=/, ""); sub(/ \[[^]]*\]$/, ""); print}'
}

sync_slurm_state() {
  # Drain the worker when something is missing, resume it when nothing is and the drain is
  # ours. False when slurmctld cannot be told (the timer tries again).
  [[ "$ROLE" == "worker" ]] || return 0
  local missing node reason
  missing="$(missing_components)"
  node="$(node_name)"
  if [[ -n "$missing" ]]; then
    retry 5 5 "$SCONTROL" update "nodename=${node}" state=drain \
      "reason=${REASON_PREFIX} ${missing}" || return 1
    log "drained ${node}: ${REASON_PREFIX} ${missing}"
    return 0
  fi
  reason="$(drain_reason)"
  if [[ "$reason" == "${REASON_PREFIX}"* ]]; then
    # UNDRAIN clears the drain only (RESUME would also try to change the node's base state,
    # which Slurm refuses for a node that has not registered yet).
    retry 5 5 "$SCONTROL" update "nodename=${node}" state=undrain || return 1
    log "resumed ${node}: nothing is missing any more"
  fi
}

install_retry_timer() {
  stage_scripts "$STAGE_DIR" containers.sh lib.sh node_components.sh
  install_retrying_job fm-components-retry slurmd.service \
    "fetch or build the container components this node lacks" \
    "retry the missing container components until the node has them" 5min \
    "/bin/bash ${STAGE_DIR}/node_components.sh retry ${ROLE} ${STAGE_DIR}/provisioning_parameters.json"
}

schedule() {
  local missing
  missing="$(missing_components)"
  if [[ -z "$missing" ]]; then
    echo "node_components: nothing missing on ${ROLE}"
    sync_slurm_state || log "slurmctld could not be told that nothing is missing"
    return 0
  fi
  log "missing on ${ROLE}: ${missing}"
  install_retry_timer
  sync_slurm_state || log "could not drain $(node_name) yet; fm-components-retry tries again"
  echo "node_components: fm-components-retry.timer retries ${missing}"
}

retry_components() {
  local before
  before="$(missing_components)"
  bash "${SCRIPT_DIR}/containers.sh" "$ROLE"
  if [[ -n "$(missing_components)" ]]; then
    sync_slurm_state || true
    log "still missing: $(missing_components)"
    return 1
  fi
  if [[ -n "$before" ]] && systemctl is-active --quiet slurmd; then
    # slurmd reads plugstack.conf (and with it pyxis) only at its start.
    systemctl restart slurmd
  fi
  sync_slurm_state || return 1
  systemctl disable --now fm-components-retry.timer
  echo "node_components: every component is in place on ${ROLE}"
}

case "$COMMAND" in
  schedule) schedule ;;
  retry) retry_components ;;
  sync) sync_slurm_state ;;
  *)
    echo "node_components: unknown command ${COMMAND}" >&2
    exit 2
    ;;
esac
