#!/usr/bin/env bash
# LNet over EFA on a HyperPod EKS node of an EFA-enabled FSx for Lustre file system:
#   lnet_efa_eks.sh <group> <params>
#
# on_create.sh runs this on EKS nodes when fsx.efa_enabled is true. The FSx CSI driver mounts
# the file system by its TCP NID; the traffic moves onto EFA only when LNet already has an efa
# network, discovery on and EFA preferred (FSx for Lustre guide, "Configuring EFA clients"),
# and LNet configured after a mount leaves that mount on TCP. So, as on EKS node groups:
#   1. fm-lnet-efa (lnet_efa.sh, the script HyperPod Slurm and PCS nodes run) and
#      fm-lnet-efa-boot (lnet_efa_boot.sh, the EKS node groups' boot script: the Lustre client
#      when the AMI lacks it, the EFA device and EFA LND checks, then fm-lnet-efa) are
#      installed, with fm-lnet-efa.service ordered before kubelet.service (and nodeadm-run.service,
#      where the AMI has it), enabled for every later boot.
#   2. The interface count is this group's lnet_efa_interfaces (the FSx guide's figure for the
#      type within the node's share of the file system's EFA connections); <group> is empty
#      when the resource configuration does not name this node, and then the smallest count of
#      the worker groups is taken (every group's count is within the node's share).
#   3. HyperPod's documentation does not say whether kubelet is already running when OnCreate
#      runs, so the order is made explicit here: the Lustre client is installed first, then a
#      running kubelet is stopped while LNet is configured (seconds) and started again
#      afterwards (its pods keep running; no new volume mounts in between), and a Lustre file
#      system already mounted is named: it stays on TCP until the node reboots, when
#      fm-lnet-efa.service runs before kubelet.
# A node that cannot use EFA for Lustre (no EFA device, no EFA LND, no client to install) says
# so and keeps Lustre on TCP; this never fails the node's creation. Idempotent: units are
# rewritten only when they change, and fm-lnet-efa leaves an efa network as it is.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
GROUP="${1:-}"
PARAMS="$2"
LNET_SCRIPT=/usr/local/sbin/fm-lnet-efa
BOOT_SCRIPT=/usr/local/sbin/fm-lnet-efa-boot
LNET_UNIT=fm-lnet-efa.service
load_params

smallest_interfaces() {
  # The smallest positive lnet_efa_interfaces of the worker groups (empty when none has one).
  local group count smallest=""
  for group in $(param worker_groups); do
    count="$(group_param "$group" lnet_efa_interfaces)"
    if [[ -n "$count" ]] && ((count > 0)) && [[ -z "$smallest" || count -lt smallest ]]; then
      smallest="$count"
    fi
  done
  echo "$smallest"
}

INSTANCE_TYPE=unknown
INTERFACES=""
if [[ -n "$GROUP" ]]; then
  INSTANCE_TYPE="$(group_param "$GROUP" instance_type)"
  INTERFACES="$(group_param "$GROUP" lnet_efa_interfaces)"
else
  INTERFACES="$(smallest_interfaces)"
  log "this node's instance group is unknown; taking the worker groups' smallest count (${INTERFACES:-none})"
fi
if [[ -z "$INTERFACES" || "$INTERFACES" == 0 ]]; then
  echo "lnet_efa_eks: no EFA interfaces for group ${GROUP:-(unknown)} (${INSTANCE_TYPE}); Lustre stays on TCP"
  exit 0
fi

install -D -m 0755 "${SCRIPT_DIR}/lnet_efa.sh" "${FM_ROOT}${LNET_SCRIPT}"
install -D -m 0755 "${SCRIPT_DIR}/lnet_efa_boot.sh" "${FM_ROOT}${BOOT_SCRIPT}"
# The unit EKS node groups get too (fm_constructs.orchestration.lustre_efa_client.lnet_unit).
unit="$(sed -e "s|@BOOT_SCRIPT@|${BOOT_SCRIPT}|" -e "s|@INSTANCE_TYPE@|${INSTANCE_TYPE}|" \
  -e "s|@INTERFACES@|${INTERFACES}|" "${SCRIPT_DIR}/fm-lnet-efa-kubelet.service.in")"
changed="$(install_unit "$LNET_UNIT" "$unit")"
[[ -z "$changed" ]] || systemctl daemon-reload
systemctl enable "$LNET_UNIT"

mounted="$(awk '$3 == "lustre" {print $2}' "${FM_ROOT}/proc/mounts" 2> /dev/null || true)"
if [[ -n "$mounted" ]]; then
  log "Lustre already mounted at ${mounted//$'\n'/ }: those mounts stay on TCP until the next boot"
fi
# The Lustre client first, while kubelet runs (it may take minutes, or fail: then Lustre stays
# on TCP and kubelet is never held).
if ! bash "${FM_ROOT}${BOOT_SCRIPT}" --client-only; then
  log "no Lustre client with lnetctl; Lustre stays on TCP, ${LNET_UNIT} tries again at the next boot"
  exit 0
fi
KUBELET_WAS_ACTIVE=""
if systemctl is-active --quiet kubelet; then
  KUBELET_WAS_ACTIVE=1
  echo "lnet_efa_eks: stopping kubelet while LNet is configured"
  systemctl stop kubelet
fi
status=0
FM_LNET_SCRIPT="$LNET_SCRIPT" bash "${FM_ROOT}${BOOT_SCRIPT}" "$INSTANCE_TYPE" "$INTERFACES" \
  || status=$?
if [[ -n "$KUBELET_WAS_ACTIVE" ]]; then
  systemctl start kubelet
fi
if ((status != 0)); then
  log "LNet over EFA is not configured (exit ${status}); Lustre stays on TCP, ${LNET_UNIT} tries again at the next boot"
  exit 0
fi
echo "lnet_efa_eks: LNet over EFA before kubelet (${INTERFACES} interfaces, ${INSTANCE_TYPE})"
