#!/usr/bin/env bash
# LNet over EFA for FSx for Lustre: lnet_efa.sh <instance-type> [<interfaces>]
#
# Installed as /usr/local/sbin/fm-lnet-efa and run by fm-lnet-efa.service at every boot (before
# remote file systems mount) and once by mount_fsx.sh. Follows the FSx for Lustre guide's EFA
# client configuration (https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html):
# EFA LND bound to the primary interface, a tcp network on that interface, an efa network on
# <interfaces> EFA devices, discovery on, EFA preferred by UDSP. The count comes from the
# provisioning parameters (the guide's table for the instance type, within the node's share of
# the file system's 1024 EFA connections); without it, the guide's default for other types: the
# first and the last device, or the only one. Devices are taken in name order (rdmap79s0
# before rdmap113s0) and spread evenly: every fourth of the 32 on p5 for 8.
# Idempotent: an efa network that is already configured is left as it is (a new count takes
# effect at the next boot).
set -euo pipefail

FM_ROOT="${FM_ROOT:-}"
INSTANCE_TYPE="${1:-unknown}"
WANTED="${2:-0}"

# grep reads all of lnetctl's output (no -q): an early exit would fail the pipeline with
# SIGPIPE under pipefail and read as "no efa network".
if lnetctl net show --net efa 2> /dev/null | grep '@efa' > /dev/null; then
  echo "fm-lnet-efa: LNet already has an efa network"
  exit 0
fi
devices=()
while read -r device; do
  [[ -n "$device" ]] && devices+=("$device")
done < <(for path in "${FM_ROOT}"/sys/class/infiniband/*; do
  [[ -e "$path" ]] && basename "$path"
done | sort -V)
if [[ ${#devices[@]} -eq 0 ]]; then
  echo "fm-lnet-efa: no EFA device" >&2
  exit 1
fi
primary="$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')"
if [[ -z "$primary" ]]; then
  echo "fm-lnet-efa: no default route, so no primary interface" >&2
  exit 1
fi
count=${#devices[@]}
wanted="$WANTED"
((wanted > 0)) || wanted=2
((wanted > count)) && wanted="$count"
selected=()
if ((wanted == 2)); then
  selected=("${devices[0]}" "${devices[count - 1]}")
else
  for ((i = 0; i < wanted; i++)); do
    selected+=("${devices[i * count / wanted]}")
  done
fi
modprobe lnet
modprobe kefalnd ipif_name="$primary"
modprobe ksocklnd
lnetctl lnet configure
lnetctl net del --net tcp 2> /dev/null || true
lnetctl net add --net tcp --if "$primary"
for device in "${selected[@]}"; do
  lnetctl net add --net efa --if "$device" --peer-credits 32
done
lnetctl set discovery 1
lnetctl udsp add --src efa --priority 0
echo "fm-lnet-efa: tcp on ${primary}, efa on ${selected[*]} (${INSTANCE_TYPE})"
