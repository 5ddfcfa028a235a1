#!/usr/bin/env bash
# LNet over EFA on an EKS node, before kubelet: lnet_efa_boot.sh <instance-type> <interfaces>
#                                              lnet_efa_boot.sh --client-only
#
# fm-lnet-efa.service runs this at every boot, ordered before nodeadm-run.service and
# kubelet.service: LNet is on EFA before kubelet starts a pod, so before the FSx for Lustre
# CSI driver mounts a volume. The mount names the file system's TCP NID; LNet discovery and
# the UDSP rule that prefers EFA then move the traffic onto EFA (FSx for Lustre guide,
# "Configuring EFA clients"). LNet configured after a mount leaves that mount on TCP.
#   1. lnetctl comes with the Lustre client, which the EKS-optimized AL2023 AMIs do not
#      install (the FSx CSI driver carries its own in its image): installed with dnf when
#      missing, as the EKS guide's launch-template user data does on AL2023, but never with a
#      new kernel (the AMI's drivers are built for the kernel it runs): a client that would
#      need one is not installed. A failed install exits non-zero (the unit shows failed;
#      kubelet is only ordered after it and starts).
#   2. No EFA device, or a Lustre client without the EFA LND (kefalnd): said, and Lustre stays
#      on TCP (the node still mounts the file system).
#   3. fm-lnet-efa, the script HyperPod and PCS nodes run (lnet_efa.sh), puts tcp on the
#      primary interface and efa on <interfaces> EFA devices, turns discovery on and prefers
#      EFA. It leaves an efa network that is already there as it is.
# --client-only: step 1 alone (a HyperPod EKS node installs the client before it holds kubelet
# for steps 2 and 3).
# FM_ROOT prefixes every file path (empty on a node).
set -euo pipefail

FM_ROOT="${FM_ROOT:-}"
CLIENT_ONLY=""
if [[ "${1:-}" == --client-only ]]; then
  CLIENT_ONLY=1
  shift
fi
INSTANCE_TYPE="${1:-unknown}"
INTERFACES="${2:-0}"
LNET_SCRIPT="${FM_LNET_SCRIPT:-/usr/local/sbin/fm-lnet-efa}"

log() { echo "fm-lnet-efa-boot: $*"; }

if ! command -v lnetctl > /dev/null; then
  log "installing the Lustre client (lnetctl)"
  if ! dnf install -y --exclude='kernel*' lustre-client; then
    log "could not install lustre-client; Lustre stays on TCP" >&2
    exit 1
  fi
fi
[[ -z "$CLIENT_ONLY" ]] || exit 0
devices=("${FM_ROOT}"/sys/class/infiniband/*)
if [[ ! -e "${devices[0]}" ]]; then
  log "no EFA device on this node; Lustre stays on TCP"
  exit 0
fi
if ! modinfo kefalnd > /dev/null 2>&1; then
  log "this Lustre client has no EFA LND (kefalnd); Lustre stays on TCP"
  exit 0
fi
exec bash "${FM_ROOT}${LNET_SCRIPT}" "$INSTANCE_TYPE" "$INTERFACES"
