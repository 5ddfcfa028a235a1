"""The GPU subnet's demand at the largest size of every node group: what each orchestrator
really requests, autoscaling maxima, and the addresses that are not nodes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fm_constructs.config import load_profile
from fm_constructs.config.model import Orchestrator
from fm_constructs.config.subnet_demand import (
    EKS_CONTROL_PLANE_ADDRESSES,
    fsx_addresses,
    largest_node_count,
    requested_layout,
    subnet_demand,
)
from fm_constructs.planning.efa_layout import EfaLayout

ROOT = Path(__file__).resolve().parents[2]
PROFILES = sorted((ROOT / "config").glob("*.toml"))


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_every_shipped_profile_fits_at_its_largest(path: Path) -> None:
    demand = subnet_demand(load_profile(path))
    assert demand.fits, demand
    assert demand.required == sum(g.addresses for g in demand.node_groups) + sum(
        n for _, n in demand.fixed
    )


def test_hyperpod_groups_count_what_they_request() -> None:
    profile = load_profile(ROOT / "config" / "hyperpod-slurm.toml")
    (group,) = subnet_demand(profile).node_groups
    # No NetworkInterface in the instance group: counted as efa (one address) on every one of
    # p5en's 16 EFA cards, and no pod addresses on Slurm.
    assert group.orchestrator is Orchestrator.HYPERPOD_SLURM
    assert group.layout is EfaLayout.LEGACY
    assert group.addressing.per_node == 16
    assert group.addresses == 8 * 16

    eks = load_profile(ROOT / "config" / "hyperpod-eks.toml")
    groups = {g.name: g for g in subnet_demand(eks).node_groups}
    # HyperPod-EKS p5: 32 efa interfaces with addresses; the CNI may use both card-0 ENIs.
    assert groups["post_training"].addressing.per_node == 31 + 2 * 50
    assert requested_layout(eks.post_training) is EfaLayout.LEGACY


def test_autoscaling_maximum_and_other_addresses_are_counted() -> None:
    profile = load_profile(ROOT / "config" / "inference-g6e.toml")
    demand = subnet_demand(profile)
    (group,) = demand.node_groups
    assert largest_node_count(profile.inference) == 8
    assert group.nodes == 8
    fixed = dict(demand.fixed)
    assert fixed["interface endpoints"] == 12
    assert fixed["inference: EKS control plane"] == EKS_CONTROL_PLANE_ADDRESSES
    assert fixed["inference: network load balancer"] == 1
    assert fsx_addresses(9600) == 2 + 8


def test_system_node_allowance_matches_ec2_data() -> None:
    import gzip
    import json

    import moto

    from fm_constructs.config.subnet_demand import EKS_SYSTEM_NODE_ADDRESSES

    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        network = json.load(handle)["m7i.xlarge"]["NetworkInfo"]
    per_node = network["MaximumNetworkInterfaces"] * network["Ipv4AddressesPerInterface"]
    assert 4 * per_node == EKS_SYSTEM_NODE_ADDRESSES  # up to 2 x 2 system nodes
