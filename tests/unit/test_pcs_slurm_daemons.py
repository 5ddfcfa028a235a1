"""What a PCS node's configless slurmd and srun read, with Debian's real Slurm daemons.

AWS PCS runs Slurm configless (PCS user guide, "Slurm configuration in AWS PCS"): slurmd
fetches slurm.conf and plugstack.conf from the service's controller, and the controller's
plugstack.conf includes the node's own ``/etc/aws/pcs/scheduler/slurm-<version>/
plugstack.conf.d/`` (PCS user guide, "Configure SPANK plugins on AWS PCS"). In Slurm's source
(tag slurm-25-05-8-1, the pinned 25.05; the same at slurm-22-05-8-1, the version Debian
ships): src/common/fetch_config.c lists plugstack.conf among the files sent to slurmd and to
client commands, and sends a Prolog only when its path is relative; src/common/spank.c reads
the fetched plugstack.conf and resolves an absolute ``include`` glob on the node itself.

The test boots a simulated PCS compute node (tests/hyperpod_node.py) with its user data, then,
in private mount, PID and UTS namespaces, stands up what PCS would run: a controller
(slurmctld, configless, with the PCS-style plugstack.conf and the cluster's Prolog and Epilog
settings as PcsAcceleratedWorkload sets them) and the node's configless slurmd, which has no
local slurm.conf and reads the node's files bound from the simulated root. pyxis itself
cannot run here (no enroot, no GPU), so a SPANK probe compiled here with gcc against Debian's
libslurm-dev headers sits at the path the node's pyxis line names: it adds ``--fm-probe`` to
srun and records that slurmstepd loaded it. The test then reads back that srun lists the
option, that a job step on the node loads the plugin through slurmd, that slurmd ran the
cluster's Prolog (a stand-in nvidia-smi, as the machine has no GPU, logs the prolog's health
query), and that a line in a plugstack.conf under the PCS Slurm prefix is not read. With the
pinned pyxis release at hand (FM_PYXIS_SOURCE, as for tests/unit/test_hyperpod_containers.py),
a second test builds the real pyxis through the node's containers.sh and shows srun listing
``--container-image`` and slurmstepd running pyxis for a job step (which then stops: there is
no enroot here).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fm_constructs import pins
from fm_constructs.orchestration.pcs.user_data import (
    job_hook_settings,
    pcs_user_data,
    plugstack_file,
    slurm_prefix,
)
from tests.slurm_namespaces import (
    NamespaceRun,
    daemon_directory,
    run_in_namespaces,
    skip_without,
)
from tests.unit.test_hyperpod_containers import SLURM_HEADERS, _need_pyxis_source
from tests.unit.test_pcs_node import SCRIPTS_URI, SLURM_PREFIX, _boot, _node, _params

#: Real slurmctld and slurmd started on the node's files: the end-to-end stage (make e2e).
pytestmark = pytest.mark.e2e

DAEMONS = ("slurmctld", "slurmd", "srun", "munged", "gcc")
VERSION = pins.pcs().slurm_version
NODE = "fm-pcs-node"
PORT = 16917
#: slurmd's port, away from Slurm's default 6818: the daemons share the host's network with the
#: HyperPod daemon test, which may run at the same time on another worker.
SLURMD_PORT = PORT + 1

#: A SPANK plugin with one srun option; in slurmstepd (remote context) it writes a marker.
PROBE_C = r"""
#include <stdio.h>
#include <slurm/spank.h>

SPANK_PLUGIN(fm_probe, 1);

static int probe_option(int val, const char *optarg, int remote) { return 0; }

struct spank_option spank_options[] = {
    {"fm-probe", NULL, "fm-constructs plugstack probe", 0, 0, probe_option},
    SPANK_OPTIONS_TABLE_END
};

int slurm_spank_init(spank_t sp, int ac, char **av)
{
    if (spank_remote(sp)) {
        FILE *marker = fopen("/run/fm-probe-remote", "a");
        if (marker) {
            fputs("loaded by slurmstepd\n", marker);
            fclose(marker);
        }
    }
    return 0;
}
"""


def _controller_conf(state: Path) -> str:
    """slurm.conf of the stand-in controller: configless, one node, the PCS hook settings."""
    hooks = job_hook_settings(VERSION)
    return "\n".join(
        [
            "ClusterName=fm-pcs",
            "SlurmctldHost=localhost(127.0.0.1)",
            f"SlurmctldPort={PORT}",
            f"SlurmdPort={SLURMD_PORT}",
            "SlurmctldParameters=enable_configless",
            "SlurmUser=root",
            "AuthType=auth/munge",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "JobAcctGatherType=jobacct_gather/none",
            "SelectType=select/cons_tres",
            "ReturnToService=2",
            f"StateSaveLocation={state}/slurmctld",
            f"SlurmdSpoolDir={state}/slurmd",
            f"SlurmctldPidFile={state}/slurmctld.pid",
            f"SlurmdPidFile={state}/slurmd.pid",
            f"SlurmctldLogFile={state}/slurmctld.log",
            f"SlurmdLogFile={state}/slurmd.log",
            # As PcsAcceleratedWorkload sets them (SlurmCustomSettings).
            f"Prolog={hooks['Prolog']}",
            f"Epilog={hooks['Epilog']}",
            f"NodeName={NODE} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory=500",
            f"PartitionName=accelerated Nodes={NODE} Default=YES State=UP",
            "",
        ]
    )


#: The node's files and the daemons: a configless slurmctld standing in for the service's
#: controller, and the node's slurmd with no slurm.conf of its own.
DAEMONS_SCRIPT = r"""
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /opt
mkdir -p /etc/slurm /etc/aws /usr/local/lib/slurm /usr/local/bin /var/log/slurm /opt/aws
# The node has no slurm.conf of its own: everything comes from the controller.
mount -t tmpfs tmpfs /etc/slurm
mount -t tmpfs tmpfs /var/log/slurm
mount --bind "$ROOT/etc/aws" /etc/aws
mount --bind "$ROOT/opt/aws" /opt/aws
mount --bind "$PLUGINS" /usr/local/lib/slurm
mount --bind "$TOOLS" /usr/local/bin
mkdir -p /run/munge

install -m 0400 "$KEY" /run/munge/munge.key
munged --key-file=/run/munge/munge.key --force > "$STATE/munged.out" 2>&1
slurmctld -D -i -f "$CONTROLLER/slurm.conf" > "$STATE/slurmctld.out" 2>&1 &
wait_for 60 env SLURM_CONF="$CONTROLLER/slurm.conf" scontrol ping
hostname "$NODE"
slurmd -D -N "$NODE" --conf-server "127.0.0.1:$PORT" > "$STATE/slurmd.out" 2>&1 &
# Client commands now find the configuration slurmd fetched (/run/slurm/conf).
wait_for 60 test -e /run/slurm/conf/slurm.conf
wait_for 60 bash -c "scontrol show node $NODE | grep -q 'State=IDLE'"
echo "== fetched"
ls /run/slurm/conf/
"""

PROBE_SCRIPT = r"""
echo "== help"
srun --help 2>&1 | grep -c -- '--fm-probe' || true
echo "== step"
srun -N1 -w "$NODE" --fm-probe true 2>&1
cat /run/fm-probe-remote 2>&1 || true
echo "== prolog"
cat "$STATE/nvidia-smi.calls" 2>&1 || true
echo "== prefix"
# The line under the Slurm prefix only: srun no longer finds the plugin.
mkdir -p "/opt/aws/pcs/scheduler/slurm-$VERSION/etc"
cp "$PLUGSTACK" "/opt/aws/pcs/scheduler/slurm-$VERSION/etc/plugstack.conf"
mv "$PLUGSTACK" "$PLUGSTACK.off"
srun --help 2>&1 | grep -c -- '--fm-probe' || true
mv "$PLUGSTACK.off" "$PLUGSTACK"
"""

PYXIS_SCRIPT = r"""
echo "== help"
srun --help 2>&1 | grep -- '--container-image' || true
echo "== step"
# No enroot on this machine: pyxis in slurmstepd fails the step, naming itself.
srun -N1 -w "$NODE" --container-image=ubuntu:22.04 true 2>&1 || true
"""


def _boot_compute_node(base: Path, pyxis: Path | None = None) -> Path:
    """A PCS compute node booted from its user data under ``base``; with ``pyxis`` (the
    pinned release archive) containers.sh builds the real plugin against Debian's Slurm
    headers, as the node builds it against the PCS Slurm's. Returns the node's root."""
    node = _node(base / "node", _params(efa_fs=False), efa_devices=0, real_make=pyxis is not None)
    if pyxis is not None:
        include = node.root / SLURM_PREFIX.lstrip("/") / "include"
        shutil.rmtree(include)
        include.mkdir()
        (include / "slurm").symlink_to(SLURM_HEADERS)
        node.serve(node.pyxis_url, pyxis.read_bytes())
    booted = _boot(
        base / "node", node, pcs_user_data("compute", "accelerated", SCRIPTS_URI, nvme_disks=0)
    )
    assert booted.returncode == 0, booted.stdout + booted.stderr
    return node.root


@pytest.fixture
def booted_node() -> Iterator[tuple[Path, Path]]:
    skip_without(DAEMONS, "slurmctld, slurmd, munge, gcc")
    if not (SLURM_HEADERS / "spank.h").exists():
        pytest.skip("libslurm-dev is not installed (slurm/spank.h)")
    with daemon_directory("fm-pcs-slurmd-") as base:
        yield base, _boot_compute_node(base)


def _run_daemons(base: Path, root: Path, plugins: Path, script: str) -> NamespaceRun:
    """:data:`DAEMONS_SCRIPT` then ``script``, on the node at ``root`` with the SPANK plugin
    directory ``plugins`` at /usr/local/lib/slurm; the controller's slurm.conf has the
    cluster's Prolog and Epilog, its plugstack.conf the include PCS documents."""
    plugstack = plugstack_file(VERSION)
    state, controller, tools = base / "state", base / "controller", base / "tools"
    for path in (state, controller, tools):
        path.mkdir()
    (controller / "slurm.conf").write_text(_controller_conf(state))
    (controller / "plugstack.conf").write_text(f"include {Path(plugstack).parent}/*.conf\n")
    # The prolog's GPU query on a machine with no GPU: 8 healthy GPUs, each call logged.
    nvidia_smi = tools / "nvidia-smi"
    nvidia_smi.write_text(
        "#!/usr/bin/env bash\n"
        f'echo "$*" >> {state}/nvidia-smi.calls\n'
        'for i in 0 1 2 3 4 5 6 7; do echo "$i, No"; done\n'
    )
    nvidia_smi.chmod(0o755)
    key = base / "munge.key"
    key.write_bytes(os.urandom(1024))
    run = run_in_namespaces(
        DAEMONS_SCRIPT + script,
        state,
        {
            "ROOT": str(root),
            "STATE": str(state),
            "CONTROLLER": str(controller),
            "PLUGINS": str(plugins),
            "TOOLS": str(tools),
            "KEY": str(key),
            "NODE": NODE,
            "PORT": str(PORT),
            "VERSION": VERSION,
            "PLUGSTACK": plugstack,
        },
    )
    assert run.result.returncode == 0, run.output
    # slurmd fetched the controller's plugstack.conf with slurm.conf.
    assert {"slurm.conf", "plugstack.conf"} <= set(run.sections["fetched"].split()), run.logs
    return run


def test_configless_slurmd_and_srun_read_the_pcs_spank_directory_and_run_the_prolog(
    booted_node: tuple[Path, Path],
) -> None:
    base, root = booted_node
    line = (root / plugstack_file(VERSION).lstrip("/")).read_text().strip()
    assert line == "optional /usr/local/lib/slurm/spank_pyxis.so"
    # The probe at the path the pyxis line names.
    plugins = base / "plugins"
    plugins.mkdir()
    source = base / "probe.c"
    source.write_text(PROBE_C)
    built = subprocess.run(
        ["gcc", "-shared", "-fPIC", "-o", str(plugins / "spank_pyxis.so"), str(source)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    run = _run_daemons(base, root, plugins, PROBE_SCRIPT)
    sections, logs = run.sections, run.logs
    # srun (a client command on the node) loaded the plugin through the include...
    assert sections["help"].strip() == "1", sections["help"] + logs
    # ...and so did slurmstepd, started by slurmd for the job step.
    assert "loaded by slurmstepd" in sections["step"], sections["step"] + logs
    # slurmd ran the cluster's Prolog, the node's own file, which read the node's 8 GPUs.
    assert "--query-gpu=index,remapped_rows.failure" in sections["prolog"], logs
    # A plugstack.conf under the PCS Slurm prefix is not what configless Slurm reads.
    assert sections["prefix"].strip() == "0", sections["prefix"] + logs
    assert slurm_prefix(VERSION) == f"/opt/aws/pcs/scheduler/slurm-{VERSION}"


def test_the_real_pyxis_the_node_builds_is_loaded_by_srun_and_slurmstepd(tmp_path: Path) -> None:
    """With the pinned pyxis release (FM_PYXIS_SOURCE, as in test_hyperpod_containers.py),
    the plugin containers.sh builds on the PCS node is the one srun and slurmstepd load."""
    skip_without(DAEMONS, "slurmctld, slurmd, munge, gcc")
    archive = _need_pyxis_source(tmp_path)
    with daemon_directory("fm-pcs-pyxis-") as base:
        root = _boot_compute_node(base, pyxis=archive)
        plugins = root / "usr" / "local" / "lib" / "slurm"
        assert (plugins / "spank_pyxis.so").read_bytes()[:4] == b"\x7fELF"
        run = _run_daemons(base, root, plugins, PYXIS_SCRIPT)
        # pyxis's own srun option, from the node-local SPANK directory.
        assert "--container-image" in run.sections["help"], run.output
        # The job step reached pyxis in slurmstepd, which stops it without enroot.
        assert (
            f"slurmstepd-{NODE}: error: pyxis: failed to import docker image"
            in (run.sections["step"])
        ), run.output
