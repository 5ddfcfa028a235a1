#!/usr/bin/env bash
# Entry point HyperPod runs on every node at creation (LifeCycleConfig.OnCreate).
#
# Reads provisioning_parameters.json (written next to this script at deploy time) and HyperPod's
# resource configuration ($SAGEMAKER_RESOURCE_CONFIG_PATH, by default
# /opt/ml/config/resource_config.json). Every step is idempotent, so the script can run again on
# the same node (UpdateClusterSoftware, a replaced node, a retried creation).
#
# Every node first holds the packages an unattended upgrade must not move (hotfix.sh).
# Slurm nodes, in order:
#   1. wait for DNS to settle (HyperPod's agent restarts systemd-resolved while nodes boot);
#   2. find this node's address by route lookup (with retries) and with it its group and role;
#   3. the NCCL/EFA environment (nccl_env.sh);
#   4. FSx for Lustre, retried and verified, remounted at boot (mount_fsx.sh);
#   5. the steps that need the shared file system, in after_fsx.d/*.sh (name order), each
#      called as `bash <step> <role> <group> <params>`: the cluster's users with their homes
#      and SSH keys on it (10-users.sh), the data repository directories open to them
#      (20-shared-dirs.sh), the job scripts (50-job-scripts.sh);
#   6. containers: Docker and enroot data on the NVMe, the pyxis SPANK plugin (containers.sh);
#      what cannot be fetched or built is recorded, not fatal;
#   7. Slurm for this node's role, with accounting on the controller (setup_slurm.sh);
#   8. a worker that lacks enroot or pyxis is drained with a reason naming it, and a timer
#      retries the component until it is in place, then resumes the node (node_components.sh);
#   9. metrics, off the critical path: a timer installs the exporters and retries until they
#      are in place (metrics.sh), so an exporter that cannot be fetched never fails the node.
# EKS nodes: containerd and kubelet state on the large local volume (node_storage.sh); with an
# EFA-enabled file system, the node's instance group found as a Slurm node finds it (step 2)
# and LNet over EFA configured before kubelet mounts the file system (lnet_efa_eks.sh); the
# cluster's add-ons do the rest.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
PARAMS="${SCRIPT_DIR}/provisioning_parameters.json"
load_params
RESOURCE_CONFIG="${SAGEMAKER_RESOURCE_CONFIG_PATH:-${FM_ROOT}/opt/ml/config/resource_config.json}"
LOG_DIR="${FM_ROOT}/var/log/fm-provision"
DNS_SETTLE_TIMEOUT="${DNS_SETTLE_TIMEOUT:-180}"
ADDRESS_ATTEMPTS="${ADDRESS_ATTEMPTS:-7}"
mkdir -p "${LOG_DIR}"
exec > >(tee -a "${LOG_DIR}/on_create.log") 2>&1

WORKLOAD_MANAGER="$(param workload_manager)"
echo "on_create: workload manager ${WORKLOAD_MANAGER}, resource configuration ${RESOURCE_CONFIG}"
bash "${SCRIPT_DIR}/hotfix.sh"

wait_for_dns() {
  # Resolve a name the node needs (the file system, else the regional S3 endpoint) three times
  # in a row, 2 s apart: one answer can come just before systemd-resolved is restarted.
  local name waited=0 streak=0
  name="$(param fsx.dns_name)"
  [[ -n "$name" ]] || name="s3.$(param region).amazonaws.com"
  while ((streak < 3)); do
    if getent hosts "$name" > /dev/null; then
      streak=$((streak + 1))
    else
      streak=0
      if ((waited >= DNS_SETTLE_TIMEOUT)); then
        echo "on_create: ${name} does not resolve after ${waited}s; continuing" >&2
        return 0
      fi
    fi
    sleep 2
    waited=$((waited + 2))
  done
  echo "on_create: DNS settled (${name} resolves)"
}

route_address() {
  # The source address of the route the node uses for VPC traffic, as HyperPod's own node
  # detection does it (no packet is sent); false while there is no such route.
  local address
  address="$(ip -4 route get 10.254.254.254 2> /dev/null \
    | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')" || true
  [[ -n "$address" ]] && echo "$address"
}

node_addresses() {
  # This node's candidate addresses, the route lookup's first (retried while the network comes
  # up), then every other local IPv4 address (nodes carry extra interfaces).
  {
    retry "$ADDRESS_ATTEMPTS" 5 route_address \
      || log "no route to the VPC; trying every local address"
    hostname -I | tr ' ' '\n'
  } | awk 'NF && !seen[$0]++'
}

address_args() {
  # ADDRESS_ARGS: --local-ip <address> for each of this node's candidate addresses.
  ADDRESS_ARGS=()
  local address
  while read -r address; do
    ADDRESS_ARGS+=(--local-ip "$address")
  done < <(node_addresses)
}

if [[ "$WORKLOAD_MANAGER" == "eks" ]]; then
  bash "${SCRIPT_DIR}/node_storage.sh"
  if [[ "$(param fsx.efa_enabled)" == "true" ]]; then
    # This node's instance group, as the Slurm nodes find theirs (empty when the resource
    # configuration is missing or does not list this node: lnet_efa_eks.sh says so).
    GROUP=""
    if [[ -f "$RESOURCE_CONFIG" ]]; then
      address_args
      GROUP="$(python3 "${SCRIPT_DIR}/slurm_config.py" group --params "$PARAMS" \
        --resource-config "$RESOURCE_CONFIG" "${ADDRESS_ARGS[@]}")" || GROUP=""
    fi
    echo "on_create: group=${GROUP:-(unknown)}"
    bash "${SCRIPT_DIR}/lnet_efa_eks.sh" "$GROUP" "$PARAMS"
  fi
  echo "on_create: done"
  exit 0
fi

wait_for_dns
address_args
NODE="$(python3 "${SCRIPT_DIR}/slurm_config.py" node --params "$PARAMS" \
  --resource-config "$RESOURCE_CONFIG" "${ADDRESS_ARGS[@]}")"
GROUP="${NODE% *}"
ROLE="${NODE##* }"
echo "on_create: group=${GROUP} role=${ROLE}"

bash "${SCRIPT_DIR}/nccl_env.sh"

FSX_DNS="$(param fsx.dns_name)"
if [[ -n "$FSX_DNS" ]]; then
  bash "${SCRIPT_DIR}/mount_fsx.sh" "$FSX_DNS" "$(param fsx.mount_name)" \
    "$(param fsx.mount_point)" "$(param fsx.efa_enabled)" "$(group_param "$GROUP" instance_type)" \
    "$(group_param "$GROUP" lnet_efa_interfaces)"
  # Steps that need the shared file system (users and their homes, job templates).
  for step in "${SCRIPT_DIR}"/after_fsx.d/*.sh; do
    [[ -e "$step" ]] || continue
    echo "on_create: running $(basename "$step")"
    bash "$step" "$ROLE" "$GROUP" "$PARAMS"
  done
fi

bash "${SCRIPT_DIR}/containers.sh" "$ROLE"
bash "${SCRIPT_DIR}/setup_slurm.sh" "$ROLE" "$GROUP" "$PARAMS" "$RESOURCE_CONFIG"
bash "${SCRIPT_DIR}/node_components.sh" schedule "$ROLE" "$PARAMS"

if [[ -n "$(param prometheus.remote_write_url)" ]]; then
  bash "${SCRIPT_DIR}/metrics.sh" schedule "$ROLE" "$GROUP" "$PARAMS"
fi
echo "on_create: done"
