#!/usr/bin/env bash
# LNet over EFA for FSx for Lustre: lnet_efa.sh <instance-type>
#
# Installed as /usr/local/sbin/fm-lnet-efa and run by fm-lnet-efa.service at every boot (before
# remote file systems mount) and once by mount_fsx.sh. Follows the FSx for Lustre guide's EFA
# client configuration (https://docs.aws.amazon.com/fsx/latest/LustreGuide/configure-efa-clients.html):
# EFA LND bound to the primary interface, a tcp network on that interface, an efa network on
# the devices the guide uses for the instance type (every fourth device on p5/p5e, which have
# 32; otherwise the first and the last), discovery on, EFA preferred by UDSP.
# Idempotent: an efa network that is already configured is left as it is.
set -euo pipefail

FM_ROOT="${FM_ROOT:-}"
INSTANCE_TYPE="${1:-unknown}"

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
selected=()
case "${INSTANCE_TYPE#ml.}" in
  p5.* | p5e.*)
    for index in "${!devices[@]}"; do
      ((index % 4 == 0)) && selected+=("${devices[index]}")
    done
    ;;
  *)
    selected+=("${devices[0]}")
    ((${#devices[@]} > 1)) && selected+=("${devices[${#devices[@]} - 1]}")
    ;;
esac
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
