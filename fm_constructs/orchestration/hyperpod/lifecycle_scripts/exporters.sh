#!/usr/bin/env bash
# Exporters and the metrics collector: exporters.sh <role> <group> <params>
#
# - node exporter on :9100 (every node);
# - EFA exporter on :9109 (EFA workers): the HyperPod EFA exporter image (a node exporter build
#   with the amazonefa collector, which reads each EFA device's hw_counters and publishes
#   node_amazonefa_*; upstream node exporter's infiniband collector reads no EFA counters),
#   pulled from the HyperPod ECR registry named in the provisioning parameters;
# - DCGM exporter on :9400 (NVIDIA workers), the NVIDIA container, reading the counters list of
#   dcgm_counters.py (-f) so every field the rules and dashboards use is exported;
# - Prometheus in agent mode, remote-writing to Amazon Managed Service for Prometheus with SigV4.
# Containers run through the AMI's Docker. Binaries are pinned (versions from the provisioning
# parameters) and checked against the release's sha256 sums before they run.
set -euo pipefail

ROLE="$1"
GROUP="$2"
PARAMS="$3"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

param() {
  python3 - "$PARAMS" "$1" <<'PY'
import json, sys
print(json.load(open(sys.argv[1])).get(sys.argv[2]) or "")
PY
}

# Versions come from the provisioning parameters (the library's pins), never from this file.
NODE_EXPORTER_VERSION="$(param node_exporter_version)"
PROMETHEUS_VERSION="$(param prometheus_version)"
DCGM_EXPORTER_IMAGE="$(param dcgm_exporter_image)"
INSTALL_DIR=/opt/fm-metrics
CONFIG_DIR=/etc/fm-metrics
ARCH="$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')"
mkdir -p "$INSTALL_DIR" "$CONFIG_DIR"

fetch_release() {
  # fetch_release <project> <version>: download and verify a prometheus/<project> release.
  local project="$1" version="$2"
  local name="${project}-${version}.linux-${ARCH}"
  local base="https://github.com/prometheus/${project}/releases/download/v${version}"
  local work
  work="$(mktemp -d)"
  curl -fsSL --retry 5 -o "${work}/${name}.tar.gz" "${base}/${name}.tar.gz"
  curl -fsSL --retry 5 -o "${work}/sha256sums.txt" "${base}/sha256sums.txt"
  (cd "$work" && grep " ${name}.tar.gz\$" sha256sums.txt | sha256sum -c -)
  tar -xzf "${work}/${name}.tar.gz" -C "$INSTALL_DIR"
  rm -rf "$work"
  echo "${INSTALL_DIR}/${name}"
}

unit() {
  # unit <name> <command...>: install and start a systemd service running the command.
  local name="$1"
  shift
  cat > "/etc/systemd/system/${name}.service" <<UNIT
[Unit]
Description=fm-constructs ${name}
After=network-online.target
Wants=network-online.target

[Service]
ExecStart=$*
Restart=always
RestartSec=5

[Install]
WantedBy=multi-user.target
UNIT
  systemctl daemon-reload
  systemctl enable --now "${name}.service"
}

worker_has() {
  # worker_has <key>: true when this node's worker group has a truthy <key> (gpus, efa).
  python3 - "$PARAMS" "$GROUP" "$1" <<'PY'
import json, sys
params = json.load(open(sys.argv[1]))
groups = [g for g in params.get("worker_groups", []) if g["instance_group_name"] == sys.argv[2]]
sys.exit(0 if groups and groups[0].get(sys.argv[3]) else 1)
PY
}

NODE_EXPORTER_DIR="$(fetch_release node_exporter "$NODE_EXPORTER_VERSION")"
unit fm-node-exporter "${NODE_EXPORTER_DIR}/node_exporter" --web.listen-address=:9100

pull_efa_exporter() {
  # pull_efa_exporter <image>: log in to the image's ECR registry with the node's role and pull.
  local image="$1" registry="${1%%/*}" region attempt
  region="$(param region)"
  for attempt in 1 2 3 4 5; do
    if aws ecr get-login-password --region "$region" \
      | docker login --username AWS --password-stdin "$registry" \
      && docker pull "$image"; then
      return 0
    fi
    echo "exporters: pulling ${image} failed (attempt ${attempt})" >&2
    sleep $((attempt * 10))
  done
  return 1
}

if [[ "$ROLE" == "worker" ]] && worker_has efa && command -v docker > /dev/null; then
  EFA_EXPORTER_IMAGE="$(param efa_exporter_image)"
  if [[ -n "$EFA_EXPORTER_IMAGE" ]] && pull_efa_exporter "$EFA_EXPORTER_IMAGE"; then
    unit fm-efa-exporter /usr/bin/docker run --rm --name fm-efa-exporter --network host \
      --pid host -v /:/host:ro,rslave "$EFA_EXPORTER_IMAGE" --path.rootfs=/host \
      --web.listen-address=:9109 --collector.disable-defaults --collector.amazonefa
  else
    echo "exporters: no EFA exporter on this node (image unavailable)" >&2
  fi
fi

if [[ "$ROLE" == "worker" ]] && worker_has gpus && command -v docker > /dev/null; then
  python3 "${SCRIPT_DIR}/dcgm_counters.py" > "${CONFIG_DIR}/dcgm-counters.csv"
  unit fm-dcgm-exporter /usr/bin/docker run --rm --name fm-dcgm-exporter --gpus all \
    --cap-add SYS_ADMIN --network host \
    -v "${CONFIG_DIR}/dcgm-counters.csv:/etc/dcgm-exporter/fm-counters.csv:ro" \
    "$DCGM_EXPORTER_IMAGE" -f /etc/dcgm-exporter/fm-counters.csv
fi

PROMETHEUS_DIR="$(fetch_release prometheus "$PROMETHEUS_VERSION")"
mkdir -p /var/lib/fm-prometheus-agent
python3 "${SCRIPT_DIR}/prometheus_agent_config.py" --params "$PARAMS" --role "$ROLE" \
  --group "$GROUP" --hostname "$(hostname)" > "${CONFIG_DIR}/prometheus-agent.yml"
unit fm-prometheus-agent "${PROMETHEUS_DIR}/prometheus" --agent \
  --config.file="${CONFIG_DIR}/prometheus-agent.yml" \
  --storage.agent.path=/var/lib/fm-prometheus-agent --web.listen-address=127.0.0.1:9090
echo "exporters: running on ${ROLE} of group ${GROUP}"
