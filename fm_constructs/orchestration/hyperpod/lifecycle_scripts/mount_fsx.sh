#!/usr/bin/env bash
# Mount FSx for Lustre: mount_fsx.sh <dns-name> <mount-name> <mount-point> <efa-enabled>
#
# With an EFA-enabled file system, LNet is first configured as the FSx for Lustre guide's EFA
# client procedure does: the EFA LND (kefalnd, bound to the primary interface) and the socket
# LND are loaded, a "tcp" network is added on the primary interface (the mount names the file
# system's TCP NID, which clients use to discover it), then an "efa" network on the node's EFA
# devices, with discovery on and EFA preferred over TCP, so Lustre data bypasses the kernel TCP
# stack. Without kefalnd (a Lustre client without EFA support) the mount stays on TCP.
set -euo pipefail

DNS_NAME="$1"
MOUNT_NAME="$2"
MOUNT_POINT="${3:-/fsx}"
EFA_ENABLED="${4:-false}"

if mountpoint -q "$MOUNT_POINT"; then
  echo "mount_fsx: ${MOUNT_POINT} is already mounted"
  exit 0
fi

configure_lnet_efa() {
  local devices=()
  local device
  for device in /sys/class/infiniband/*; do
    [[ -e "$device" ]] && devices+=("$(basename "$device")")
  done
  if [[ ${#devices[@]} -eq 0 ]]; then
    echo "mount_fsx: no EFA device found; mounting over TCP"
    return 0
  fi
  if ! modinfo kefalnd > /dev/null 2>&1; then
    echo "mount_fsx: this Lustre client has no EFA LND (kefalnd); mounting over TCP"
    return 0
  fi
  local primary
  primary="$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')"
  if [[ -z "$primary" ]]; then
    echo "mount_fsx: no primary interface found; mounting over TCP"
    return 0
  fi
  modprobe lnet
  modprobe kefalnd ipif_name="$primary"
  modprobe ksocklnd
  lnetctl lnet configure
  lnetctl net del --net tcp 2> /dev/null || true
  lnetctl net add --net tcp --if "$primary"
  for device in "${devices[@]}"; do
    lnetctl net add --net efa --if "$device" --peer-credits 32
  done
  lnetctl set discovery 1
  lnetctl udsp add --src efa --priority 0
  echo "mount_fsx: LNet tcp on ${primary}, efa on ${devices[*]}"
}

if [[ "$EFA_ENABLED" == "true" ]]; then
  configure_lnet_efa
fi
modprobe lustre
mkdir -p "$MOUNT_POINT"
mount -t lustre -o relatime,flock "${DNS_NAME}@tcp:/${MOUNT_NAME}" "$MOUNT_POINT"
chmod 1777 "$MOUNT_POINT"
if ! grep -q " ${MOUNT_POINT} lustre " /etc/fstab; then
  echo "${DNS_NAME}@tcp:/${MOUNT_NAME} ${MOUNT_POINT} lustre defaults,relatime,flock,_netdev,x-systemd.automount,x-systemd.requires=network.service 0 0" >> /etc/fstab
fi
echo "mount_fsx: mounted ${MOUNT_NAME} at ${MOUNT_POINT}"
