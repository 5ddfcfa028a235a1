"""Subnet IP budget: addresses per node by layout, and plans that do not fit."""

from __future__ import annotations

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.ip_budget import (
    check_ip_budget,
    ip_addresses_per_node,
    smallest_prefix_for,
)

P5 = get_instance_type("p5.48xlarge")
P6_B300 = get_instance_type("p6-b300.48xlarge")


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
    budget = check_ip_budget(
        node_count=64,
        spec=P5,
        layout=EfaLayout.EFA_ONLY,
        subnet_cidr="10.0.0.0/21",
        pod_ips_per_node=30,
    )
    assert budget.addresses_per_node == 31
    assert budget.required == 64 * 31
    assert budget.subnet_addresses == 2048
    assert budget.usable == 2043
    assert budget.free == 2043 - 1984
    assert budget.fits
    assert 0.9 < budget.utilization < 1.0


@pytest.mark.parametrize("cidr", ["10.0.0.0/21", "/21", 21])
def test_subnet_spellings(cidr: str | int) -> None:
    budget = check_ip_budget(node_count=1, spec=P5, layout=None, subnet_cidr=cidr)
    assert budget.subnet_prefix == 21


def test_legacy_layout_that_does_not_fit_names_numbers_and_fixes() -> None:
    with pytest.raises(FmValidationError) as caught:
        check_ip_budget(node_count=64, spec=P5, layout=EfaLayout.LEGACY, subnet_cidr="10.0.0.0/21")
    message = str(caught.value)
    assert "64 x p5.48xlarge need 2048 addresses (32 addresses per node)" in message
    assert "/21 has only 2043 usable" in message
    assert "short by 5" in message
    assert "use a /20 or larger subnet" in message
    assert "efa-only layout" in message and "1 addresses per node instead of 32" in message


def test_pod_ips_suggest_secondary_cidr_and_other_addresses_count() -> None:
    with pytest.raises(FmValidationError, match="secondary VPC CIDR") as caught:
        check_ip_budget(
            node_count=16,
            spec=P5,
            layout=EfaLayout.EFA_ONLY,
            subnet_cidr="/24",
            pod_ips_per_node=20,
            other_addresses=10,
        )
    assert "10 of them needed elsewhere" in str(caught.value)


def test_plan_too_big_for_any_subnet_omits_subnet_advice() -> None:
    with pytest.raises(FmValidationError) as caught:
        check_ip_budget(node_count=4000, spec=P5, layout=EfaLayout.LEGACY, subnet_cidr="/16")
    assert "or larger subnet" not in str(caught.value)
    assert smallest_prefix_for(4000 * 32) == 15


@pytest.mark.parametrize("cidr", ["10.0.0.0/29", "/12", "banana", 30])
def test_invalid_subnets(cidr: str | int) -> None:
    with pytest.raises(FmValidationError, match="subnet_cidr"):
        check_ip_budget(node_count=1, spec=P5, layout=None, subnet_cidr=cidr)


def test_negative_counts_reported_together() -> None:
    with pytest.raises(FmValidationError, match="2 problems"):
        check_ip_budget(node_count=-1, spec=P5, layout=None, subnet_cidr="/20", other_addresses=-3)
