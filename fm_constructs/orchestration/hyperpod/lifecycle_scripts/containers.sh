#!/usr/bin/env bash
# Containers for Slurm jobs: containers.sh <role>
#
# - Docker (on the HyperPod AMI; Ubuntu's docker.io is installed where it is missing, since the
#   GPU and EFA exporters run as containers) keeps its images and containers on the local NVMe
#   (/opt/dlami/nvme, assembled by the AMI's dlami-nvme.service) or, without NVMe, on the extra
#   EBS volume (/opt/sagemaker), never on the root volume. A Docker that cannot be installed
#   does not fail the node: the metrics timer names the exporters that wait for it.
# - enroot (NVIDIA's unprivileged container runtime) is installed at the pinned version when
#   the AMI lacks it, with its runtime, cache and data directories on the same disk.
# - pyxis (the SPANK plugin behind `srun --container-image`) is built against the AMI's Slurm
#   headers when it is not installed yet, and included from plugstack.conf (the controller's
#   copy is what configless slurmd nodes read).
# Downloads are retried; a node that cannot get enroot or pyxis fails (jobs asking for a
# container would fail on it). Idempotent: installed pieces are detected and kept.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=lib.sh
source "${SCRIPT_DIR}/lib.sh"
PARAMS="${PARAMS:-${SCRIPT_DIR}/provisioning_parameters.json}"
load_params
ROLE="$1"
SLURM_PREFIX="${SLURM_PREFIX:-/opt/slurm}"
NVME_WAIT="${NVME_WAIT:-120}"
ENROOT_VERSION="$(param enroot_version)"
PYXIS_VERSION="$(param pyxis_version)"
ARCH="$(dpkg --print-architecture)"
# Where Ubuntu's docker.io and Docker's own packages put the client (metrics.sh runs it there).
DOCKER=/usr/bin/docker

local_disk() {
  # The large local disk: NVMe once dlami-nvme.service has assembled it, else the EBS volume.
  local waited=0
  if systemctl cat dlami-nvme.service > /dev/null 2>&1; then
    until [[ "$(systemctl show -p ActiveState --value dlami-nvme.service)" == "active" ]]; do
      if ((waited >= NVME_WAIT)); then
        echo "containers: dlami-nvme.service not active after ${waited}s" >&2
        break
      fi
      sleep 5
      waited=$((waited + 5))
    done
  fi
  local disk
  for disk in /opt/dlami/nvme /opt/sagemaker; do
    if is_mounted "$disk"; then
      echo "$disk"
      return 0
    fi
  done
  return 1
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

download() {
  # download <url> <file>: fetch one file, failing on HTTP errors.
  curl -fsSL --connect-timeout 10 -o "$2" "$1"
}

install_enroot() {
  if command -v enroot > /dev/null; then
    echo "containers: enroot is installed"
    return 0
  fi
  local work base="https://github.com/NVIDIA/enroot/releases/download/v${ENROOT_VERSION}"
  work="$(mktemp -d)"
  local package
  for package in "enroot_${ENROOT_VERSION}-1_${ARCH}.deb" "enroot+caps_${ENROOT_VERSION}-1_${ARCH}.deb"; do
    retry 5 5 download "${base}/${package}" "${work}/${package}"
  done
  retry 3 5 apt-get update -o DPkg::Lock::Timeout=120
  retry 5 5 apt-get install -y -o DPkg::Lock::Timeout=120 squashfs-tools fuse-overlayfs \
    "${work}/enroot_${ENROOT_VERSION}-1_${ARCH}.deb" "${work}/enroot+caps_${ENROOT_VERSION}-1_${ARCH}.deb"
  rm -rf "$work"
  echo "containers: installed enroot ${ENROOT_VERSION}"
}

configure_enroot() {
  local disk="$1"
  mkdir -p "${FM_ROOT}/etc/enroot" "${FM_ROOT}${disk}/enroot" "${FM_ROOT}${disk}/tmp/enroot"
  chmod 1777 "${FM_ROOT}${disk}/tmp" "${FM_ROOT}${disk}/tmp/enroot"
  # $(id -u) is expanded by enroot for each user, not here.
  # shellcheck disable=SC2016
  printf '%s\n' \
    "# Written by fm-constructs containers.sh: container data on ${disk}, not the root volume." \
    "ENROOT_RUNTIME_PATH ${disk}/tmp/enroot/user-\$(id -u)" \
    "ENROOT_CACHE_PATH ${disk}/enroot" \
    "ENROOT_DATA_PATH ${disk}/tmp/enroot/data/user-\$(id -u)" \
    "ENROOT_TEMP_PATH ${disk}/tmp" \
    "ENROOT_SQUASH_OPTIONS -comp lzo -noI -noD -noF -noX -no-duplicates" \
    "ENROOT_MOUNT_HOME y" \
    "ENROOT_RESTRICT_DEV y" \
    "ENROOT_ROOTFS_WRITABLE y" > "${FM_ROOT}/etc/enroot/enroot.conf"
}

install_pyxis() {
  # install_pyxis build|include-only
  local plugin="${FM_ROOT}/usr/local/lib/slurm/spank_pyxis.so"
  if [[ "$1" == "build" && ! -e "$plugin" ]]; then
    local work url="https://github.com/NVIDIA/pyxis/archive/refs/tags/v${PYXIS_VERSION}.tar.gz"
    work="$(mktemp -d)"
    retry 5 5 download "$url" "${work}/pyxis.tar.gz"
    tar -xzf "${work}/pyxis.tar.gz" -C "$work"
    make -C "${work}/pyxis-${PYXIS_VERSION}" CPPFLAGS="-I${FM_ROOT}${SLURM_PREFIX}/include" \
      prefix=/usr/local DESTDIR="${FM_ROOT}" install
    rm -rf "$work"
    echo "containers: built pyxis ${PYXIS_VERSION}"
  fi
  local plugstack="${FM_ROOT}${SLURM_PREFIX}/etc/plugstack.conf"
  # optional: srun on the controller (which has no pyxis) keeps working; every node that runs
  # job steps has the plugin, or its creation failed above.
  local line="optional /usr/local/lib/slurm/spank_pyxis.so"
  mkdir -p "$(dirname "$plugstack")"
  touch "$plugstack"
  grep -qF "spank_pyxis.so" "$plugstack" || echo "$line" >> "$plugstack"
}

DISK="$(local_disk || true)"
if [[ -z "$DISK" ]]; then
  echo "containers: neither /opt/dlami/nvme nor /opt/sagemaker is mounted;" \
    "container data stays on the root volume" >&2
  DISK=/opt/sagemaker
  mkdir -p "${FM_ROOT}${DISK}"
fi
configure_docker "$DISK"
if [[ "$ROLE" == "controller" ]]; then
  # The controller runs no job steps; it only serves plugstack.conf to configless nodes.
  install_pyxis include-only
else
  install_enroot
  configure_enroot "$DISK"
  install_pyxis build
fi
echo "containers: ready on ${ROLE} (data on ${DISK})"
