#!/usr/bin/env bash
# Configure Slurm for this node: setup_slurm.sh <role> <group> <params> <resource-config> <shared-dir>
#
# Every node renders the same node/partition fragment (slurm_config.py) into the Slurm
# configuration of the HyperPod Slurm AMI. The controller publishes the munge key on the shared
# file system; the other nodes wait for it. Then the role's daemon starts: slurmctld on the
# controller, slurmd on workers, nothing more on the login node (it only needs the config and
# munge to submit jobs).
set -euo pipefail

ROLE="$1"
GROUP="$2"
PARAMS="$3"
RESOURCE_CONFIG="$4"
SHARED_DIR="${5:-}"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SLURM_ETC="${SLURM_ETC:-/opt/slurm/etc}"
FRAGMENT="${SLURM_ETC}/fm_cluster.conf"

python3 "${SCRIPT_DIR}/slurm_config.py" render --params "$PARAMS" \
  --resource-config "$RESOURCE_CONFIG" > "$FRAGMENT"
if ! grep -q "^include ${FRAGMENT}$" "${SLURM_ETC}/slurm.conf"; then
  echo "include ${FRAGMENT}" >> "${SLURM_ETC}/slurm.conf"
fi
python3 "${SCRIPT_DIR}/slurm_config.py" gres --params "$PARAMS" \
  --resource-config "$RESOURCE_CONFIG" --group "$GROUP" > "${SLURM_ETC}/gres.conf"

share_munge_key() {
  if [[ -z "$SHARED_DIR" ]] || ! mountpoint -q "$SHARED_DIR"; then
    echo "setup_slurm: no shared file system; keeping the AMI's munge key"
    return 0
  fi
  local shared="${SHARED_DIR}/.fm-slurm/munge.key"
  if [[ "$ROLE" == "controller" ]]; then
    install -d -m 0700 "$(dirname "$shared")"
    install -m 0400 /etc/munge/munge.key "$shared"
  else
    local waited=0
    until [[ -s "$shared" ]]; do
      if (( waited >= 1800 )); then
        echo "setup_slurm: munge key not published after ${waited}s" >&2
        return 1
      fi
      sleep 10
      waited=$((waited + 10))
    done
    install -o munge -g munge -m 0400 "$shared" /etc/munge/munge.key
  fi
  systemctl restart munge
}

share_munge_key
case "$ROLE" in
  controller) systemctl enable --now slurmctld && systemctl restart slurmctld ;;
  worker) systemctl enable --now slurmd && systemctl restart slurmd ;;
  login) echo "setup_slurm: login node configured" ;;
  *) echo "setup_slurm: unknown role ${ROLE}" >&2; exit 1 ;;
esac
echo "setup_slurm: ${ROLE} of group ${GROUP} ready"
