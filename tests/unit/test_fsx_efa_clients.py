"""FM316 (the EFA connections of an EFA-enabled FSx for Lustre file system) counts EKS node
groups and HyperPod EKS clusters as it counts HyperPod Slurm and AWS PCS clusters: every EFA
node mounting it takes a connection."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.config import load_profile
from fm_constructs.config.model import Orchestrator
from fm_constructs.config.rules import check_profile, fsx_efa_connection_nodes
from fm_constructs.planning.fsx_sizing import EFA_CONNECTIONS

ROOT = Path(__file__).resolve().parents[2]


def _profile(orchestrator: Orchestrator, nodes: int, **pretraining: Any) -> Any:
    profile = load_profile(ROOT / "config" / "default.toml")
    storage = dataclasses.replace(profile.pretraining.storage, efa_enabled=True)
    workload = dataclasses.replace(
        profile.pretraining,
        orchestrator=orchestrator,
        instance_count=nodes,
        storage=storage,
        **pretraining,
    )
    return dataclasses.replace(profile, pretraining=workload)


@pytest.mark.parametrize(
    "orchestrator",
    [Orchestrator.EKS, Orchestrator.HYPERPOD_SLURM, Orchestrator.PCS, Orchestrator.HYPERPOD_EKS],
)
def test_the_limit_is_checked_for_eks_as_for_hyperpod(orchestrator: Orchestrator) -> None:
    at_limit = _profile(orchestrator, EFA_CONNECTIONS)
    over = _profile(orchestrator, EFA_CONNECTIONS + 1)
    assert fsx_efa_connection_nodes(at_limit, at_limit.pretraining) == EFA_CONNECTIONS
    assert "FM316" not in {f.code for f in check_profile(at_limit)}
    (finding,) = [f for f in check_profile(over) if f.code == "FM316"]
    assert finding.key == "pretraining.instance_count" and not finding.is_error


def test_no_efa_on_the_file_system_no_count() -> None:
    profile = _profile(Orchestrator.EKS, 2000)
    plain = dataclasses.replace(
        profile,
        pretraining=dataclasses.replace(
            profile.pretraining,
            storage=dataclasses.replace(profile.pretraining.storage, efa_enabled=False),
        ),
    )
    assert fsx_efa_connection_nodes(plain, plain.pretraining) == 0


def test_trn2_nodes_take_no_efa_connection() -> None:
    """FSx takes no EFA client of the trn2 family ("Configuring EFA clients"): its nodes mount
    over TCP, so 2,000 of them leave the file system's EFA connections untouched, and the
    other workloads' nodes size their LNet interfaces without them."""
    profile = _profile(Orchestrator.EKS, 2000, instance_type="trn2.48xlarge")
    assert fsx_efa_connection_nodes(profile, profile.pretraining) == 0
    assert "FM316" not in {f.code for f in check_profile(profile)}
