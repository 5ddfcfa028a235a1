#!/usr/bin/env bash
# LNet over EFA for FSx for Lustre: lnet_efa.sh <instance-type> [<max-interfaces>]
#
# Installed as /usr/local/sbin/fm-lnet-efa and run by fm-lnet-efa.service at every boot (before
# remote file systems mount) and once by mount_fsx.sh. Follows the FSx for Lustre guide's EFA
# client configuration (https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html):
# EFA LND bound to the primary interface, a tcp network on that interface, an efa network on
# as many devices as the guide's table gives the instance type (16 on p6-b300; 8 on p5, p5e,
# p5en, p6-b200 and p6e-gb200, spread evenly over the node's devices; 2, the first and the
# last, on other types with several; else 1), discovery on, EFA preferred by UDSP.
# <max-interfaces> (0 or absent: none) lowers that count, so that the cluster's nodes together
# stay within the file system's 1024 EFA connections, one per interface per client.
# Idempotent: an efa network that is already configured is left as it is.
set -euo pipefail

FM_ROOT="${FM_ROOT:-}"
INSTANCE_TYPE="${1:-unknown}"
MAX_INTERFACES="${2:-0}"

if lnetctl net show --net efa 2> /dev/null | grep -q '@efa'; then
  echo "fm-lnet-efa: LNet already has an efa network"
  exit 0
fi
devices=()
for device in "${FM_ROOT}"/sys/class/infiniband/*; do
  [[ -e "$device" ]] && devices+=("$(basename "$device")")
done
if [[ ${#devices[@]} -eq 0 ]]; then
  echo "fm-lnet-efa: no EFA device" >&2
  exit 1
fi
primary="$(ip -4 route show default | awk '{for (i = 1; i < NF; i++) if ($i == "dev") {print $(i + 1); exit}}')"
if [[ -z "$primary" ]]; then
  echo "fm-lnet-efa: no default route, so no primary interface" >&2
  exit 1
fi
case "${INSTANCE_TYPE#ml.}" in
  p6-b300.*) wanted=16 ;;
  p5.* | p5e.* | p5en.* | p6-b200.* | p6e-gb200.*) wanted=8 ;;
  *) wanted=2 ;;
esac
((MAX_INTERFACES > 0 && MAX_INTERFACES < wanted)) && wanted="$MAX_INTERFACES"
((wanted > ${#devices[@]})) && wanted="${#devices[@]}"
selected=()
if ((wanted == 2)); then
  selected=("${devices[0]}" "${devices[${#devices[@]} - 1]}")
else
  # Every (devices / wanted)-th device: every fourth of the 32 on p5, every second of 16.
  stride=$((${#devices[@]} / wanted))
  for ((index = 0; ${#selected[@]} < wanted; index += stride)); do
    selected+=("${devices[index]}")
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
