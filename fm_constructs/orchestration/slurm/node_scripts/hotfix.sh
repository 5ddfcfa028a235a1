#!/usr/bin/env bash
# Package holds that keep a node working when the OS updates itself: hotfix.sh
#
# The FSx for Lustre client's metapackage (lustre-client-modules-aws) follows the newest AWS
# kernel: upgraded (by unattended-upgrades, or an `apt-get upgrade`), it brings in a new
# kernel, which the node boots into at its next reboot, possibly without the drivers the AMI
# built for its own kernel. AWS's reference HyperPod lifecycle scripts hold it for that reason
# (awsome-distributed-training, base-config/hotfix/hold-lustre-client.sh); so does this
# script, and the kernel changes with the AMI (UpdateClusterSoftware) instead. A package that
# is not installed (another AMI, an rpm-based node) is left alone; dpkg's lock (taken by
# unattended-upgrades at boot) is waited out. Idempotent.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
HOLD_ATTEMPTS="${HOLD_ATTEMPTS:-10}"
HELD_PACKAGES=(lustre-client-modules-aws)

installed() {
  [[ "$(dpkg-query -W -f '${Status}' "$1" 2> /dev/null || true)" == "install ok installed" ]]
}

if ! command -v dpkg-query > /dev/null; then
  echo "hotfix: no dpkg on this node; nothing to hold"
  exit 0
fi
held="$(apt-mark showhold 2> /dev/null || true)"
for package in "${HELD_PACKAGES[@]}"; do
  if ! installed "$package"; then
    echo "hotfix: ${package} is not installed; nothing to hold"
  elif grep -qxF "$package" <<< "$held"; then
    echo "hotfix: ${package} is already held"
  else
    retry "$HOLD_ATTEMPTS" 3 apt-mark hold "$package"
    echo "hotfix: held ${package}"
  fi
done
