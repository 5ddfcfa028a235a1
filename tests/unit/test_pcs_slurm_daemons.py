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
query), and that a line in a plugstack.conf under the PCS Slurm prefix is not read.
"""

from __future__ import annotations

import os
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
from tests.slurm_namespaces import daemon_directory, run_in_namespaces, skip_without
from tests.unit.test_pcs_node import SCRIPTS_URI, _boot, _node, _params

#: Real slurmctld and slurmd started on the node's files: the end-to-end stage (make e2e).
pytestmark = pytest.mark.e2e

DAEMONS = ("slurmctld", "slurmd", "srun", "munged", "gcc")
VERSION = pins.pcs().slurm_version
NODE = "fm-pcs-node"
PORT = 16917

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


NAMESPACE_SCRIPT = r"""
set -euo pipefail
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


@pytest.fixture
def booted_node() -> Iterator[tuple[Path, Path]]:
    skip_without(DAEMONS, "slurmctld, slurmd, munge, gcc")
    if not Path("/usr/include/slurm/spank.h").exists():
        pytest.skip("libslurm-dev is not installed (slurm/spank.h)")
    with daemon_directory("fm-pcs-slurmd-") as base:
        node = _node(base / "node", _params(efa_fs=False), efa_devices=0)
        booted = _boot(
            base / "node",
            node,
            pcs_user_data("compute", "accelerated", SCRIPTS_URI, nvme_disks=0),
        )
        assert booted.returncode == 0, booted.stdout + booted.stderr
        yield base, node.root


def test_configless_slurmd_and_srun_read_the_pcs_spank_directory_and_run_the_prolog(
    booted_node: tuple[Path, Path],
) -> None:
    base, root = booted_node
    plugstack = plugstack_file(VERSION)
    line = (root / plugstack.lstrip("/")).read_text().strip()
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
    state = base / "state"
    controller = base / "controller"
    tools = base / "tools"
    for path in (state, controller, tools):
        path.mkdir()
    (controller / "slurm.conf").write_text(_controller_conf(state))
    # The controller's plugstack.conf as PCS documents it: an include of the node's directory.
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
        NAMESPACE_SCRIPT,
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
    sections, logs = run.sections, run.logs
    # slurmd fetched the controller's plugstack.conf with slurm.conf.
    assert {"slurm.conf", "plugstack.conf"} <= set(sections["fetched"].split()), logs
    # srun (a client command on the node) loaded the plugin through the include...
    assert sections["help"].strip() == "1", sections["help"] + logs
    # ...and so did slurmstepd, started by slurmd for the job step.
    assert "loaded by slurmstepd" in sections["step"], sections["step"] + logs
    # slurmd ran the cluster's Prolog, the node's own file, which read the node's 8 GPUs.
    assert "--query-gpu=index,remapped_rows.failure" in sections["prolog"], logs
    # A plugstack.conf under the PCS Slurm prefix is not what configless Slurm reads.
    assert sections["prefix"].strip() == "0", sections["prefix"] + logs
    assert slurm_prefix(VERSION) == f"/opt/aws/pcs/scheduler/slurm-{VERSION}"
