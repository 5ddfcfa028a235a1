"""EFA interface layouts: full bandwidth on every catalogued EFA type, AWS's placement rules."""

from __future__ import annotations

import pytest

from fm_constructs.catalog import efa_instance_types, get_instance_type
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.efa_layout import (
    EfaLayout,
    NetworkInterfaceSlot,
    efa_interface_count,
    efa_interface_layout,
)

EFA_TYPES = efa_instance_types()


def _as_tuples(slots: tuple[NetworkInterfaceSlot, ...]) -> list[tuple[int, int, str]]:
    return [(s.network_card_index, s.device_index, s.interface_type) for s in slots]


@pytest.mark.parametrize("name", EFA_TYPES)
@pytest.mark.parametrize("layout", list(EfaLayout))
def test_one_efa_per_efa_card_and_count_equals_maximum(name: str, layout: EfaLayout) -> None:
    spec = get_instance_type(name)
    slots = efa_interface_layout(spec, layout)
    efa_slots = [slot for slot in slots if slot.is_efa]
    assert efa_interface_count(slots) == spec.max_efa_interfaces
    assert sorted(slot.network_card_index for slot in efa_slots) == list(spec.efa_card_indexes)
    assert slots[0].is_primary and slots[0].has_ip
    # No two interfaces share a (card, device) position.
    positions = [(s.network_card_index, s.device_index) for s in slots]
    assert len(set(positions)) == len(positions)
    for card in spec.network_cards:
        assert sum(1 for s in slots if s.network_card_index == card.index) <= card.max_interfaces


@pytest.mark.parametrize("name", EFA_TYPES)
def test_efa_only_layout_follows_aws_rules(name: str) -> None:
    spec = get_instance_type(name)
    slots = efa_interface_layout(spec)
    assert slots[0] == NetworkInterfaceSlot(0, 0, "interface", has_ip=True)
    for slot in slots[1:]:
        assert slot.interface_type == "efa-only" and not slot.has_ip
        expected_device = 1 if slot.network_card_index == 0 else 0
        assert slot.device_index == expected_device
    assert sum(1 for slot in slots if slot.has_ip) == 1


@pytest.mark.parametrize("name", EFA_TYPES)
def test_legacy_layout_follows_aws_rules(name: str) -> None:
    spec = get_instance_type(name)
    slots = efa_interface_layout(spec, EfaLayout.LEGACY)
    card0_efa = spec.network_card(0).efa_supported
    assert slots[0] == NetworkInterfaceSlot(0, 0, "efa" if card0_efa else "interface", True)
    for slot in slots[1:]:
        assert (slot.device_index, slot.interface_type, slot.has_ip) == (1, "efa", True)
    assert all(slot.has_ip for slot in slots)


def test_p5_default_layout() -> None:
    slots = efa_interface_layout(get_instance_type("p5.48xlarge"))
    assert _as_tuples(slots) == [(0, 0, "interface"), (0, 1, "efa-only")] + [
        (card, 0, "efa-only") for card in range(1, 32)
    ]


def test_p6_b300_skips_ena_only_card_zero() -> None:
    spec = get_instance_type("p6-b300.48xlarge")
    assert _as_tuples(efa_interface_layout(spec)) == [(0, 0, "interface")] + [
        (card, 0, "efa-only") for card in range(1, 17)
    ]
    assert _as_tuples(efa_interface_layout(spec, EfaLayout.LEGACY)) == [(0, 0, "interface")] + [
        (card, 1, "efa") for card in range(1, 17)
    ]


def test_single_efa_type() -> None:
    spec = get_instance_type("g5.48xlarge")
    assert _as_tuples(efa_interface_layout(spec)) == [(0, 0, "interface"), (0, 1, "efa-only")]
    assert _as_tuples(efa_interface_layout(spec, EfaLayout.LEGACY)) == [(0, 0, "efa")]


def test_p4d_legacy_layout() -> None:
    slots = efa_interface_layout(get_instance_type("p4d.24xlarge"), EfaLayout.LEGACY)
    assert _as_tuples(slots) == [(0, 0, "efa"), (1, 1, "efa"), (2, 1, "efa"), (3, 1, "efa")]


def test_non_efa_type_is_rejected() -> None:
    with pytest.raises(FmValidationError, match="has no EFA"):
        efa_interface_layout(get_instance_type("g6.4xlarge"))
