#!/usr/bin/env bash
# Start Slurm on this node: setup_slurm.sh <role> <group> <params> <resource-config>
#
# HyperPod's agent owns slurm.conf: it writes the controller, nodes and partitions from
# provisioning_parameters.json (controller_group, login_group, worker_groups) on the controller
# and rewrites it as nodes join, leave or are replaced, and it sets up munge. So nothing here
# renders nodes or partitions. The controller waits until the agent's slurm.conf names a
# controller address, then:
# - sets up accounting (slurmdbd with MariaDB on the controller, accounting.sh) and, when a
#   worker group has GPUs, GresTypes=gpu, both in accounting.conf (which slurm.conf includes;
#   see slurm_includes.sh below);
# - writes gres.conf with AutoDetect=nvml, only when the AMI's Slurm has the NVML GPU plugin
#   (a Slurm built without it cannot start slurmd with that setting);
# - the job hooks (GPU health check before a job, /dev/shm cleanup after it) and Slurm log
#   rotation (slurm_hooks.sh; workers install the hooks too, since slurmd runs them);
# - keeps slurm.conf including accounting.conf and fm-hooks.conf, now, before every slurmctld
#   start and whenever the agent writes the file anew (slurm_includes.sh, installed as
#   fm-slurm-includes with fm-slurm-includes.path);
# - (re)starts slurmctld.
# Workers and the login node run slurmd in configless mode: it fetches slurm.conf, gres.conf
# and plugstack.conf from the controller (--conf-server), so every node sees the agent's
# current configuration.
set -euo pipefail

ROLE="$1"
GROUP="$2"
PARAMS="$3"
RESOURCE_CONFIG="$4"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
load_params
SLURM_ETC="${FM_ROOT}${SLURM_PREFIX}/etc"
SLURM_CONF_TIMEOUT="${SLURM_CONF_TIMEOUT:-900}"

slurm_config() {
  python3 "${SCRIPT_DIR}/slurm_config.py" "$@" --params "$PARAMS" \
    --resource-config "$RESOURCE_CONFIG"
}

CONTROLLERS="$(slurm_config controllers)"
echo "setup_slurm: controller address(es) ${CONTROLLERS}"

wait_for_slurm_conf() {
  if ! wait_for "$SLURM_CONF_TIMEOUT" 5 \
    slurm_config slurm-conf-ready --slurm-conf "${SLURM_ETC}/slurm.conf"; then
    echo "setup_slurm: ${SLURM_ETC}/slurm.conf names no controller after ${FM_WAITED}s" >&2
    return 1
  fi
  echo "setup_slurm: HyperPod wrote ${SLURM_ETC}/slurm.conf (after ${FM_WAITED}s)"
}

write_gres_conf() {
  local nvml
  nvml="$(slurm_config gres --slurm-lib "${FM_ROOT}${SLURM_PREFIX}/lib/slurm")"
  if [[ -z "$nvml" ]]; then
    echo "setup_slurm: no gres.conf (no GPU worker group, or this Slurm has no NVML plugin)"
    return 0
  fi
  if [[ -s "${SLURM_ETC}/gres.conf" ]]; then
    echo "setup_slurm: keeping the existing ${SLURM_ETC}/gres.conf"
    return 0
  fi
  printf '%s\n' "$nvml" > "${SLURM_ETC}/gres.conf"
  chmod 0644 "${SLURM_ETC}/gres.conf"
  echo "setup_slurm: wrote ${SLURM_ETC}/gres.conf"
}

INCLUDES_SCRIPT=/usr/local/sbin/fm-slurm-includes

keep_includes() {
  # Install the include guard, run it, and have systemd run it again before slurmctld starts
  # (a failure there is logged and never keeps slurmctld down: ExecStartPre=-) and each time
  # slurm.conf changes.
  local changed=""
  install -D -m 0755 "${SCRIPT_DIR}/slurm_includes.sh" "${FM_ROOT}${INCLUDES_SCRIPT}"
  changed+="$(install_unit fm-slurm-includes.service "[Unit]
Description=Keep slurm.conf including the fm-constructs Slurm settings

[Service]
Type=oneshot
ExecStart=${INCLUDES_SCRIPT} --reconfigure")"
  changed+="$(install_unit fm-slurm-includes.path "[Unit]
Description=Watch slurm.conf for rewrites by HyperPod's agent

[Path]
PathChanged=${SLURM_PREFIX}/etc/slurm.conf
Unit=fm-slurm-includes.service

[Install]
WantedBy=multi-user.target")"
  changed+="$(install_unit slurmctld.service.d/fm-includes.conf "[Service]
ExecStartPre=-${INCLUDES_SCRIPT}")"
  [[ -z "$changed" ]] || systemctl daemon-reload
  bash "${FM_ROOT}${INCLUDES_SCRIPT}"
  systemctl enable --now fm-slurm-includes.path
}

start_configless_slurmd() {
  # slurmd's unit passes $SLURMD_OPTIONS to the daemon; point it at the controller(s).
  local servers changed
  servers="$(tr ' ' ',' <<< "$CONTROLLERS")"
  changed="$(install_unit slurmd.service.d/fm-conf-server.conf "[Service]
Environment=\"SLURMD_OPTIONS=--conf-server ${servers}\"")"
  [[ -z "$changed" ]] || systemctl daemon-reload
  systemctl enable slurmd
  systemctl restart slurmd
}

case "$ROLE" in
  controller)
    wait_for_slurm_conf
    GPUS="$(python3 -c 'import json,sys; print(int(any(g.get("gpus") for g in json.load(open(sys.argv[1]))["worker_groups"])))' "$PARAMS")"
    bash "${SCRIPT_DIR}/accounting.sh" "${CONTROLLERS%% *}" "$GPUS"
    write_gres_conf
    echo "setup_slurm: $(slurm_config gres-report --slurm-conf "${SLURM_ETC}/slurm.conf")"
    bash "${SCRIPT_DIR}/slurm_hooks.sh" "$ROLE" "$GROUP" "$PARAMS"
    keep_includes
    systemctl enable slurmctld
    systemctl restart slurmctld
    ;;
  worker)
    bash "${SCRIPT_DIR}/slurm_hooks.sh" "$ROLE" "$GROUP" "$PARAMS"
    start_configless_slurmd
    ;;
  login)
    # slurmd on the login node only fetches the configuration for the client commands; the
    # login node is in no partition, so the daemon itself does not register.
    start_configless_slurmd || echo "setup_slurm: slurmd on the login node did not start"
    ;;
  *)
    echo "setup_slurm: unknown role ${ROLE}" >&2
    exit 1
    ;;
esac
echo "setup_slurm: ${ROLE} of group ${GROUP} ready"
