#!/usr/bin/env bash
# after_fsx.d step: the controller opens the file system's data repository directories
# (fsx.shared_directories, /datasets and /checkpoints by default) to every cluster user.
# FSx creates them for their associations owned by root, so a job running as ubuntu or a
# profile user could not write /fsx/checkpoints/<run>. They get mode 1777, as /tmp has: anyone
# may add a directory, only its owner may remove or rename it. Nothing else on /fsx changes.
# Each directory is opened once (noted on the controller, /var/lib/fm-constructs), so a mode
# an administrator sets later is kept when the scripts run again.
# Called as `bash 20-shared-dirs.sh <role> <group> <params>`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
after_fsx_step controller "$@"
MOUNT_POINT="$(param fsx.mount_point)"
IFS=',' read -ra DIRECTORIES <<< "$(param fsx.shared_directories)"
STATE="${FM_ROOT}/var/lib/fm-constructs/shared-dirs-opened"
mkdir -p "$(dirname "$STATE")"
touch "$STATE"
for directory in "${DIRECTORIES[@]}"; do
  [[ -n "$directory" ]] || continue
  shown="${MOUNT_POINT}/${directory#/}"
  if grep -qxF "$shown" "$STATE"; then
    echo "20-shared-dirs: ${shown} was opened before; its mode stays as it is"
    continue
  fi
  mkdir -p "${FM_ROOT}${shown}"
  chmod 1777 "${FM_ROOT}${shown}"
  echo "$shown" >> "$STATE"
  echo "20-shared-dirs: ${shown} is open to every cluster user (1777)"
done
