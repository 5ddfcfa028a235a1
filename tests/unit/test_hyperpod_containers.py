"""Containers on HyperPod Slurm nodes, against the real components where this machine has them.

- pyxis compiled for real (gcc, make, Debian's libslurm-dev headers) from its pinned release
  source, by the lifecycle scripts themselves in a simulated node (only the download is
  served locally). The source cannot be downloaded in CI: set ``FM_PYXIS_SOURCE`` to the
  release archive of the pinned tag (``https://github.com/NVIDIA/pyxis/archive/refs/tags/
  v<version>.tar.gz``, or ``git archive --format=tar.gz --prefix=pyxis-<version>/ v<version>``
  in a clone) or to an extracted tree; without it the test skips and says so.
- enroot's own start-up as two different non-root users (real uids through ``setpriv``) on a
  node that ran ``containers.sh``: the directory creation, an image layer's import into the
  cache and a second user's start, as enroot does them at the pinned tag (cited below).
- The generated ``enroot.conf`` against enroot's device handling at the pinned tag: with
  ``FM_ENROOT_SOURCE`` (an enroot source tree or archive of the pinned tag) the real
  ``conf/hooks/10-devices.sh`` runs with the configuration as enroot reads it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from fm_constructs import pins
from tests.hyperpod_node import SimulatedNode
from tests.unit.test_hyperpod_node import node

#: The container runtime setup runs in a simulated node: the end-to-end stage (make e2e, run by
#: .ci/run after make test).
pytestmark = pytest.mark.e2e

PYXIS_VERSION = pins.binary("pyxis").version
#: The tree the library pins for the release archive: the real archive must hold it.
PYXIS_TREE = pins.source_trees()[f"pyxis-{PYXIS_VERSION}.tar.gz"]
ENROOT_VERSION = pins.binary("enroot").version
SLURM_HEADERS = Path("/usr/include/slurm")


def _source_archive(variable: str, project: str, version: str, scratch: Path) -> Path | None:
    """The release archive of ``project`` at ``version`` named by ``$variable`` (an archive
    whose top directory is ``<project>-<version>``, or a tree, archived here so)."""
    value = os.environ.get(variable)
    if not value:
        return None
    path = Path(value)
    if path.is_dir():
        archive = scratch / f"{project}-{version}.tar.gz"
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(path, arcname=f"{project}-{version}")
        return archive
    with tarfile.open(path) as tar:
        top = {name.split("/", 1)[0] for name in tar.getnames()}
    assert top == {f"{project}-{version}"}, (
        f"{variable}={value} holds {sorted(top)}, not the pinned {project}-{version}/"
    )
    return path


def _need_pyxis_source(scratch: Path) -> Path:
    archive = _source_archive("FM_PYXIS_SOURCE", "pyxis", PYXIS_VERSION, scratch)
    if archive is None:
        pytest.skip(
            f"pyxis source not present: set FM_PYXIS_SOURCE to the v{PYXIS_VERSION} release "
            f"archive (https://github.com/NVIDIA/pyxis/archive/refs/tags/v{PYXIS_VERSION}"
            f".tar.gz, or `git archive --format=tar.gz --prefix=pyxis-{PYXIS_VERSION}/ "
            f"v{PYXIS_VERSION}` in a clone of NVIDIA/pyxis) or an extracted tree"
        )
    if not (SLURM_HEADERS / "spank.h").is_file():
        pytest.skip("Debian's libslurm-dev is not installed (no /usr/include/slurm/spank.h)")
    for tool in ("gcc", "make", "strip"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
    return archive


def _with_slurm_headers(sim: SimulatedNode) -> None:
    """The AMI's Slurm headers, as the node has them under /opt/slurm/include: Debian's."""
    include = sim.root / "opt" / "slurm" / "include"
    shutil.rmtree(include)
    include.mkdir()
    (include / "slurm").symlink_to(SLURM_HEADERS)


# ---------------------------------------------------------------------------------- pyxis


@pytest.mark.parametrize("role", ["worker", "login", "controller"])
def test_pyxis_builds_from_its_release_source_on_every_node_type(tmp_path: Path, role: str) -> None:
    """OnCreate accepts the release archive by the tree the library pins for it and builds
    pyxis with the host's make and gcc against Debian's Slurm headers, with the command
    containers.sh runs; the plugin it installs is a shared object exporting the SPANK entry
    points."""
    archive = _need_pyxis_source(tmp_path)
    sim = node(tmp_path / "node", role, real_make=True)
    _with_slurm_headers(sim)
    sim.serve_source(sim.pyxis_url, archive.read_bytes(), tree=PYXIS_TREE)
    run = sim.run()
    assert run.returncode == 0, run.output
    assert f"source tree matches the pinned {PYXIS_TREE}" in run.output, run.output
    assert f"containers: built pyxis {PYXIS_VERSION}" in run.output, run.output
    # The Makefile's own flags survive: CPPFLAGS came through the environment.
    compiles = [line for line in run.output.splitlines() if " -c pyxis_slurmstepd.c" in line]
    assert compiles and "-D_GNU_SOURCE" in compiles[0] and "-DPYXIS_VERSION=" in compiles[0]
    assert f"-I{sim.root}/opt/slurm/include" in compiles[0]
    plugin = sim.root / "usr" / "local" / "lib" / "slurm" / "spank_pyxis.so"
    assert plugin.read_bytes()[:4] == b"\x7fELF"
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(plugin)], capture_output=True, text=True, check=True
    ).stdout
    for symbol in ("slurm_spank_init", "slurm_spank_user_init", "plugin_name"):
        assert re.search(rf"\s{symbol}(@@\S+)?$", symbols, re.M), symbol
    if shutil.which("srun") is not None:
        # Debian's srun loads the plugin from a plugstack.conf and offers its options: what
        # `srun --container-image` needs on this node.
        conf = tmp_path / "slurm.conf"
        conf.write_text(
            "ClusterName=t\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\n"
            f"PartitionName=p Nodes=localhost\nPlugStackConfig={tmp_path}/plugstack.conf\n"
        )
        (tmp_path / "plugstack.conf").write_text(f"required {plugin}\n")
        help_text = subprocess.run(
            ["srun", "--help"],
            env={**os.environ, "SLURM_CONF": str(conf)},
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        ).stdout
        assert "--container-image" in help_text and "[pyxis]" in help_text
    assert sim.file("var/lib/fm-constructs/missing-components") == ""
    assert sim.slurm_state == ("idle", "")


def test_pyxis_does_not_build_with_cppflags_on_makes_command_line(tmp_path: Path) -> None:
    """The same source and headers fail when CPPFLAGS replaces the Makefile's flags (a
    command-line variable overrides the Makefile's own assignment): the build above proves
    the environment form, this one that the test would see the difference."""
    archive = _need_pyxis_source(tmp_path)
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path, filter="data")
    include = tmp_path / "include"
    include.mkdir()
    (include / "slurm").symlink_to(SLURM_HEADERS)
    result = subprocess.run(
        ["make", "-C", str(tmp_path / f"pyxis-{PYXIS_VERSION}"), f"CPPFLAGS=-I{include}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "CLONE_NEWUSER" in result.stderr or "PYXIS_VERSION" in result.stderr, result.stderr


def test_a_node_whose_pyxis_does_not_compile_joins_drained(tmp_path: Path) -> None:
    """A source that does not build (here: a compiler that fails, through the CC the real
    Makefile uses) is a missing component, not a failed OnCreate."""
    archive = _need_pyxis_source(tmp_path)
    sim = node(tmp_path / "node", "worker", real_make=True)
    _with_slurm_headers(sim)
    sim.serve_source(sim.pyxis_url, archive.read_bytes(), tree=PYXIS_TREE)
    run = sim.run(env={"CC": "false"})
    assert run.returncode == 0, run.output
    assert f"pyxis {PYXIS_VERSION} could not be fetched or built" in run.output
    assert sim.slurm_state == ("drain", "fm-constructs: missing pyxis")
    assert "fm-components-retry.timer" in sim.enabled


# ---------------------------------------------------------------------------------- enroot


@pytest.fixture
def open_node() -> Iterator[SimulatedNode]:
    """A worker that ran containers.sh, in a directory every uid can traverse (pytest's
    temporary directories are private to root)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to run as other uids (CI runs the tests as root)")
    # Not under $TMPDIR, which the test run keeps private to root.
    base = Path(tempfile.mkdtemp(prefix="fm-enroot-", dir="/tmp"))
    try:
        base.chmod(0o755)
        sim = node(base, "worker")
        run = sim.run("containers.sh", "worker")
        assert run.returncode == 0, run.output
        yield sim
    finally:
        shutil.rmtree(base, ignore_errors=True)


#: What enroot does at start-up and when importing an image, at the pinned tag, as one user:
#: - NVIDIA/enroot@v3.4.1 ``enroot.in``:44 reads each configuration value with
#:   ``eval echo "${value}"`` (so ``$(id -u)`` is that user's uid), and :105 creates its
#:   directories with ``(umask 077 && mkdir -p "${ENROOT_CACHE_PATH}" "${ENROOT_DATA_PATH}"
#:   "${ENROOT_RUNTIME_PATH}")`` at every start;
#: - ``src/docker.sh``:17,88 keeps registry tokens in ``${ENROOT_CACHE_PATH}/.tokens.${EUID}``
#:   (``mkdir -m 0700 -p``); :100-122 downloads each layer into ``mktemp -p
#:   "${ENROOT_CACHE_PATH}" "${digest}.XXXXXXXXXX"`` under ``umask 037``, ``chmod 640`` and
#:   ``mv -n`` to ``${ENROOT_CACHE_PATH}/${digest}``;
#: - ``src/runtime.sh`` unpacks a container under ``${ENROOT_DATA_PATH}/<name>`` and starts it
#:   with its state under ``${ENROOT_RUNTIME_PATH}``.
#: The node's paths live under the simulated root ($ROOT).
ENROOT_AS_USER = r"""
set -euo pipefail
while read -r key value; do
  [[ "$key" =~ ^ENROOT_[A-Z_]+$ ]] || continue
  export "$key=$(eval echo "${value}")"
done < "$ROOT/etc/enroot/enroot.conf"
ENROOT_CACHE_PATH="$ROOT$ENROOT_CACHE_PATH"
ENROOT_DATA_PATH="$ROOT$ENROOT_DATA_PATH"
ENROOT_RUNTIME_PATH="$ROOT$ENROOT_RUNTIME_PATH"
(umask 077 && mkdir -p "${ENROOT_CACHE_PATH}" "${ENROOT_DATA_PATH}" "${ENROOT_RUNTIME_PATH}")
mkdir -m 0700 -p "${ENROOT_CACHE_PATH}/.tokens.${EUID}"
tokens="${ENROOT_CACHE_PATH}/.tokens.${EUID}"
(umask 077 && printf 'header "Authorization: Bearer t"' > "${tokens}/r.$$")
digest=0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
(
  umask 037
  tmpfile=$(mktemp -p "${ENROOT_CACHE_PATH}" "${digest}.XXXXXXXXXX")
  echo "layer of $EUID" > "$tmpfile"
  chmod 640 "$tmpfile"
  mv -n "$tmpfile" "${ENROOT_CACHE_PATH}/${digest}"
)
cat "${ENROOT_CACHE_PATH}/${digest}" > /dev/null
mkdir -p "${ENROOT_DATA_PATH}/nccl-tests/etc" "${ENROOT_RUNTIME_PATH}/overlay"
cp "${ENROOT_CACHE_PATH}/${digest}" "${ENROOT_DATA_PATH}/nccl-tests/etc/layer"
echo started > "${ENROOT_RUNTIME_PATH}/rc"
echo "$ENROOT_CACHE_PATH $ENROOT_DATA_PATH $ENROOT_RUNTIME_PATH"
"""


def _as_user(
    sim: SimulatedNode, uid: int, gid: int, script: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "bash", "-c", script],
        env={"ROOT": str(sim.root), "PATH": "/usr/bin:/bin", "HOME": "/nonexistent"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_two_users_run_enroots_set_up_and_an_import_on_one_node(open_node: SimulatedNode) -> None:
    sim = open_node
    disk = sim.root / "opt" / "dlami" / "nvme"
    for path in ("enroot", "tmp", "tmp/enroot", "tmp/enroot/data"):
        mode = (disk / path).stat().st_mode
        assert mode & 0o7777 == 0o1777, f"{path}: {oct(mode)}"
    first = _as_user(sim, 2001, 2001, ENROOT_AS_USER)
    assert first.returncode == 0, first.stderr
    # The second user (another group too) after the first, while the first's files remain.
    second = _as_user(sim, 2002, 3000, ENROOT_AS_USER)
    assert second.returncode == 0, second.stderr
    (cache_a, data_a, runtime_a) = first.stdout.split()
    (cache_b, data_b, runtime_b) = second.stdout.split()
    assert cache_a.endswith("/opt/dlami/nvme/enroot/user-2001")
    assert data_b.endswith("/opt/dlami/nvme/tmp/enroot/data/user-2002")
    assert runtime_b.endswith("/opt/dlami/nvme/tmp/enroot/user-2002")
    for path, uid in ((cache_a, 2001), (data_a, 2001), (runtime_a, 2001), (cache_b, 2002)):
        stat = Path(path).stat()
        assert (stat.st_uid, stat.st_mode & 0o777) == (uid, 0o700), path
    # Each user's containers and layers stay that user's.
    peek = _as_user(sim, 2002, 3000, f"ls {data_a} || ls {cache_a}")
    assert peek.returncode != 0 and "Permission denied" in peek.stderr
    # The layer cache is on the NVMe, not the root volume.
    assert Path(cache_b, "0123456789abcdef" * 4).read_text() == "layer of 2002\n"


def test_the_shared_directories_stay_open_after_a_second_run(open_node: SimulatedNode) -> None:
    """A node whose directories a first user already populated keeps them usable: a second
    run of containers.sh does not narrow the modes (install -d keeps an existing mode)."""
    sim = open_node
    assert _as_user(sim, 2001, 2001, ENROOT_AS_USER).returncode == 0
    (sim.root / "opt" / "dlami" / "nvme" / "tmp" / "enroot" / "data").chmod(0o755)
    assert sim.run("containers.sh", "worker").returncode == 0
    assert _as_user(sim, 2002, 3000, ENROOT_AS_USER).returncode == 0


# ------------------------------------------------------------------------- devices (EFA)


#: enroot.in's config::fini at NVIDIA/enroot@v3.4.1 (:63-69) unsets every ENROOT_ variable
#: whose value matches this, so a hook sees it as not set.
ENROOT_FALSE = re.compile(r"^(no?|N[oO]?|[fF](alse)?|FALSE)$")


def _enroot_conf(sim: SimulatedNode) -> dict[str, str]:
    values = {}
    for line in sim.file("etc/enroot/enroot.conf").splitlines():
        if line and not line.startswith("#"):
            key, value = line.split(None, 1)
            values[key] = value
    return values


def test_containers_see_the_nodes_devices(tmp_path: Path) -> None:
    """ENROOT_RESTRICT_DEV is off as enroot reads it: its 10-devices.sh hook, which would mount
    a minimal /dev without /dev/infiniband (the EFA devices), does nothing, and the node's /dev
    comes in whole through the rbind of enroot's conf/mounts/10-system.fstab."""
    sim = node(tmp_path, "worker")
    assert sim.run("containers.sh", "worker").returncode == 0
    conf = _enroot_conf(sim)
    assert ENROOT_FALSE.match(conf["ENROOT_RESTRICT_DEV"])
    source = os.environ.get("FM_ENROOT_SOURCE")
    if not source:
        pytest.skip(
            f"enroot source not present: set FM_ENROOT_SOURCE to an enroot v{ENROOT_VERSION} "
            "tree (git clone --branch "
            f"v{ENROOT_VERSION} https://github.com/NVIDIA/enroot) to run its 10-devices.sh hook"
        )
    tree = Path(source)
    if not tree.is_dir():
        with tarfile.open(tree) as tar:
            tar.extractall(tmp_path / "enroot", filter="data")
        (tree,) = (tmp_path / "enroot").iterdir()
    fstab = (tree / "conf" / "mounts" / "10-system.fstab").read_text()
    assert re.search(r"^/dev\s+/dev\s+none\s+\S*rbind", fstab, re.M)
    hook = tree / "conf" / "hooks" / "10-devices.sh"
    rootfs = tmp_path / "rootfs"
    rootfs.mkdir()
    # The environment a hook gets: the configuration's ENROOT_ values, minus the false ones.
    environment = {key: value for key, value in conf.items() if not ENROOT_FALSE.match(value)} | {
        "ENROOT_ROOTFS": str(rootfs),
        "ENROOT_LIBRARY_PATH": str(tree / "src"),
    }
    environment["PATH"] = "/usr/bin:/bin"  # no enroot-mount: a hook that mounts fails
    result = subprocess.run(
        ["bash", str(hook)], env=environment, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    assert not any(rootfs.iterdir()), "10-devices.sh restricted /dev"
    # With the restriction on, the same hook mounts its minimal /dev (and fails here, with no
    # enroot-mount): the check above would see it.
    environment["ENROOT_RESTRICT_DEV"] = "y"
    restricted = subprocess.run(
        ["bash", str(hook)], env=environment, capture_output=True, text=True, check=False
    )
    assert restricted.returncode != 0 and "enroot-mount" in restricted.stderr
