"""The GPU subnet's demand at the largest size of every node group: what each orchestrator
really requests, autoscaling maxima, and the addresses that are not nodes."""

from __future__ import annotations

import dataclasses
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
    # The instance group requests efa-only interfaces (no address); Slurm runs no pods.
    assert group.orchestrator is Orchestrator.HYPERPOD_SLURM
    assert group.layout is EfaLayout.EFA_ONLY
    assert group.addressing.per_node == 1
    legacy = dataclasses.replace(profile.pretraining, efa_layout=EfaLayout.LEGACY)
    assert requested_layout(legacy) is EfaLayout.LEGACY  # efa: one address per EFA card

    eks = load_profile(ROOT / "config" / "hyperpod-eks.toml")
    groups = {g.name: g for g in subnet_demand(eks).node_groups}
    # HyperPod-EKS p5 with efa-only: like an EKS node group, 1 + 49 pod addresses.
    assert groups["post_training"].addressing.per_node == 50


def test_autoscaling_maximum_and_other_addresses_are_counted() -> None:
    profile = load_profile(ROOT / "config" / "inference-g6e.toml")
    demand = subnet_demand(profile)
    (group,) = demand.node_groups
    assert largest_node_count(profile.inference) == 8
    assert group.nodes == 8
    fixed = dict(demand.fixed)
    assert fixed["interface endpoints"] == 12
    assert fixed["shared EKS cluster control plane"] == EKS_CONTROL_PLANE_ADDRESSES
    assert fixed["inference: network load balancer"] == 1
    assert fsx_addresses(9600) == 2 + 8


def test_each_eks_cluster_is_counted_once() -> None:
    """Workloads sharing the platform's cluster count one control plane and one system node
    group; a dedicated cluster counts its own."""
    profile = load_profile(ROOT / "config" / "default.toml")
    fixed = [what for what, _ in subnet_demand(profile).fixed]
    assert fixed.count("shared EKS cluster control plane") == 1
    assert not any(what.endswith(": EKS control plane") for what in fixed)
    inference = dataclasses.replace(profile.inference, dedicated_cluster=True)
    dedicated = dataclasses.replace(profile, inference=inference)
    planes = [what for what, _ in subnet_demand(dedicated).fixed if "control plane" in what]
    assert planes == ["shared EKS cluster control plane", "inference: EKS cluster control plane"]


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
