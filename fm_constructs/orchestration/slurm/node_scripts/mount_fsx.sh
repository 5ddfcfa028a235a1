#!/usr/bin/env bash
# Mount FSx for Lustre:
#   mount_fsx.sh <dns-name> <mount-name> <mount-point> <efa-enabled> [<instance-type>
#                [<efa-interfaces>]]  (0: no LNet over EFA, the type is no FSx EFA client)
#
# - With an EFA-enabled file system and an EFA node, LNet is configured as the FSx for Lustre
#   guide's EFA client procedure does (configure-efa-clients.html): the EFA LND bound to the
#   primary interface, a tcp network on it (the mount names the TCP NID), then an efa network
#   on <efa-interfaces> EFA devices (the guide's figure for the instance type, within the
#   node's share of the file system's EFA connections; see lnet_efa.sh), discovery on and EFA
#   preferred. The same
#   configuration is installed as fm-lnet-efa (a script and a oneshot unit ordered before
#   remote file systems), so LNet comes back over EFA after a reboot instead of silently
#   falling back to TCP.
# - The Lustre client is tuned as the FSx guide recommends for the node's size (lustre_tune.sh:
#   module options before the modules load, `lctl set_param` once mounted and, through
#   fm-lustre-tune.service, again every time the file system is mounted).
# - The mount is retried and verified by writing and removing a file on it.
# - /etc/fstab gets one entry, mounted on demand (x-systemd.automount) once the network is
#   online (and, with EFA, once fm-lnet-efa has run).
# Idempotent: a second run leaves one fstab entry and does not remount.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
DNS_NAME="$1"
MOUNT_NAME="$2"
MOUNT_POINT="${3:-/fsx}"
EFA_ENABLED="${4:-false}"
INSTANCE_TYPE="${5:-}"
EFA_INTERFACES="${6:-}"
MOUNT_ATTEMPTS="${MOUNT_ATTEMPTS:-5}"
LNET_SCRIPT=/usr/local/sbin/fm-lnet-efa
LNET_UNIT=fm-lnet-efa.service
TUNE_SCRIPT=/usr/local/sbin/fm-lustre-tune
TUNE_UNIT=fm-lustre-tune.service

efa_devices() {
  local device
  for device in "${FM_ROOT}"/sys/class/infiniband/*; do
    [[ -e "$device" ]] && basename "$device"
  done
  return 0
}

install_lnet_efa() {
  # Install and run fm-lnet-efa; false when this node cannot use LNet over EFA.
  if [[ "$EFA_INTERFACES" == "0" ]]; then
    # 0 from the provisioning parameters: FSx takes no EFA client of this type (trn2).
    echo "mount_fsx: ${INSTANCE_TYPE:-this node} is no EFA client of FSx for Lustre; Lustre stays on TCP"
    return 1
  fi
  if [[ -z "$(efa_devices)" ]]; then
    echo "mount_fsx: no EFA device on this node; Lustre stays on TCP"
    return 1
  fi
  if ! modinfo kefalnd > /dev/null 2>&1; then
    echo "mount_fsx: this Lustre client has no EFA LND (kefalnd); Lustre stays on TCP"
    return 1
  fi
  install -D -m 0755 "${SCRIPT_DIR}/lnet_efa.sh" "${FM_ROOT}${LNET_SCRIPT}"
  local changed
  changed="$(install_unit "$LNET_UNIT" "[Unit]
Description=fm-constructs: LNet over EFA for FSx for Lustre
Wants=network-online.target
After=network-online.target
Before=remote-fs-pre.target
Wants=remote-fs-pre.target

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=${LNET_SCRIPT} ${INSTANCE_TYPE:-unknown} ${EFA_INTERFACES:-0}

[Install]
WantedBy=remote-fs.target")"
  [[ -z "$changed" ]] || systemctl daemon-reload
  systemctl enable "$LNET_UNIT"
  bash "${FM_ROOT}${LNET_SCRIPT}" "${INSTANCE_TYPE:-unknown}" "${EFA_INTERFACES:-0}"
}

mount_unit() {
  # The systemd mount unit of a path (systemd-escape --path --suffix=mount, for the characters
  # a mount point here may hold: letters, digits, '_', '.', '-' and '/').
  local path="${1#/}"
  path="${path%/}"
  path="${path//-/\\x2d}"
  printf '%s.mount\n' "${path//\//-}"
}

install_tuning() {
  # The tuning script, its module options now (before LNet or Lustre load), and the unit that
  # sets the client parameters each time the file system is mounted: /fsx is mounted on demand
  # (x-systemd.automount), so the unit hangs off the mount unit rather than pulling it in.
  local changed unit
  unit="$(mount_unit "$MOUNT_POINT")"
  install -D -m 0755 "${SCRIPT_DIR}/lustre_tune.sh" "${FM_ROOT}${TUNE_SCRIPT}"
  bash "${FM_ROOT}${TUNE_SCRIPT}" modules
  changed="$(install_unit "$TUNE_UNIT" "[Unit]
Description=FSx for Lustre client tuning at ${MOUNT_POINT} (fm-constructs)
After=${unit}

[Service]
# Inactive once it has run, so the next mount of the file system starts it again.
Type=oneshot
ExecStart=${TUNE_SCRIPT} mounted

[Install]
WantedBy=${unit}")"
  [[ -z "$changed" ]] || systemctl daemon-reload
  systemctl enable "$TUNE_UNIT"
}

mount_and_check() {
  if ! is_mounted "$MOUNT_POINT"; then
    mount -t lustre -o relatime,flock "${DNS_NAME}@tcp:/${MOUNT_NAME}" "${FM_ROOT}${MOUNT_POINT}" \
      || return 1
  fi
  local probe
  probe="${FM_ROOT}${MOUNT_POINT}/.fm-mount-check-$(hostname)"
  touch "$probe" && rm -f "$probe"
}

write_fstab() {
  local options="defaults,relatime,flock,_netdev,x-systemd.automount"
  options+=",x-systemd.requires=network-online.target,x-systemd.after=network-online.target"
  if [[ "$1" == "efa" ]]; then
    options+=",x-systemd.requires=${LNET_UNIT},x-systemd.after=${LNET_UNIT}"
  fi
  local fstab="${FM_ROOT}/etc/fstab" entry
  entry="${DNS_NAME}@tcp:/${MOUNT_NAME} ${MOUNT_POINT} lustre ${options} 0 0"
  mkdir -p "$(dirname "$fstab")"
  touch "$fstab"
  # Keep every other entry; replace ours (a re-run or a changed file system).
  awk -v point="$MOUNT_POINT" '!($2 == point && $3 == "lustre")' "$fstab" > "${fstab}.fm-new"
  echo "$entry" >> "${fstab}.fm-new"
  cat "${fstab}.fm-new" > "$fstab"
  rm -f "${fstab}.fm-new"
}

install_tuning
TRANSPORT=tcp
if [[ "$EFA_ENABLED" == "true" ]] && install_lnet_efa; then
  TRANSPORT=efa
fi
modprobe lustre
mkdir -p "${FM_ROOT}${MOUNT_POINT}"
retry "$MOUNT_ATTEMPTS" 5 mount_and_check
bash "${FM_ROOT}${TUNE_SCRIPT}" mounted \
  || echo "mount_fsx: client tuning failed; ${TUNE_UNIT} runs it again at the next mount" >&2
write_fstab "$TRANSPORT"
systemctl daemon-reload
echo "mount_fsx: ${MOUNT_NAME} mounted at ${MOUNT_POINT} (LNet over ${TRANSPORT})"
