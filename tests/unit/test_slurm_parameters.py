"""The Slurm node parameters HyperPod Slurm and AWS PCS share: both orchestrators run the same
node scripts, so what those scripts read (exporters, container runtime, LNet over EFA) must be
the same values whichever orchestrator wrote the parameters."""

from __future__ import annotations

import pytest
from aws_cdk import App, Stack

from fm_constructs.catalog import get_instance_type
from fm_constructs.orchestration.hyperpod import (
    Orchestrator,
    lifecycle,
    provisioning_parameters,
    scripts_directory,
    slurm_instance_groups,
)
from fm_constructs.orchestration.pcs.user_data import lnet_efa_interfaces, node_parameters
from fm_constructs.orchestration.slurm import (
    LNET_EFA_INTERFACES,
    container_parameters,
    default_lnet_efa_interfaces,
    fsx_parameters,
    metrics_parameters,
)
from fm_constructs.orchestration.slurm import scripts_directory as shared_scripts
from tests.constructs.test_monitoring_facade import IMPORTED_FS, _imported_fs

REGION = "eu-west-1"
REMOTE_WRITE = "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1/api/v1/remote_write"
FSX = {"dns_name": "fs-1.fsx", "mount_name": "abc", "mount_point": "/fsx", "efa_enabled": True}


def test_hyperpod_and_pcs_give_the_shared_scripts_the_same_values() -> None:
    hyperpod = provisioning_parameters(
        orchestrator=Orchestrator.SLURM,
        cluster_name="fm-hp",
        region=REGION,
        instance_groups=slurm_instance_groups(worker_instance_type="p5.48xlarge", worker_count=2),
        fsx=dict(FSX),
        prometheus_remote_write_url=REMOTE_WRITE,
    )
    pcs = node_parameters(
        node_groups=[("accelerated", get_instance_type("p5.48xlarge"))],
        fsx=dict(FSX),
        efa_clients=2,
        cluster_name="fm-pcs",
        region=REGION,
        workload="pretraining",
        prometheus_remote_write_url=REMOTE_WRITE,
    )
    shared = {**metrics_parameters(REGION), **container_parameters()}
    assert set(shared) == {
        "exporter_ports",
        "efa_exporter_image",
        "node_exporter_version",
        "prometheus_version",
        "slurm_exporter_version",
        "dcgm_exporter_image",
        "enroot_version",
        "pyxis_version",
        "download_sha256",
        "source_git_tree",
    }
    for key, value in shared.items():
        assert hyperpod[key] == value, key
        assert pcs[key] == value, key
    assert shared["efa_exporter_image"].startswith(f"602401143452.dkr.ecr.{REGION}.")
    # Both cap LNet's EFA interfaces the same way: 2 nodes of p5 share 1024 connections.
    assert hyperpod["worker_groups"][0]["lnet_efa_interfaces"] == 8
    assert pcs["node_groups"][0]["lnet_efa_interfaces"] == 8


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("p5.48xlarge", LNET_EFA_INTERFACES["p5.48xlarge"]),
        ("p4d.24xlarge", 2),  # several network cards, not in the FSx guide's table
        ("g6e.8xlarge", 1),  # one network card
        ("g5.xlarge", 0),  # no EFA
    ],
)
def test_lnet_uses_the_fsx_guides_figure_then_the_network_cards(
    instance_type: str, expected: int
) -> None:
    spec = get_instance_type(instance_type)
    assert default_lnet_efa_interfaces(spec) == expected
    assert lnet_efa_interfaces(spec, None) == expected
    # Many clients of one file system: each keeps at least one interface when it has EFA.
    assert lnet_efa_interfaces(spec, 4096) == min(expected, 1)


def test_former_import_paths_still_work() -> None:
    assert scripts_directory() == shared_scripts()
    assert (shared_scripts() / "on_create.sh").is_file()
    assert metrics_parameters(REGION)["exporter_ports"] == lifecycle.EXPORTER_PORTS
    assert lifecycle.efa_exporter_image(REGION) == metrics_parameters(REGION)["efa_exporter_image"]
    from fm_constructs.orchestration.hyperpod.lifecycle_scripts import dcgm_counters
    from fm_constructs.orchestration.slurm.node_scripts import dcgm_counters as shared

    assert dcgm_counters is shared


def test_an_imported_file_system_gives_both_orchestrators_the_same_fsx_table() -> None:
    """HyperPod's cluster and the PCS workload both build ``fsx`` with fsx_parameters, so
    mount_fsx.sh gets the same keys on either (HyperPod adds the shared directories)."""
    file_system = _imported_fs(Stack(App(), "S"), efa_enabled=True)
    assert fsx_parameters(file_system, "/fsx") == {
        "dns_name": f"{IMPORTED_FS}.fsx.us-east-1.amazonaws.com",
        "mount_name": "abcdefgh",
        "mount_point": "/fsx",
        "efa_enabled": True,
    }
    assert set(fsx_parameters(file_system, "/fsx")) == set(FSX)
