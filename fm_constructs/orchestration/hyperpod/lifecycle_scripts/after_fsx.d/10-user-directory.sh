#!/usr/bin/env bash
# A directory on the shared file system for the AMI's default user: 10-user-directory.sh
# <role> <group> <params>
#
# /fsx itself stays owned by root (not world-writable); /fsx/<user> belongs to the default user
# (ubuntu on the HyperPod AMI), so jobs started by that user can write checkpoints and outputs
# there from every node. Idempotent; the mount point comes from the provisioning parameters.
set -euo pipefail

PARAMS="$3"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=../lib.sh
source "${SCRIPT_DIR}/lib.sh"
load_params
USER_NAME="${FM_DEFAULT_USER:-ubuntu}"
MOUNT_POINT="$(param fsx.mount_point)"
MOUNT_POINT="${MOUNT_POINT:-/fsx}"

if ! entry="$(getent passwd "$USER_NAME")"; then
  echo "user-directory: no user ${USER_NAME} on this node; nothing to do"
  exit 0
fi
uid="$(cut -d: -f3 <<< "$entry")"
gid="$(cut -d: -f4 <<< "$entry")"
directory="${FM_ROOT}${MOUNT_POINT}/${USER_NAME}"
mkdir -p "$directory"
chown "${uid}:${gid}" "$directory"
chmod 0755 "$directory"
echo "user-directory: ${MOUNT_POINT}/${USER_NAME} belongs to ${USER_NAME}"
