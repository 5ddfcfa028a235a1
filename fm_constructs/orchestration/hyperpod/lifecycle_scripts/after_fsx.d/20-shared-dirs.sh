#!/usr/bin/env bash
# after_fsx.d step: the controller opens the file system's data repository directories
# (fsx.shared_directories, /datasets and /checkpoints by default) to every cluster user.
# FSx creates them for their associations owned by root, so a job running as ubuntu or a
# profile user could not write /fsx/checkpoints/<run>. They get mode 1777, as /tmp has: anyone
# may add a directory, only its owner may remove or rename it. Nothing else on /fsx changes.
# Called as `bash 20-shared-dirs.sh <role> <group> <params>`.
set -euo pipefail

ROLE="$1"
PARAMS="$3"
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
export PARAMS

if [[ "$ROLE" != "controller" ]]; then
  exit 0
fi
MOUNT_POINT="$(param fsx.mount_point)"
IFS=',' read -ra DIRECTORIES <<< "$(param fsx.shared_directories)"
for directory in "${DIRECTORIES[@]}"; do
  [[ -n "$directory" ]] || continue
  path="${FM_ROOT}${MOUNT_POINT}/${directory#/}"
  mkdir -p "$path"
  chmod 1777 "$path"
  echo "20-shared-dirs: ${MOUNT_POINT}/${directory#/} is open to every cluster user (1777)"
done
