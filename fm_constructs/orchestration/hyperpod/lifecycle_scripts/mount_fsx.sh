#!/usr/bin/env bash
# Mount FSx for Lustre: mount_fsx.sh <dns-name> <mount-name> <mount-point> <efa-enabled>
#
# With an EFA-enabled file system, LNet is first configured on the node's EFA devices (network
# "efa", discovery on, EFA preferred over TCP) so Lustre traffic bypasses the kernel TCP stack;
# the mount itself always names the file system's TCP NID, which clients use to discover it.
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
  modprobe lnet
  lnetctl lnet configure
  for device in "${devices[@]}"; do
    lnetctl net add --net efa --if "$device" --peer-credits 32
  done
  lnetctl set discovery 1
  lnetctl udsp add --src efa --priority 0
  echo "mount_fsx: LNet over EFA on ${devices[*]}"
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
