#!/usr/bin/env bash
# Set-up of an AWS PCS node: pcs_node.sh <role> <group> <scripts-uri>
#   role: login or compute; group: the node group's name in provisioning_parameters.json;
#   scripts-uri: s3://<bucket>/<prefix>/ holding the lifecycle scripts and the parameters.
#
# Written by the launch template's text/cloud-config part (before the node registers with
# PCS) and run by its text/x-shellscript part, which PCS runs after registration and before
# slurmd starts. The steps are the HyperPod Slurm lifecycle scripts, shared and unchanged,
# fetched from S3 next to this script; this wrapper only supplies what differs on PCS:
#   - Slurm lives where the PCS Slurm installer puts it, /opt/aws/pcs/scheduler/slurm-<version>
#     (SLURM_PREFIX for containers.sh, which builds pyxis against its headers);
#   - the node's instance type and LNet EFA interface count come from its node group's entry
#     of the parameters, not from a HyperPod resource configuration;
#   - the pyxis line goes in PLUGSTACK_CONF, /etc/aws/pcs/scheduler/slurm-<version>/
#     plugstack.conf.d/pyxis.conf: PCS runs Slurm configless, so slurmd (and sackd, for srun
#     on the login node) reads the plugstack.conf of the service's controller, which includes
#     that node-local directory (PCS user guide, "Configure SPANK plugins"); a plugstack.conf
#     under the Slurm prefix is never read.
# In order: the NCCL/EFA environment (nccl_env.sh); on compute nodes the job hooks HyperPod
# nodes run (slurm_hooks.sh: the GPU health check and GPU-to-job map before each job, /dev/shm
# cleanup after it) under <Slurm prefix>/etc/scripts, the paths the cluster's Prolog and
# Epilog settings name; FSx for Lustre at its mount point, LNet
# over EFA where the file system has EFA (mount_fsx.sh), and on the login node the job scripts
# on it (jobs/install_jobs.sh); Docker, enroot and pyxis with their data on the instance NVMe
# (containers.sh); the exporters, remote-written to Managed Prometheus (metrics.sh).
# Idempotent, as every step is.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROLE="${1:?usage: pcs_node.sh login|compute <group> <scripts-uri>}"
GROUP="${2:?usage: pcs_node.sh login|compute <group> <scripts-uri>}"
SCRIPTS_URI="${3:?usage: pcs_node.sh login|compute <group> <scripts-uri>}"
FETCH_ATTEMPTS="${FETCH_ATTEMPTS:-5}"
LOG_DIR="${FM_ROOT:-}/var/log/fm-provision"
mkdir -p "$LOG_DIR"
exec > >(tee -a "${LOG_DIR}/pcs_node.log") 2>&1

# The scripts, with the instance role (lib.sh, with its retry, is among them).
attempt=1
delay=5
until aws s3 cp --recursive --only-show-errors "$SCRIPTS_URI" "${SCRIPT_DIR}/"; do
  if ((attempt >= FETCH_ATTEMPTS)); then
    echo "pcs_node: cannot fetch the node scripts from ${SCRIPTS_URI}" >&2
    exit 1
  fi
  echo "pcs_node: fetching ${SCRIPTS_URI} failed (attempt ${attempt}); retrying in ${delay}s" >&2
  sleep "$delay"
  attempt=$((attempt + 1))
  delay=$((delay * 2 > 60 ? 60 : delay * 2))
done

# On the node lib.sh is fetched beside this script; in the package, it is a HyperPod script.
# shellcheck source-path=SCRIPTDIR/../../slurm/node_scripts source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
PARAMS="${SCRIPT_DIR}/provisioning_parameters.json"
export PARAMS
load_params
INSTANCE_TYPE="$(param "node_groups.${GROUP}.instance_type")"
if [[ -z "$INSTANCE_TYPE" ]]; then
  echo "pcs_node: no node group ${GROUP} in ${PARAMS}" >&2
  exit 1
fi
SLURM_VERSION="$(param slurm_version)"
SLURM_PREFIX="/opt/aws/pcs/scheduler/slurm-${SLURM_VERSION}"
PLUGSTACK_CONF="/etc/aws/pcs/scheduler/slurm-${SLURM_VERSION}/plugstack.conf.d/pyxis.conf"
export SLURM_PREFIX PLUGSTACK_CONF
echo "pcs_node: ${ROLE} node of ${GROUP} (${INSTANCE_TYPE}), Slurm at ${SLURM_PREFIX}"

bash "${SCRIPT_DIR}/nccl_env.sh"

# slurmd starts after this script, so the hooks are in place before the node's first job.
if [[ "$ROLE" == "compute" ]]; then
  bash "${SCRIPT_DIR}/slurm_hooks.sh" worker "$GROUP" "$PARAMS"
fi

FSX_DNS="$(param fsx.dns_name)"
if [[ -n "$FSX_DNS" ]]; then
  bash "${SCRIPT_DIR}/mount_fsx.sh" "$FSX_DNS" "$(param fsx.mount_name)" \
    "$(param fsx.mount_point)" "$(param fsx.efa_enabled)" "$INSTANCE_TYPE" \
    "$(param "node_groups.${GROUP}.lnet_efa_interfaces")"
  # The login node puts the Slurm job scripts on the shared file system (<mount>/fm-jobs),
  # where `fmc validate` and the first-job guide expect them (HyperPod: its controller).
  if [[ "$ROLE" == "login" ]]; then
    bash "${SCRIPT_DIR}/jobs/install_jobs.sh" "$(param fsx.mount_point)"
  fi
fi

bash "${SCRIPT_DIR}/containers.sh" "$ROLE"

# Metrics, off the critical path (metrics.sh installs a retrying timer): the same exporters as
# HyperPod Slurm, remote-written to the workspace. Accelerated nodes run them as HyperPod
# workers do (node, DCGM, EFA exporters); the login node, which can reach the PCS controller,
# runs the Slurm exporter in the controller's place. The installer runs later under systemd,
# so a drop-in gives it the PCS Slurm prefix.
if [[ -n "$(param prometheus.remote_write_url)" ]]; then
  METRICS_ROLE=worker
  [[ "$ROLE" == "login" ]] && METRICS_ROLE=controller
  changed="$(install_unit fm-metrics-install.service.d/fm-pcs.conf "[Service]
Environment=SLURM_PREFIX=${SLURM_PREFIX}")"
  [[ -z "$changed" ]] || systemctl daemon-reload
  bash "${SCRIPT_DIR}/metrics.sh" schedule "$METRICS_ROLE" "$GROUP" "$PARAMS"
fi
echo "pcs_node: done"
