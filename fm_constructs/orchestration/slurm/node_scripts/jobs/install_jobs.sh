#!/usr/bin/env bash
# Put the Slurm job scripts of this directory on the shared file system, where every user of
# the login node finds them: <mount point>/fm-jobs. Idempotent (run again, same result).
set -euo pipefail

MOUNT_POINT="${1:?usage: install_jobs.sh MOUNT_POINT}"
SOURCE_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
source "${SOURCE_DIR}/../lib.sh"
TARGET="${FM_ROOT}${MOUNT_POINT}/fm-jobs"

if ! is_mounted "${MOUNT_POINT}"; then
  log "${MOUNT_POINT} is not mounted; job scripts not installed"
  exit 0
fi
install -d -m 0755 "${TARGET}"
for script in "${SOURCE_DIR}"/*.sbatch; do
  install -m 0755 "${script}" "${TARGET}/"
done
log "job scripts in ${MOUNT_POINT}/fm-jobs"
