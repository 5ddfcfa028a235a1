"""Subnet IP budget: addresses per node by layout, and plans that do not fit."""

from __future__ import annotations

from typing import Any

import pytest

from fm_constructs.catalog import InstanceSpec, all_instance_types, get_instance_type
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.ip_budget import (
    ip_addresses_per_node,
    ip_budget,
    node_addressing,
    smallest_prefix_for,
)
from fm_constructs.rules import subnets as subnet_rules

P5 = get_instance_type("p5.48xlarge")
P6_B300 = get_instance_type("p6-b300.48xlarge")
P4D = get_instance_type("p4d.24xlarge")


def test_addresses_per_node_by_layout() -> None:
    assert ip_addresses_per_node(P5, EfaLayout.EFA_ONLY) == 1
    assert ip_addresses_per_node(P5, EfaLayout.LEGACY) == 32
    assert ip_addresses_per_node(P6_B300, EfaLayout.LEGACY) == 17
    assert ip_addresses_per_node(P5, None) == 1
    assert ip_addresses_per_node(P5, EfaLayout.EFA_ONLY, pod_ips_per_node=49) == 50


def test_negative_pod_ips_rejected() -> None:
    with pytest.raises(FmValidationError, match="pod_ips_per_node"):
        ip_addresses_per_node(P5, EfaLayout.EFA_ONLY, pod_ips_per_node=-1)


def test_fitting_plan_reports_the_arithmetic() -> None:
    budget = ip_budget(
        node_count=64, spec=P5, layout=EfaLayout.EFA_ONLY, subnet_prefix=21, pod_ips_per_node=30
    )
    assert budget.addresses_per_node == 31
    assert budget.required == 64 * 31
    assert budget.subnet_addresses == 2048
    assert budget.usable == 2043
    assert budget.free == 2043 - 1984
    assert budget.fits
    assert 0.9 < budget.utilization < 1.0
    assert (
        subnet_rules.ip_budget(
            node_count=64,
            spec=P5,
            layout=EfaLayout.EFA_ONLY,
            subnet_cidr="10.0.0.0/21",
            pod_ips_per_node=30,
        )
        == []
    )


def _message(**arguments: Any) -> str:
    """The rule's one finding for ``arguments``, as every layer prints it."""
    (finding,) = subnet_rules.ip_budget(**arguments)
    assert finding.code == "FM815"
    return finding.line()


@pytest.mark.parametrize("cidr", ["10.0.0.0/21", "/21", 21])
def test_subnet_spellings(cidr: str | int) -> None:
    # 2043 usable addresses in a /21: 2043 single-address nodes fit, one more does not.
    assert subnet_rules.ip_budget(node_count=2043, spec=P5, layout=None, subnet_cidr=cidr) == []
    message = _message(node_count=2044, spec=P5, layout=None, subnet_cidr=cidr)
    assert "/21 has only 2043 usable" in message


def test_legacy_layout_that_does_not_fit_names_numbers_and_fixes() -> None:
    message = _message(node_count=64, spec=P5, layout=EfaLayout.LEGACY, subnet_cidr="10.0.0.0/21")
    assert "64 x p5.48xlarge need 2048 addresses (32 addresses per node)" in message
    assert "/21 has only 2043 usable" in message
    assert "short by 5" in message
    assert "use a /20 or larger subnet" in message
    assert "efa-only layout" in message and "1 addresses per node instead of 32" in message


def test_pod_ips_suggest_secondary_cidr_and_other_addresses_count() -> None:
    message = _message(
        node_count=16,
        spec=P5,
        layout=EfaLayout.EFA_ONLY,
        subnet_cidr="/24",
        pod_ips_per_node=20,
        other_addresses=10,
    )
    assert "secondary VPC CIDR" in message
    assert "10 of them needed elsewhere" in message


def test_plan_too_big_for_any_subnet_omits_subnet_advice() -> None:
    message = _message(node_count=4000, spec=P5, layout=EfaLayout.LEGACY, subnet_cidr="/16")
    assert "or larger subnet" not in message
    assert smallest_prefix_for(4000 * 32) == 15


@pytest.mark.parametrize("cidr", ["10.0.0.0/29", "/12", "banana", 30])
def test_invalid_subnets(cidr: str | int) -> None:
    assert _message(node_count=1, spec=P5, layout=None, subnet_cidr=cidr).startswith(
        "subnet_cidr: must be an IPv4 CIDR"
    )


def test_negative_counts_reported_together() -> None:
    findings = subnet_rules.ip_budget(
        node_count=-1, spec=P5, layout=None, subnet_cidr="/20", other_addresses=-3
    )
    assert [f.key for f in findings] == ["node_count", "other_addresses"]


# --- VPC CNI arithmetic -------------------------------------------------------------------


EFA_SPECS = [spec for spec in all_instance_types() if spec.efa_supported]


@pytest.mark.parametrize(
    ("name", "pod_ips", "max_pods"),
    [
        # (card-0 max - efa-only on card 0) x (IPv4 per ENI - 1); kubelet: card-0 max x (.. - 1) + 2
        ("p5.48xlarge", 49, 100),
        ("p5e.48xlarge", 49, 100),
        ("trn2.48xlarge", 49, 100),
        ("trn2.3xlarge", 14, 30),
        ("p5en.48xlarge", 147, 198),
        ("p6-b200.48xlarge", 147, 198),
        ("p6-b300.48xlarge", 196, 198),  # card 0 is ENA-only: no efa-only slot on it
        ("p4d.24xlarge", 686, 737),
        ("g6e.48xlarge", 441, 492),
    ],
)
def test_pod_addresses_follow_the_vpc_cni(name: str, pod_ips: int, max_pods: int) -> None:
    addressing = node_addressing(get_instance_type(name), EfaLayout.EFA_ONLY, vpc_cni=True)
    assert (addressing.pod_ip_capacity, addressing.kubelet_max_pods) == (pod_ips, max_pods)


@pytest.mark.parametrize("layout", list(EfaLayout))
@pytest.mark.parametrize("spec", EFA_SPECS, ids=[s.name for s in EFA_SPECS])
def test_every_type_and_layout_against_the_cni_formula(
    spec: InstanceSpec, layout: EfaLayout
) -> None:
    if layout is EfaLayout.EFA_ONLY and not spec.efa_only_supported:
        pytest.skip("efa-only not accepted by this type")
    card0 = spec.network_card(0)
    per_eni = spec.ipv4_addresses_per_interface - 1
    # efa-only sits at card 0 / device 1 whenever card 0 has EFA (EFA_ONLY layout).
    efa_only_on_card0 = int(layout is EfaLayout.EFA_ONLY and card0.efa_supported)
    enis = card0.max_interfaces - efa_only_on_card0
    # interfaces with an address off card 0: legacy efa on every other EFA card.
    other_ips = (
        len([c for c in spec.efa_card_indexes if c != 0]) if layout is EfaLayout.LEGACY else 0
    )
    addressing = node_addressing(spec, layout, vpc_cni=True)
    assert addressing.cni_enis == enis
    assert addressing.pod_ip_capacity == enis * per_eni
    assert addressing.kubelet_max_pods == card0.max_interfaces * per_eni + 2
    # A full node: every ENI the CNI may attach, each filled: enis x IPv4 per interface.
    assert addressing.per_node == enis * spec.ipv4_addresses_per_interface + other_ips
    # Slurm: no pod addresses, only the interfaces.
    assert node_addressing(spec, layout, vpc_cni=False).per_node == 1 + other_ips


def test_few_pods_need_fewer_enis_plus_the_warm_one() -> None:
    # p4d: 10 pods fit the primary ENI; WARM_ENI_TARGET=1 attaches one more, filled:
    # node IP + 49 + (1 + 49) = 100.
    addressing = node_addressing(P4D, EfaLayout.EFA_ONLY, vpc_cni=True, pods_per_node=10)
    assert addressing.per_node == 100


def test_prefix_delegation_counts_whole_prefixes() -> None:
    # p5 efa-only: 1 ENI of 49 /28 prefixes = 784 addresses; kubelet capped at 250 (>30 vCPUs).
    addressing = node_addressing(P5, EfaLayout.EFA_ONLY, vpc_cni=True, prefix_delegation=True)
    assert addressing.pod_ip_capacity == 49 * 16
    assert addressing.kubelet_max_pods == 250
    assert addressing.per_node == 1 + 49 * 16
    assert addressing.pods_without_address == 0


def test_pods_beyond_the_cni_capacity_are_reported() -> None:
    addressing = node_addressing(P5, EfaLayout.EFA_ONLY, vpc_cni=True)
    assert addressing.pods_without_address == 100 - 2 - 49
