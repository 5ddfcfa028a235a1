"""A simulated EC2 node with instance-store NVMe disks, for running the shell user data.

The node is a temporary directory used as the script's ``FM_ROOT`` with stubbed commands first
on ``PATH``: ``lsblk``, ``mdadm``, ``blkid``, ``mkfs.xfs``, ``mount``, ``mountpoint``,
``systemctl`` and the package managers behave like a node's and keep their state under
``<root>/sim``:

* ``sim/disks/<name>``: one file per instance-store disk, holding what is on it: nothing
  (blank), ``md`` (a RAID0 member), ``xfs`` (a file system), or ``md xfs`` (a member of an
  array that carries a file system);
* ``sim/arrays/<name>``: the md arrays the kernel is running, each listing its members;
* ``sim/mounts``: ``<mount point> <device>`` per line;
* ``sim/enabled``: the units enabled to start at boot.

``systemctl start`` (and ``enable --now``) run the unit's ``ExecStart`` with its
``Environment=`` under the root, as systemd would. :meth:`NvmeNode.reboot` and
:meth:`NvmeNode.stop_start` model what EC2 does to the instance store (kept on reboot, blank
after a stop and start; the kernel's arrays and mounts gone either way), then start every
enabled unit, which is what happens at boot.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.hyperpod_node import install_stub_commands

STUB = r"""#!/usr/bin/env bash
# Stubbed system command of the simulated NVMe node.
name="$(basename "$0")"
sim="${FM_ROOT}/sim"
echo "${name} $*" >> "${sim}/calls.log"
disk_file() { echo "${sim}/disks/$(basename "$1")"; }
array_file() { echo "${sim}/arrays/$(basename "$1")"; }
# What is on a device: a disk's file, or for an array the file system its members carry.
content() {
  local f
  f="$(array_file "$1")"
  if [[ -f "$f" ]]; then
    read -r first < "$f"
    awk '{ print $2 }' "$(disk_file "$first")"
    return 0
  fi
  f="$(disk_file "$1")"
  [[ -f "$f" ]] || { echo "${name}: ${1}: no such device" >&2; exit 2; }
  awk '$1 == "md" { print $2; next } { print $1 }' "$f"
}
case "$name" in
  sleep) exit 0 ;;
  lsblk)
    if [[ "$*" == *-d* ]]; then
      echo "/dev/nvme0n1 Amazon Elastic Block Store"
      for f in "${sim}/disks"/*; do
        [[ -f "$f" ]] && echo "/dev/$(basename "$f") Amazon EC2 NVMe Instance Storage"
      done
      exit 0
    fi
    disk="${@: -1}"
    echo "${disk} disk"
    for f in "${sim}/arrays"/*; do
      [[ -f "$f" ]] && grep -qxF "$disk" "$f" && echo "/dev/$(basename "$f") raid0"
    done
    exit 0 ;;
  mdadm)
    mode="$1"; array="$2"; shift 2
    members=()
    for a in "$@"; do [[ "$a" == /dev/* ]] && members+=("$a"); done
    case "$mode" in
      --examine) [[ "$(awk '{ print $1 }' "$(disk_file "$array")")" == md ]]; exit $? ;;
      --stop) rm -f "$(array_file "$array")"; exit 0 ;;
      --assemble)
        for m in "${members[@]}"; do
          [[ "$(awk '{ print $1 }' "$(disk_file "$m")")" == md ]] \
            || { echo "mdadm: no superblock on ${m}" >&2; exit 1; }
        done ;;
      --create)
        [[ -f "$(array_file "$array")" ]] && { echo "mdadm: ${array} is busy" >&2; exit 1; }
        for m in "${members[@]}"; do echo "md" > "$(disk_file "$m")"; done ;;
      *) echo "mdadm: unexpected mode ${mode}" >&2; exit 2 ;;
    esac
    mkdir -p "${sim}/arrays"
    printf '%s\n' "${members[@]}" > "$(array_file "$array")"
    exit 0 ;;
  blkid)
    fs="$(content "${@: -1}")"
    [[ -n "$fs" ]] || exit 2
    echo "$fs"; exit 0 ;;
  mkfs.xfs)
    device="${@: -1}"
    f="$(array_file "$device")"
    if [[ -f "$f" ]]; then
      while read -r m; do echo "md xfs" > "$(disk_file "$m")"; done < "$f"
    else
      echo "xfs" > "$(disk_file "$device")"
    fi
    exit 0 ;;
  mount)
    device="${@: -2:1}"; dir="${@: -1}"
    [[ -d "$dir" ]] || { echo "mount: ${dir}: mount point does not exist" >&2; exit 32; }
    fs="$(content "$device")"
    [[ "$fs" == xfs ]] || { echo "mount: ${device}: wrong fs type (${fs:-none})" >&2; exit 32; }
    echo "${dir} ${device}" >> "${sim}/mounts"; exit 0 ;;
  mountpoint) awk '{ print $1 }' "${sim}/mounts" | grep -qxF "${@: -1}"; exit $? ;;
  systemctl)
    args=()
    for a in "$@"; do [[ "$a" == --* ]] || args+=("$a"); done
    verb="${args[0]}"
    run_unit() {
      local unit="${FM_ROOT}/etc/systemd/system/$1" exec_start environment=()
      [[ -f "$unit" ]] || { echo "Unit $1 not found." >&2; return 5; }
      exec_start="$(sed -n 's/^ExecStart=//p' "$unit")"
      while read -r assignment; do environment+=("$assignment"); done \
        < <(sed -n 's/^Environment=//p' "$unit")
      env "${environment[@]}" "${FM_ROOT}${exec_start}"
    }
    case "$verb" in
      daemon-reload) exit 0 ;;
      enable)
        for u in "${args[@]:1}"; do
          [[ -f "${FM_ROOT}/etc/systemd/system/${u}" ]] \
            || { echo "Unit ${u} not found." >&2; exit 5; }
          mkdir -p "${sim}/enabled"; touch "${sim}/enabled/${u}"
          if [[ " $* " == *" --now "* ]]; then run_unit "$u" || exit 1; fi
        done
        exit 0 ;;
      start)
        for u in "${args[@]:1}"; do run_unit "$u" || exit 1; done
        exit 0 ;;
    esac
    echo "systemctl: unexpected verb ${verb}" >&2; exit 2 ;;
  dnf|yum|apt-get) ln -sf stub "${FM_ROOT}/usr/bin/mdadm"; exit 0 ;;
esac
echo "stub: no behaviour for ${name}" >&2
exit 2
"""

COMMANDS = (
    "sleep",
    "lsblk",
    "blkid",
    "mkfs.xfs",
    "mount",
    "mountpoint",
    "systemctl",
    "dnf",
    "yum",
    "apt-get",
)


@dataclass(frozen=True)
class Run:
    """What one run left: exit status, output and the stubbed commands called."""

    returncode: int
    output: str
    calls: tuple[str, ...]


class NvmeNode:
    """An instance with ``disks`` blank instance-store disks (``/dev/nvme1n1`` ...) under
    ``tmp_path``; ``mdadm`` is installed unless ``mdadm=False`` (then a package manager
    installs it)."""

    def __init__(self, tmp_path: Path, *, disks: int, mdadm: bool = True) -> None:
        self.root = tmp_path / "root"
        self.sim = self.root / "sim"
        install_stub_commands(self.root, STUB, (*COMMANDS, *(("mdadm",) if mdadm else ())))
        (self.sim / "disks").mkdir(parents=True)
        (self.sim / "mounts").write_text("")
        self.disks = tuple(f"/dev/nvme{index}n1" for index in range(1, disks + 1))
        for disk in self.disks:
            (self.sim / "disks" / Path(disk).name).write_text("\n")

    def _run(self, argv: list[str]) -> Run:
        calls = self.sim / "calls.log"
        calls.unlink(missing_ok=True)
        environment = {
            # The stubs first, then only the directories of the real base tools (bash, awk,
            # sed, ...), never the host's mdadm or systemctl.
            "PATH": f"{self.root / 'usr' / 'bin'}:/usr/bin:/bin",
            "FM_ROOT": str(self.root),
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
        }
        result = subprocess.run(
            argv, env=environment, capture_output=True, text=True, timeout=60, check=False
        )
        return Run(
            returncode=result.returncode,
            output=result.stdout + result.stderr,
            calls=tuple(calls.read_text().splitlines()) if calls.exists() else (),
        )

    def first_boot(self, user_data: str) -> Run:
        """Run the user data as cloud-init does at first boot."""
        script = self.root / "user-data"
        script.write_text(user_data)
        return self._run(["bash", str(script)])

    def boot(self) -> Run:
        """Start every enabled unit, as systemd does at boot."""
        enabled = self.sim / "enabled"
        units = sorted(p.name for p in enabled.iterdir()) if enabled.exists() else []
        if not units:
            return Run(returncode=0, output="", calls=())
        return self._run([str(self.root / "usr" / "bin" / "systemctl"), "start", *units])

    def _power_cycle(self, *, blank_disks: bool) -> None:
        (self.sim / "mounts").write_text("")
        arrays = self.sim / "arrays"
        for array in arrays.iterdir() if arrays.exists() else ():
            array.unlink()
        if blank_disks:
            for disk in (self.sim / "disks").iterdir():
                disk.write_text("\n")

    def reboot(self, *, kernel_array: str | None = None) -> Run:
        """A reboot: the instance store keeps its data; arrays and mounts are gone, unless
        ``kernel_array`` names the md device the kernel assembles the members into at boot."""
        self._power_cycle(blank_disks=False)
        if kernel_array is not None:
            self._auto_assemble(kernel_array)
        return self.boot()

    def stop_start(self) -> Run:
        """A stop and start: the instance store comes back blank."""
        self._power_cycle(blank_disks=True)
        return self.boot()

    def _auto_assemble(self, name: str) -> None:
        members = [d for d in self.disks if self.disk(d).split()[:1] == ["md"]]
        (self.sim / "arrays").mkdir(exist_ok=True)
        (self.sim / "arrays" / name).write_text("".join(f"{m}\n" for m in members))

    def put_file(self, path: str, text: str) -> None:
        """Write a file on the node (as a volume would hold it)."""
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)

    def disk(self, device: str) -> str:
        return (self.sim / "disks" / Path(device).name).read_text().strip()

    @property
    def mounts(self) -> dict[str, str]:
        """Mount point on the node -> device."""
        prefix = str(self.root)
        pairs = (line.split() for line in (self.sim / "mounts").read_text().splitlines())
        return {point.removeprefix(prefix): device for point, device in pairs}

    @property
    def enabled(self) -> set[str]:
        directory = self.sim / "enabled"
        return {p.name for p in directory.iterdir()} if directory.exists() else set()

    def file(self, path: str) -> str:
        return (self.root / path.lstrip("/")).read_text()

    def exists(self, path: str) -> bool:
        return (self.root / path.lstrip("/")).exists()

    def verify_units(self) -> subprocess.CompletedProcess[str]:
        """``systemd-analyze verify`` of the units written, under this root (with the host's
        own units beside them, for the targets they order against)."""
        lib = self.root / "usr" / "lib" / "systemd" / "system"
        lib.mkdir(parents=True, exist_ok=True)
        host = Path("/usr/lib/systemd/system")
        for unit in host.iterdir() if host.is_dir() else ():
            if unit.is_file() and not unit.is_symlink() and "@" not in unit.name:
                shutil.copy2(unit, lib / unit.name)
        system = self.root / "etc" / "systemd" / "system"
        names = sorted(p.name for p in system.glob("*.service"))
        return subprocess.run(
            ["systemd-analyze", "verify", f"--root={self.root}", "--man=no", *names],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "SYSTEMD_LOG_LEVEL": "warning"},
        )
