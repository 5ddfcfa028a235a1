#!/usr/bin/env bash
# Exporters and the metrics collector: exporters.sh <role> <group> <params>
#
# - node exporter on :9100 (every node);
# - EFA exporter on :9109 (EFA workers): a second node exporter with only the infiniband
#   collector, which reads the EFA devices' counters from /sys/class/infiniband;
# - DCGM exporter on :9400 (NVIDIA workers), the NVIDIA container, through the AMI's Docker;
# - Prometheus in agent mode, remote-writing to Amazon Managed Service for Prometheus with SigV4.
# Binaries are pinned and checked against the release's sha256 sums before they run.
set -euo pipefail

ROLE="$1"
GROUP="$2"
PARAMS="$3"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NODE_EXPORTER_VERSION="1.9.1"
PROMETHEUS_VERSION="3.5.0"
DCGM_EXPORTER_IMAGE="nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04"
INSTALL_DIR=/opt/fm-metrics
ARCH="$(uname -m | sed -e 's/x86_64/amd64/' -e 's/aarch64/arm64/')"
mkdir -p "$INSTALL_DIR"

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

if [[ "$ROLE" == "worker" ]] && worker_has efa; then
  unit fm-efa-exporter "${NODE_EXPORTER_DIR}/node_exporter" --web.listen-address=:9109 \
    --collector.disable-defaults --collector.infiniband
fi

if [[ "$ROLE" == "worker" ]] && worker_has gpus && command -v docker > /dev/null; then
  unit fm-dcgm-exporter /usr/bin/docker run --rm --name fm-dcgm-exporter --gpus all \
    --cap-add SYS_ADMIN --network host "$DCGM_EXPORTER_IMAGE"
fi

PROMETHEUS_DIR="$(fetch_release prometheus "$PROMETHEUS_VERSION")"
mkdir -p /etc/fm-metrics /var/lib/fm-prometheus-agent
python3 "${SCRIPT_DIR}/prometheus_agent_config.py" --params "$PARAMS" --role "$ROLE" \
  --group "$GROUP" --hostname "$(hostname)" > /etc/fm-metrics/prometheus-agent.yml
unit fm-prometheus-agent "${PROMETHEUS_DIR}/prometheus" --agent \
  --config.file=/etc/fm-metrics/prometheus-agent.yml \
  --storage.agent.path=/var/lib/fm-prometheus-agent --web.listen-address=127.0.0.1:9090
echo "exporters: running on ${ROLE} of group ${GROUP}"
