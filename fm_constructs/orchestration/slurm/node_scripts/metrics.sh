#!/usr/bin/env bash
# Exporters and the metrics collector, off the node-creation critical path:
#   metrics.sh schedule <role> <group> <params>   (on_create.sh: install the retrying installer)
#   metrics.sh install <role> <group> <params>    (fm-metrics-install.service: install what is missing)
#
# `schedule` copies what the installer needs to /opt/fm-metrics/lifecycle and enables
# fm-metrics-install.timer, which runs fm-metrics-install.service shortly after boot and every
# 10 minutes after it last ran, and starts the service without waiting for it. A download that
# fails is logged and tried again on the next run; it never fails on_create.
#
# `install` sets up, each once, and writes a unit only for what it installed:
# - node exporter on :9100 (every node), a prometheus/node_exporter release;
# - EFA exporter on :9109 (EFA workers): the HyperPod EFA exporter image (a node exporter build
#   with the amazonefa collector, publishing node_amazonefa_*), pulled from the HyperPod ECR
#   registry with the node's role;
# - DCGM exporter on :9400 (NVIDIA workers), reading the counters of dcgm_counters.py (-f);
# - Slurm exporter on :9341 (controller), a SckyzO/slurm_exporter release: job states, node
#   states per partition, GPUs allocated and idle, scheduler health, from sinfo/squeue/sdiag;
# - Prometheus in agent mode, remote-writing to Amazon Managed Service for Prometheus (SigV4).
# A release archive runs only when its sha256 is the digest the library pins for it
# (download_sha256 in the provisioning parameters, from pins.toml); one without a pinned
# digest or with another is refused and logged, and that component stays uninstalled. Versions
# come from the provisioning parameters (the library's pins).
set -euo pipefail

COMMAND="$1"
ROLE="$2"
GROUP="$3"
PARAMS="$4"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
load_params
INSTALL_DIR=/opt/fm-metrics
STAGE_DIR="${INSTALL_DIR}/lifecycle"
CONFIG_DIR=/etc/fm-metrics
DOCKER=/usr/bin/docker
SLURM_BIN="${SLURM_PREFIX}/bin"
#: GPU-to-job map of the Slurm prolog (slurm_hooks/prolog.sh), read by the DCGM exporter.
JOB_MAP_DIR=/run/fm-dcgm-jobs

schedule() {
  stage_scripts "$STAGE_DIR" metrics.sh lib.sh prometheus_agent_config.py dcgm_counters.py
  install_retrying_job fm-metrics-install docker.service \
    "install the metrics exporters and the Prometheus agent" \
    "retry the metrics installation until everything runs" 2min \
    "/bin/bash ${STAGE_DIR}/metrics.sh install ${ROLE} ${GROUP} ${STAGE_DIR}/provisioning_parameters.json"
  systemctl start --no-block fm-metrics-install.service
  echo "metrics: installation scheduled (fm-metrics-install.timer)"
}

ARCH="$(release_arch)"
FAILED=()

run_service() {
  # run_service <name> <command...>: a unit that runs the command, started now and at boot.
  local name="$1" changed
  shift
  local pre="" after="network-online.target" requires=""
  if [[ "$1" == "$DOCKER" ]]; then
    # A container unit needs the Docker daemon: started after it, and stopped with it.
    pre="ExecStartPre=-${DOCKER} rm -f ${name}"
    after="network-online.target docker.service"
    requires="Requires=docker.service"
  fi
  changed="$(install_unit "${name}.service" "[Unit]
Description=fm-constructs ${name}
Wants=network-online.target
After=${after}
${requires}

[Service]
${pre}
ExecStart=$*
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target")"
  [[ -z "$changed" ]] || systemctl daemon-reload
  systemctl enable "${name}.service"
  if [[ -n "$changed" ]]; then
    systemctl restart "${name}.service"
  else
    systemctl start "${name}.service"
  fi
}

RELEASE_DIR=""
fetch_archive() {
  # fetch_archive <url-base> <archive> <dir> <binary>: download <url-base>/<archive>, refuse it
  # unless its sha256 is the one the library pins for it (fetch_pinned: a release's own
  # sums file comes from the same place as the archive, so it is not trusted), unpack it so
  # that /opt/fm-metrics/<dir>/<binary> is the binary, and set RELEASE_DIR (path on the
  # node); false on any failure. Archives whose members are not under <dir>/ (no top-level
  # directory) are unpacked into <dir>.
  local base="$1" archive="$2" dir="$3" binary="$4" work
  RELEASE_DIR="${INSTALL_DIR}/${dir}"
  if [[ -x "${FM_ROOT}${RELEASE_DIR}/${binary}" ]]; then
    return 0
  fi
  work="$(mktemp -d)"
  if ! fetch_pinned "${base}/${archive}" "${work}/${archive}" "$archive"; then
    rm -rf "$work"
    return 1
  fi
  local target="${FM_ROOT}${INSTALL_DIR}"
  # (awk reads the whole listing: no early exit for pipefail to report as a failure)
  if ! tar -tzf "${work}/${archive}" | awk -v top="${dir}/" 'index($0, top) == 1 {found = 1}
      END {exit !found}'; then
    target="${FM_ROOT}${RELEASE_DIR}"
  fi
  mkdir -p "$target"
  if ! tar -xzf "${work}/${archive}" -C "$target" \
    || [[ ! -x "${FM_ROOT}${RELEASE_DIR}/${binary}" ]]; then
    log "${archive} holds no ${binary} binary"
    rm -rf "$work" "${FM_ROOT:?}${RELEASE_DIR:?}"
    return 1
  fi
  rm -rf "$work"
}

fetch_release() {
  # fetch_release <project> <version>: a prometheus/<project> release (archives named
  # <project>-<version>.linux-<arch>.tar.gz, with a top-level directory).
  local project="$1" version="$2"
  local name="${project}-${version}.linux-${ARCH}"
  fetch_archive "https://github.com/prometheus/${project}/releases/download/v${version}" \
    "${name}.tar.gz" "$name" "$project"
}

pull_image() {
  # pull_image <image> [ecr]: the image is local afterwards (log in to its ECR registry first).
  local image="$1" registry="${1%%/*}"
  local docker="${FM_ROOT}${DOCKER}"
  if "$docker" image inspect "$image" > /dev/null 2>&1; then
    return 0
  fi
  if [[ "${2:-}" == "ecr" ]]; then
    aws ecr get-login-password --region "$(param region)" \
      | "$docker" login --username AWS --password-stdin "$registry" || return 1
  fi
  "$docker" pull "$image"
}

install_node_exporter() {
  fetch_release node_exporter "$(param node_exporter_version)" || return 1
  run_service fm-node-exporter "${RELEASE_DIR}/node_exporter" --web.listen-address=:9100
}

install_efa_exporter() {
  local image
  image="$(param efa_exporter_image)"
  pull_image "$image" ecr || return 1
  run_service fm-efa-exporter "$DOCKER" run --rm --name fm-efa-exporter --network host --pid host \
    -v /:/host:ro,rslave "$image" --path.rootfs=/host --web.listen-address=:9109 \
    --collector.disable-defaults --collector.amazonefa
}

install_dcgm_exporter() {
  local image
  image="$(param dcgm_exporter_image)"
  pull_image "$image" || return 1
  mkdir -p "${FM_ROOT}${CONFIG_DIR}"
  python3 "${SCRIPT_DIR}/dcgm_counters.py" > "${FM_ROOT}${CONFIG_DIR}/dcgm-counters.csv"
  # The Slurm prolog maps each GPU to its job there (hpc_job label on the GPU's series).
  mkdir -p "${FM_ROOT}${JOB_MAP_DIR}"
  run_service fm-dcgm-exporter "$DOCKER" run --rm --name fm-dcgm-exporter --gpus all \
    --cap-add SYS_ADMIN --network host \
    -v "${CONFIG_DIR}/dcgm-counters.csv:/etc/dcgm-exporter/fm-counters.csv:ro" \
    -v "${JOB_MAP_DIR}:/etc/dcgm-exporter/hpc-jobs:ro" \
    "$image" -f /etc/dcgm-exporter/fm-counters.csv --hpc-job-mapping-dir /etc/dcgm-exporter/hpc-jobs
}

install_slurm_exporter() {
  # Job, node-state and scheduler metrics from the Slurm commands (sinfo, squeue, sdiag) of the
  # controller, on the port the agent scrapes; one series per partition (no feature-set label).
  local version name
  version="$(param slurm_exporter_version)"
  name="slurm_exporter-${version}-linux-${ARCH}"
  fetch_archive "https://github.com/SckyzO/slurm_exporter/releases/download/v${version}" \
    "${name}.tar.gz" "$name" slurm_exporter || return 1
  run_service fm-slurm-exporter "${RELEASE_DIR}/slurm_exporter" \
    --web.listen-address=":$(param exporter_ports.slurm)" --slurm.bin-path="${SLURM_BIN}" \
    --no-collector.nodes.feature-set --no-collector.fairshare.user-metrics \
    --web.disable-exporter-metrics
}

install_prometheus_agent() {
  fetch_release prometheus "$(param prometheus_version)" || return 1
  mkdir -p "${FM_ROOT}/var/lib/fm-prometheus-agent" "${FM_ROOT}${CONFIG_DIR}"
  python3 "${SCRIPT_DIR}/prometheus_agent_config.py" --params "$PARAMS" --role "$ROLE" \
    --group "$GROUP" --hostname "$(hostname)" > "${FM_ROOT}${CONFIG_DIR}/prometheus-agent.yml"
  run_service fm-prometheus-agent "${RELEASE_DIR}/prometheus" --agent \
    --config.file="${CONFIG_DIR}/prometheus-agent.yml" \
    --storage.agent.path=/var/lib/fm-prometheus-agent --web.listen-address=127.0.0.1:9090
}

attempt() {
  # attempt <component>: install one component, recording a failure instead of stopping.
  if "install_$1"; then
    echo "metrics: $1 running"
  else
    log "$1 is not installed yet; the next run of fm-metrics-install tries again"
    FAILED+=("$1")
  fi
}

install_all() {
  attempt node_exporter
  if [[ "$ROLE" == "controller" ]]; then
    attempt slurm_exporter
  fi
  if [[ "$ROLE" == "worker" ]]; then
    local containers=() component
    [[ "$(group_param "$GROUP" efa)" == "true" ]] && containers+=(efa_exporter)
    [[ "$(group_param "$GROUP" gpus)" =~ ^[1-9] ]] && containers+=(dcgm_exporter)
    for component in "${containers[@]}"; do
      if [[ -x "${FM_ROOT}${DOCKER}" ]]; then
        attempt "$component"
      else
        # Both run as containers: without Docker they wait for it rather than go unmentioned.
        log "${component} runs in a container and ${DOCKER} is missing; retrying later"
        FAILED+=("$component")
      fi
    done
  fi
  attempt prometheus_agent
  if ((${#FAILED[@]})); then
    log "not installed: ${FAILED[*]}"
    return 1
  fi
  echo "metrics: all exporters running on ${ROLE} of group ${GROUP}"
}

case "$COMMAND" in
  schedule) schedule ;;
  install) install_all ;;
  *)
    echo "metrics: unknown command ${COMMAND}" >&2
    exit 2
    ;;
esac
