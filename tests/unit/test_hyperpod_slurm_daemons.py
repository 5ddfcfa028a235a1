"""The controller's generated Slurm configuration, accepted by the real daemons.

A simulated controller runs ``on_create.sh`` (its accounting step writes accounting.conf,
slurmdbd.conf and the SQL for MariaDB; the include guard appends the include lines to the
agent's slurm.conf; the job hooks land in fm-hooks.conf). Then, in private mount and PID
namespaces (the node's /opt/slurm bound from the simulated root, so every path in the files is
the one the node has; every daemon ends with the namespace), Debian's real daemons start on
that configuration: MariaDB runs the generated SQL, munged, slurmdbd with the generated
slurmdbd.conf, and slurmctld with the agent-like slurm.conf and its includes, on loopback. The
test reads back what slurmctld parsed (``scontrol show config``, ``scontrol show node``:
accounting, GRES, hooks) and submits the job scripts with ``sbatch --test-only``: their
directives and plugstack.conf are read and the request reaches slurmctld, which cannot place
it (no GPU worker's slurmd can register here). A CPU worker this machine can be does run a
real slurmd: the lifecycle's node_components.sh, as that worker, drains it with the reason
naming what it lacks (``sinfo -R``) and undrains it once nothing is. Only the agent's part of
slurm.conf is written here (HyperPod writes it on a real cluster), with the daemons' state
under a temporary directory.
"""

from __future__ import annotations

import copy
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fm_constructs.orchestration.hyperpod import scripts_directory
from tests.hyperpod_node import SimulatedNode
from tests.slurm_namespaces import daemon_directory, run_in_namespaces, skip_without
from tests.unit.test_hyperpod_node import RESOURCE_CONFIG, slurm_params

#: Real slurmctld, slurmdbd and MariaDB started from the generated configuration: the end-to-end
#: stage (make e2e, run by .ci/run after make test).
pytestmark = pytest.mark.e2e

DAEMONS = ("slurmctld", "slurmdbd", "munged", "mariadbd", "mariadb-install-db", "mysql")
JOBS = scripts_directory() / "jobs"
CPU_WORKER = "ip-10-1-4-22"


def _agent_slurm_conf(state: Path) -> str:
    """slurm.conf as HyperPod's agent writes it (controller, nodes with their GPUs, the
    partition), with the daemons' state under ``state``."""
    return "\n".join(
        [
            "ClusterName=fm-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            "SlurmctldPort=16817",
            "SlurmUser=slurm",
            "AuthType=auth/munge",
            "MpiDefault=none",
            "ProctrackType=proctrack/linuxproc",
            "SelectType=select/cons_tres",
            "ReturnToService=2",
            f"StateSaveLocation={state}/slurmctld",
            f"SlurmctldPidFile={state}/slurmctld.pid",
            f"SlurmctldLogFile={state}/slurmctld.log",
            "NodeName=ip-10-1-4-[20-21] NodeAddr=127.0.0.1 CPUs=192 RealMemory=2000000 "
            "Gres=gpu:8 State=UNKNOWN",
            "PartitionName=accelerated-workers Nodes=ip-10-1-4-[20-21] Default=YES "
            "MaxTime=INFINITE State=UP",
            # A worker this machine can be (its CPUs, no GPU), whose slurmd really registers.
            f"NodeName={CPU_WORKER} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory=1000",
            f"PartitionName=cpu Nodes={CPU_WORKER} State=UP",
            "",
        ]
    )


#: Run in the namespaces, as root: the node's /opt/slurm, a private /run and /var/log/slurm,
#: the daemons (all of them end with the PID namespace when this script does).
NAMESPACE_SCRIPT = r"""
set -euo pipefail
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /opt
mkdir -p /opt/slurm /run/munge /run/mysqld /var/log/slurm
mount -t tmpfs tmpfs /var/log/slurm
mount --bind "$ROOT/opt/slurm" /opt/slurm
export SLURM_CONF=/opt/slurm/etc/slurm.conf

mariadb-install-db --no-defaults --datadir="$STATE/mysql" --user=root \
  --auth-root-authentication-method=socket > "$STATE/mariadb-install.log" 2>&1
mariadbd --no-defaults --datadir="$STATE/mysql" --user=root --socket=/run/mysqld/mysqld.sock \
  --skip-networking --pid-file="$STATE/mariadb.pid" > "$STATE/mariadb.log" 2>&1 &
wait_for 60 mysql --user=root -e 'SELECT 1'
# The SQL accounting.sh gave the controller's MariaDB.
mysql --user=root < "$SQL"
echo "== sql"

install -m 0400 -o slurm -g slurm "$KEY" /run/munge/munge.key
munged --key-file=/run/munge/munge.key --force > "$STATE/munged.out" 2>&1

# accounting.sh chowns slurmdbd.conf to the slurm user where the node has it (this one does).
chown slurm:slurm /opt/slurm/etc/slurmdbd.conf
slurmdbd -D -s > "$STATE/slurmdbd.out" 2>&1 &
wait_for 60 sacctmgr -n list cluster
sacctmgr -i add cluster fm-test > /dev/null

slurmctld -D -i -s > "$STATE/slurmctld.out" 2>&1 &
wait_for 60 scontrol ping
echo "== config"
scontrol show config
echo "== node"
scontrol show node ip-10-1-4-20
echo "== jobs"
cd "$STATE"
sbatch --test-only --partition=accelerated-workers --ntasks-per-node=8 \
  --export=ALL,IMAGE=x#y:1 "$JOBS/nccl-tests.sbatch" 2>&1 || true
sbatch --test-only --partition=accelerated-workers \
  --export=ALL,IMAGE=x#y:1 "$JOBS/torchrun.sbatch" /fsx/train.py 2>&1 || true
echo "== clusters"
sacctmgr -n -P list cluster format=cluster

# A worker missing pyxis drains itself once its slurmd has registered, and undrains once
# nothing is missing, with the lifecycle's own script against this slurmctld (run as that
# worker: its host name, Debian's scontrol).
mount -t tmpfs tmpfs /var/lib
mkdir -p /var/lib/fm-constructs /var/spool/slurmd
hostname "$CPU_WORKER"
slurmd -D -N "$CPU_WORKER" > "$STATE/slurmd.out" 2>&1 &
wait_for 60 bash -c "scontrol show node $CPU_WORKER | grep -q 'State=IDLE '"
echo pyxis > /var/lib/fm-constructs/missing-components
echo "== drain"
SLURM_PREFIX=/usr FM_ROOT= bash "$LIFECYCLE/node_components.sh" sync worker "$PARAMS" 2>&1
echo "== drained"
sinfo -R -h -o '%n|%E'
scontrol show node "$CPU_WORKER" | grep -o 'State=[A-Z+_]*'
: > /var/lib/fm-constructs/missing-components
echo "== undrain"
SLURM_PREFIX=/usr FM_ROOT= bash "$LIFECYCLE/node_components.sh" sync worker "$PARAMS" 2>&1
echo "== resumed"
sinfo -R -h -o '%n|%E'
scontrol show node "$CPU_WORKER" | grep -o 'State=[A-Z+_]*'
"""


@pytest.fixture
def controller() -> Iterator[tuple[SimulatedNode, Path]]:
    skip_without(DAEMONS, "slurmctld, slurmdbd, munge, mariadb-server")
    # slurmdbd and slurmctld read their files as the slurm user.
    with daemon_directory("fm-slurmctld-") as base:
        resources = copy.deepcopy(RESOURCE_CONFIG)
        resources["InstanceGroups"][0]["Instances"][0]["CustomerIpAddress"] = "127.0.0.1"
        sim = SimulatedNode(
            base / "node",
            params=slurm_params(),
            resource_config=resources,
            address="127.0.0.1",
        )
        state = base / "state"
        state.mkdir()
        shutil.chown(state, "slurm", "slurm")
        sim.write_slurm_conf(_agent_slurm_conf(state))
        yield sim, state


def test_the_generated_configuration_starts_slurmdbd_and_slurmctld(
    controller: tuple[SimulatedNode, Path],
) -> None:
    sim, state = controller
    run = sim.run()
    assert run.returncode == 0, run.output
    etc = sim.root / "opt" / "slurm" / "etc"
    assert "include /opt/slurm/etc/accounting.conf" in (etc / "slurm.conf").read_text()
    key = state / "munge.key"
    key.write_bytes(os.urandom(1024))
    daemons = run_in_namespaces(
        NAMESPACE_SCRIPT,
        state,
        {
            "ROOT": str(sim.root),
            "STATE": str(state),
            "SQL": str(sim.sim / "mysql.sql"),
            "KEY": str(key),
            "JOBS": str(JOBS),
            "LIFECYCLE": str(sim.scripts),
            "CPU_WORKER": CPU_WORKER,
            "PARAMS": str(sim.scripts / "provisioning_parameters.json"),
        },
    )
    assert daemons.result.returncode == 0, daemons.output
    sections = daemons.sections
    config = {
        key.strip(): value.strip()
        for key, _, value in (
            line.partition("=") for line in sections["config"].splitlines() if " = " in line
        )
    }
    # The include lines brought accounting, GRES types and the job hooks in, and slurmctld
    # runs with them against slurmdbd (whose database the generated SQL set up).
    assert config["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert config["AccountingStorageHost"] == "127.0.0.1"
    assert config["AccountingStoragePort"] == "6819"
    assert "gres/gpu" in config["AccountingStorageTRES"].split(",")
    assert config["GresTypes"] == "gpu"
    assert config["JobAcctGatherType"] == "jobacct_gather/linux"
    assert config["JobAcctGatherFrequency"].startswith("30")
    assert config["Prolog"] == "/opt/slurm/etc/scripts/fm-prolog.sh"
    assert config["Epilog"] == "/opt/slurm/etc/scripts/fm-epilog.sh"
    assert "Gres=gpu:8" in sections["node"] and "gres/gpu=8" in sections["node"]
    assert sections["clusters"].split() == ["fm-test"]
    # node_components.sh drained the worker with the reason naming what it lacks (sinfo -R),
    # read the real `scontrol show node` back, and undrained it.
    assert f"drained {CPU_WORKER}: fm-constructs: missing pyxis" in sections["drain"]
    drained = sections["drained"].splitlines()
    assert f"{CPU_WORKER}|fm-constructs: missing pyxis" in drained
    assert "State=IDLE+DRAIN" in drained
    resumed = sections["resumed"].splitlines()
    assert f"resumed {CPU_WORKER}: nothing is missing any more" in sections["undrain"]
    assert not any(line.startswith(CPU_WORKER) for line in resumed)
    assert not any("DRAIN" in line for line in resumed)
