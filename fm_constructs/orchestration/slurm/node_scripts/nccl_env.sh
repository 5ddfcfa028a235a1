#!/usr/bin/env bash
# NCCL/EFA environment for every login shell and Slurm job on the node.
#
# With libfabric >= 1.18 and aws-ofi-nccl >= 1.7 (HyperPod AMIs ship newer), the plugin picks the
# EFA provider, RDMA and protocol on its own: FI_EFA_USE_DEVICE_RDMA, FI_PROVIDER and NCCL_PROTO
# are deliberately not set (they only helped very old plugins), RDMAV_FORK_SAFE is never set,
# and NCCL channel and buffer sizes stay at their defaults.
set -euo pipefail

PROFILE="${FM_ROOT:-}/etc/profile.d/fm-nccl-efa.sh"
mkdir -p "$(dirname "$PROFILE")"
cat > "$PROFILE" <<'ENV'
# Written by fm-constructs nccl_env.sh.
# EFA libfabric and the AWS OFI NCCL plugin shipped with the HyperPod AMI.
for dir in /opt/amazon/efa/lib /opt/amazon/ofi-nccl/lib; do
  case ":${LD_LIBRARY_PATH:-}:" in
    *":${dir}:"*) ;;
    *) [ -d "$dir" ] && export LD_LIBRARY_PATH="${dir}${LD_LIBRARY_PATH:+:${LD_LIBRARY_PATH}}" ;;
  esac
done
# Keep NCCL's bootstrap and fallback sockets off container and loopback interfaces.
export NCCL_SOCKET_IFNAME="^docker,lo,veth"
# Warnings only by default; set NCCL_DEBUG=INFO in a job to see the chosen transport.
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
ENV
chmod 0644 "$PROFILE"
echo "nccl_env: wrote ${PROFILE}"
