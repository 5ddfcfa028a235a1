#!/usr/bin/env bash
# after_fsx.d step: the controller puts the Slurm job scripts on the shared file system
# (<mount point>/fm-jobs), where `fmc validate` and the first-job guide expect them.
# Called as `bash 50-job-scripts.sh <role> <group> <params>`.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR/..
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
after_fsx_step controller "$@"
bash "${SCRIPT_DIR}/jobs/install_jobs.sh" "$(param fsx.mount_point)"
