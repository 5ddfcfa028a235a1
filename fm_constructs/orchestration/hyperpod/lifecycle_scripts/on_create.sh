#!/usr/bin/env bash
# Entry point HyperPod runs on every node at creation (LifeCycleConfig.OnCreate).
#
# Reads provisioning_parameters.json (written next to this script at deploy time) and HyperPod's
# /opt/ml/config/resource_config.json, then: sets the NCCL/EFA environment, mounts FSx for
# Lustre (over EFA when the file system has EFA enabled), starts Slurm for this node's role once
# HyperPod's agent has written slurm.conf (Slurm clusters only), and starts the exporters and the
# Prometheus agent.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PARAMS="${SCRIPT_DIR}/provisioning_parameters.json"
RESOURCE_CONFIG="${RESOURCE_CONFIG:-/opt/ml/config/resource_config.json}"
LOG_DIR=/var/log/fm-provision
mkdir -p "${LOG_DIR}"
exec > >(tee -a "${LOG_DIR}/on_create.log") 2>&1

param() {
  # Print one value of the provisioning parameters (empty for null/missing).
  python3 - "$PARAMS" "$1" <<'PY'
import json, sys
value = json.load(open(sys.argv[1]))
for key in sys.argv[2].split("."):
    value = value.get(key) if isinstance(value, dict) else None
print("" if value is None else (str(value).lower() if isinstance(value, bool) else value))
PY
}

LOCAL_IP="$(hostname -I | awk '{print $1}')"
WORKLOAD_MANAGER="$(param workload_manager)"
GROUP="$(python3 "${SCRIPT_DIR}/slurm_config.py" group --params "$PARAMS" \
  --resource-config "$RESOURCE_CONFIG" --local-ip "$LOCAL_IP")"
if [[ "$WORKLOAD_MANAGER" == "slurm" ]]; then
  ROLE="$(python3 "${SCRIPT_DIR}/slurm_config.py" role --params "$PARAMS" \
    --resource-config "$RESOURCE_CONFIG" --local-ip "$LOCAL_IP")"
else
  ROLE=worker
fi
echo "fm-constructs lifecycle: group=${GROUP} role=${ROLE} manager=${WORKLOAD_MANAGER}"

bash "${SCRIPT_DIR}/nccl_env.sh"

FSX_DNS="$(param fsx.dns_name)"
if [[ -n "$FSX_DNS" ]]; then
  bash "${SCRIPT_DIR}/mount_fsx.sh" "$FSX_DNS" "$(param fsx.mount_name)" \
    "$(param fsx.mount_point)" "$(param fsx.efa_enabled)"
fi

if [[ "$WORKLOAD_MANAGER" == "slurm" ]]; then
  bash "${SCRIPT_DIR}/setup_slurm.sh" "$ROLE" "$GROUP" "$PARAMS" "$RESOURCE_CONFIG"
fi

if [[ -n "$(param prometheus.remote_write_url)" ]]; then
  bash "${SCRIPT_DIR}/exporters.sh" "$ROLE" "$GROUP" "$PARAMS"
fi
echo "fm-constructs lifecycle: done"
