#!/usr/bin/env bash
# Containers for Slurm jobs: containers.sh <role>
#
# - Docker (on the HyperPod AMI; Ubuntu's docker.io is installed where it is missing, since the
#   GPU and EFA exporters run as containers) keeps its images and containers on the local NVMe
#   (/opt/dlami/nvme, assembled by the AMI's dlami-nvme.service) or, without NVMe, on the extra
#   EBS volume (/opt/sagemaker), never on the root volume. A Docker that cannot be installed
#   does not fail the node: the metrics timer names the exporters that wait for it.
# - enroot (NVIDIA's unprivileged container runtime) is installed at the pinned version when
#   the AMI lacks it, with its runtime, cache and data directories on the same disk, each
#   parent created 1777 (any user's enroot makes its own 0700 directory below it: enroot runs
#   `umask 077 && mkdir -p` of its cache, data and runtime paths at every start). /dev is the
#   node's inside a container (ENROOT_RESTRICT_DEV no): enroot's 10-devices.sh hook would
#   otherwise leave only a minimal /dev, without the EFA devices (/dev/infiniband/uverbs*).
# - pyxis (the SPANK plugin behind `srun --container-image`) is built against the AMI's Slurm
#   headers when it is not installed yet, on every node type (the controller and the login
#   node submit jobs too), and included from plugstack.conf (the controller's copy is what
#   configless slurmd nodes read). PLUGSTACK_CONF names another file for the line: on AWS PCS
#   the controller is the service's, and its plugstack.conf includes the node's own
#   /etc/aws/pcs/scheduler/slurm-<version>/plugstack.conf.d/*.conf (pcs_node.sh sets it).
# Every download is used only when it is what the library pins: the enroot packages by their
# sha256 (fetch_pinned in lib.sh), the pyxis source by the git tree of its release tag
# (fetch_pinned_source); one without a pin or not matching it is refused and logged, and the
# component counts as missing.
# Downloads are retried. A component that still cannot be fetched or built does not fail the
# node: it is named in /var/lib/fm-constructs/missing-components, node_components.sh drains
# the node with a reason naming it (workers) once slurmd runs, and fm-components-retry.timer
# runs this script again every 10 minutes until nothing is missing, then resumes the node.
# Idempotent: installed pieces are detected and kept.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
PARAMS="${PARAMS:-${SCRIPT_DIR}/provisioning_parameters.json}"
load_params
ROLE="$1"
NVME_WAIT="${NVME_WAIT:-120}"
ENROOT_VERSION="$(param enroot_version)"
PYXIS_VERSION="$(param pyxis_version)"
ARCH="$(release_arch)"
# Where Ubuntu's docker.io and Docker's own packages put the client (metrics.sh runs it there).
DOCKER=/usr/bin/docker

nvme_active() {
  [[ "$(systemctl show -p ActiveState --value dlami-nvme.service)" == "active" ]]
}

local_disk() {
  # The large local disk: NVMe once dlami-nvme.service has assembled it, else the EBS volume.
  if systemctl cat dlami-nvme.service > /dev/null 2>&1; then
    wait_for "$NVME_WAIT" 5 nvme_active \
      || echo "containers: dlami-nvme.service not active after ${FM_WAITED}s" >&2
  fi
  first_mounted /opt/dlami/nvme /opt/sagemaker
}

install_docker() {
  echo "containers: no Docker on this AMI; installing Ubuntu's docker.io"
  retry 3 5 apt-get update -o DPkg::Lock::Timeout=120 \
    && retry 5 5 apt-get install -y -o DPkg::Lock::Timeout=120 docker.io \
    && [[ -x "${FM_ROOT}${DOCKER}" ]] \
    && systemctl enable --now docker
}

configure_docker() {
  local disk="$1" daemon="${FM_ROOT}/etc/docker/daemon.json" before=""
  if [[ ! -x "${FM_ROOT}${DOCKER}" ]] && ! install_docker; then
    echo "containers: Docker could not be installed; the exporters that run in containers" \
      "wait for it" >&2
    return 0
  fi
  mkdir -p "$(dirname "$daemon")" "${FM_ROOT}${disk}/docker/data-root"
  [[ -f "$daemon" ]] && before="$(cat "$daemon")"
  python3 - "$daemon" "${disk}/docker/data-root" <<'PY'
import json, os, sys
path, root = sys.argv[1], sys.argv[2]
config = {}
if os.path.exists(path) and os.path.getsize(path):
    with open(path) as handle:
        config = json.load(handle)
config["data-root"] = root
with open(path, "w") as handle:
    json.dump(config, handle, indent=2, sort_keys=True)
    handle.write("\n")
PY
  if [[ "$(cat "$daemon")" != "$before" ]] && systemctl is-active --quiet docker; then
    systemctl restart docker
  fi
  echo "containers: Docker data on ${disk}/docker/data-root"
}

install_enroot() {
  # False when enroot cannot be installed (every step is checked: a caller's `if` turns off
  # set -e inside the function).
  if command -v enroot > /dev/null; then
    echo "containers: enroot is installed"
    return 0
  fi
  local work base="https://github.com/NVIDIA/enroot/releases/download/v${ENROOT_VERSION}"
  work="$(mktemp -d)"
  local package
  for package in "enroot_${ENROOT_VERSION}-1_${ARCH}.deb" "enroot+caps_${ENROOT_VERSION}-1_${ARCH}.deb"; do
    if ! fetch_pinned "${base}/${package}" "${work}/${package}" "$package"; then
      rm -rf "$work"
      return 1
    fi
  done
  if ! retry 3 5 apt-get update -o DPkg::Lock::Timeout=120 \
    || ! retry 5 5 apt-get install -y -o DPkg::Lock::Timeout=120 squashfs-tools fuse-overlayfs \
      "${work}/enroot_${ENROOT_VERSION}-1_${ARCH}.deb" \
      "${work}/enroot+caps_${ENROOT_VERSION}-1_${ARCH}.deb"; then
    rm -rf "$work"
    return 1
  fi
  rm -rf "$work"
  echo "containers: installed enroot ${ENROOT_VERSION}"
}

configure_enroot() {
  local disk="$1" dir
  install -d -m 0755 "${FM_ROOT}/etc/enroot"
  # Every user's enroot creates its own directories below these (0700, as that user). The
  # layer cache is per user too: enroot caches layers 0640 (src/docker.sh), so a user of
  # another group could not unpack a layer a first user had cached in a shared one.
  for dir in "${disk}/tmp" "${disk}/tmp/enroot" "${disk}/tmp/enroot/data" "${disk}/enroot"; do
    install -d -m 1777 "${FM_ROOT}${dir}"
    chmod 1777 "${FM_ROOT}${dir}" # install -d leaves the mode of a directory that exists
  done
  # $(id -u) is expanded by enroot for each user, not here.
  # shellcheck disable=SC2016
  printf '%s\n' \
    "# Written by fm-constructs containers.sh: container data on ${disk}, not the root volume." \
    "ENROOT_RUNTIME_PATH ${disk}/tmp/enroot/user-\$(id -u)" \
    "ENROOT_CACHE_PATH ${disk}/enroot/user-\$(id -u)" \
    "ENROOT_DATA_PATH ${disk}/tmp/enroot/data/user-\$(id -u)" \
    "ENROOT_TEMP_PATH ${disk}/tmp" \
    "ENROOT_SQUASH_OPTIONS -comp lzo -noI -noD -noF -noX -no-duplicates" \
    "ENROOT_MOUNT_HOME y" \
    "# The node's /dev in every container: EFA (/dev/infiniband), GPUs and hugepages." \
    "ENROOT_RESTRICT_DEV n" \
    "ENROOT_ROOTFS_WRITABLE y" > "${FM_ROOT}/etc/enroot/enroot.conf"
  chmod 0644 "${FM_ROOT}/etc/enroot/enroot.conf"
}

PYXIS_PLUGIN=/usr/local/lib/slurm/spank_pyxis.so
# The SPANK configuration file the pyxis line goes in.
PLUGSTACK_CONF="${PLUGSTACK_CONF:-${SLURM_PREFIX}/etc/plugstack.conf}"

build_pyxis() {
  # build_pyxis <source-dir>: compile and install pyxis against the AMI's Slurm headers.
  # CPPFLAGS goes in the environment: pyxis's Makefile appends it to its own flags
  # (-D_GNU_SOURCE, -DPYXIS_VERSION), which a CPPFLAGS on make's command line would replace.
  CPPFLAGS="-I${FM_ROOT}${SLURM_PREFIX}/include" \
    make -C "$1" -j "$(nproc)" prefix=/usr/local DESTDIR="${FM_ROOT}" install
}

registered_pyxis() {
  # The pyxis plugin plugstack.conf already loads (an AMI that ships its own), if it exists.
  local path
  path="$(awk '$1 ~ /^(required|optional)$/ && $2 ~ /spank_pyxis[.]so$/ {print $2; exit}' \
    "$1" 2> /dev/null || true)"
  [[ -n "$path" && -e "${FM_ROOT}${path}" ]] && echo "$path"
}

install_pyxis() {
  # False when pyxis cannot be fetched or built. plugstack.conf names the plugin either way:
  # the controller's copy is what every configless node reads, whatever the controller's own
  # build did.
  local plugstack="${FM_ROOT}${PLUGSTACK_CONF}" built=0
  mkdir -p "$(dirname "$plugstack")"
  touch "$plugstack"
  chmod 0644 "$plugstack"
  # optional: a node whose pyxis could not be built still runs slurmd (drained, see above)
  # instead of failing every job step.
  grep -qF "spank_pyxis.so" "$plugstack" || echo "optional ${PYXIS_PLUGIN}" >> "$plugstack"
  if [[ -n "$(registered_pyxis "$plugstack")" ]]; then
    echo "containers: pyxis is installed ($(registered_pyxis "$plugstack"))"
    built=1
  fi
  if ((!built)); then
    # GitHub's archive of the tag, which it names pyxis-<version>.tar.gz (the pins' key),
    # checked by the tree it holds.
    local work url="https://github.com/NVIDIA/pyxis/archive/refs/tags/v${PYXIS_VERSION}.tar.gz"
    local archive="pyxis-${PYXIS_VERSION}.tar.gz"
    work="$(mktemp -d)"
    if ! fetch_pinned_source "$url" "$work" "$archive" "pyxis-${PYXIS_VERSION}" \
      || ! build_pyxis "${work}/pyxis-${PYXIS_VERSION}" \
      || [[ ! -e "${FM_ROOT}${PYXIS_PLUGIN}" ]]; then
      log "pyxis ${PYXIS_VERSION} could not be fetched or built"
      rm -rf "$work"
      return 1
    fi
    rm -rf "$work"
    echo "containers: built pyxis ${PYXIS_VERSION}"
  fi
  # pyxis's slurmd part creates its runtime directory itself (0755, pyxis_slurmd.c); made here
  # too so the first job step does not depend on slurmd having restarted since the build.
  install -d -m 0755 "${FM_ROOT}/run/pyxis"
}

DISK="$(local_disk || true)"
if [[ -z "$DISK" ]]; then
  echo "containers: neither /opt/dlami/nvme nor /opt/sagemaker is mounted;" \
    "container data stays on the root volume" >&2
  DISK=/opt/sagemaker
  mkdir -p "${FM_ROOT}${DISK}"
fi
configure_docker "$DISK"
MISSING=()
if install_enroot; then
  configure_enroot "$DISK"
else
  MISSING+=(enroot)
fi
install_pyxis || MISSING+=(pyxis)
record_missing "${MISSING[@]}"
if ((${#MISSING[@]})); then
  log "missing on ${ROLE}: ${MISSING[*]}; fm-components-retry.timer tries again"
else
  echo "containers: ready on ${ROLE} (data on ${DISK})"
fi
