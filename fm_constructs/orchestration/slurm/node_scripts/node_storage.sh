#!/usr/bin/env bash
# EKS nodes: keep containerd and kubelet state off the root volume.
#
# /var/lib/containerd (images, snapshots) and /var/lib/kubelet (pod volumes, ephemeral storage)
# become bind mounts of directories on the instance group's extra EBS volume (/opt/sagemaker,
# which HyperPod mounts and which survives reboots and software updates) or, without it, on
# the local NVMe (/opt/dlami/nvme). Mount units (var-lib-containerd.mount,
# var-lib-kubelet.mount) recreate the binds at boot, and drop-ins order containerd and kubelet
# after them (RequiresMountsFor), so large images never fill the root disk (DiskPressure).
# What the AMI already put in those directories (the pause image) is copied across first, with
# the daemons stopped while it is copied. Idempotent: binds in place are left as they are.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
DISK_WAIT="${DISK_WAIT:-60}"

DISK="$(wait_for "$DISK_WAIT" 5 first_mounted /opt/sagemaker /opt/dlami/nvme || true)"
if [[ -z "$DISK" ]]; then
  echo "node_storage: no extra volume or NVMe mounted; containerd and kubelet stay on the root volume" >&2
  exit 0
fi

RESTART=()
for daemon in kubelet containerd; do
  if systemctl is-active --quiet "$daemon"; then
    RESTART=("$daemon" "${RESTART[@]}")
  fi
done

CHANGED=""
for name in containerd kubelet; do
  state="/var/lib/${name}"
  target="${DISK}/${name}"
  unit="var-lib-${name}.mount"
  if is_mounted "$state"; then
    echo "node_storage: ${state} is already a mount"
    continue
  fi
  if ((${#RESTART[@]})); then
    systemctl stop "${RESTART[@]}"
  fi
  mkdir -p "${FM_ROOT}${target}" "${FM_ROOT}${state}"
  if [[ -z "$(ls -A "${FM_ROOT}${target}")" ]]; then
    cp -a "${FM_ROOT}${state}/." "${FM_ROOT}${target}/"
  fi
  CHANGED+="$(install_unit "$unit" "[Unit]
Description=fm-constructs: ${name} state on ${DISK}
RequiresMountsFor=${DISK}
Before=containerd.service kubelet.service

[Mount]
What=${target}
Where=${state}
Type=none
Options=bind

[Install]
WantedBy=local-fs.target")"
  CHANGED+="$(install_unit "${name}.service.d/fm-state.conf" "[Unit]
RequiresMountsFor=${state}")"
done
if [[ -n "$CHANGED" ]]; then
  systemctl daemon-reload
fi
systemctl enable var-lib-containerd.mount var-lib-kubelet.mount
systemctl start var-lib-containerd.mount var-lib-kubelet.mount
if ((${#RESTART[@]})); then
  systemctl start "${RESTART[@]}"
fi
echo "node_storage: containerd and kubelet state on ${DISK}"
