#!/usr/bin/env bash
# The instance-store NVMe disks as one XFS volume at /opt/dlami/nvme, at every boot.
#
# Instance-store disks keep their data across a reboot and come back blank after a stop and
# start (or a move to a new host), so a volume made once at first boot and listed in
# /etc/fstab is gone after the first stop/start. fm-nvme-raid0.service runs this at every
# boot, before the services that keep state on the volume:
#   * the path is already mounted (the AMI mounted its own instance store): nothing to do;
#   * one disk is used as it is; several become one RAID0 array, taken as it is when the
#     kernel already assembled it, assembled from its members when they carry its superblock
#     (reboot), created anew when they are blank (first boot, stop/start);
#   * an XFS file system on the volume is kept (reboot); without one, one is made.
# FM_NVME_DISKS is how many disks the instance type has: the script waits up to
# FM_NVME_WAIT_SECONDS for the kernel to show them all. FM_ROOT prefixes every file path
# (empty on a node).
set -euo pipefail

FM_ROOT="${FM_ROOT:-}"
MOUNT_PATH="${FM_NVME_MOUNT_PATH:-/opt/dlami/nvme}"
EXPECTED="${FM_NVME_DISKS:-0}"
WAIT_SECONDS="${FM_NVME_WAIT_SECONDS:-60}"
ARRAY=/dev/md/fm-nvme
MODEL="Amazon EC2 NVMe Instance Storage"

log() { echo "fm-nvme-raid0: $*" >&2; }

instance_store_disks() {
  lsblk -dpno NAME,MODEL | awk -v model="$MODEL" 'index($0, model) { print $1 }'
}

wait_for_disks() {
  local waited=0 count
  while :; do
    count="$(instance_store_disks | wc -l)"
    if ((count >= EXPECTED || waited >= WAIT_SECONDS)); then
      return 0
    fi
    sleep 2
    waited=$((waited + 2))
  done
}

# The md device the kernel already runs over the disk (udev assembles arrays it recognises
# at boot), or nothing.
running_array() {
  lsblk -pno NAME,TYPE "$1" | awk '$2 ~ /^raid/ { print $1; exit }'
}

create_array() {
  mdadm --stop "$ARRAY" > /dev/null 2>&1 || true
  log "creating a RAID0 array of ${#disks[@]} disks: ${disks[*]}"
  mdadm --create "$ARRAY" --level=0 --raid-devices="${#disks[@]}" --run "${disks[@]}"
}

mount_dir="${FM_ROOT}${MOUNT_PATH}"
if mountpoint -q "$mount_dir"; then
  log "${MOUNT_PATH} is already mounted"
  exit 0
fi
wait_for_disks
mapfile -t disks < <(instance_store_disks)
if ((${#disks[@]} == 0)); then
  log "no instance-store disks"
  exit 0
fi
if ((${#disks[@]} < EXPECTED)); then
  log "found ${#disks[@]} of ${EXPECTED} instance-store disks after ${WAIT_SECONDS} s; using those"
fi

volume="${disks[0]}"
if ((${#disks[@]} > 1)); then
  volume="$(running_array "${disks[0]}")"
  if [[ -z "$volume" ]]; then
    volume="$ARRAY"
    if mdadm --examine "${disks[0]}" > /dev/null 2>&1; then
      log "assembling the RAID0 array from ${disks[*]}"
      mdadm --assemble "$ARRAY" "${disks[@]}" || create_array
    else
      create_array
    fi
  fi
fi

if [[ "$(blkid -o value -s TYPE "$volume" || true)" != xfs ]]; then
  log "making an XFS file system on ${volume}"
  mkfs.xfs -f "$volume"
fi
mkdir -p "$mount_dir"
mount -o noatime "$volume" "$mount_dir"
chmod 1777 "$mount_dir"
log "${volume} mounted at ${MOUNT_PATH}"
