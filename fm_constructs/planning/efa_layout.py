"""Launch-template network interfaces that give an instance its full EFA bandwidth.

A node that silently runs on half of its EFA cards trains at half speed, and a wrong layout
fails at launch. This module turns the catalog's network-card facts into the exact list of
interfaces (network card index, device index, interface type) following the EC2 user guide,
"Maximize network bandwidth on Amazon EC2 instances with multiple network cards":

``EfaLayout.EFA_ONLY`` (default, current AWS guidance; one IP address per node):
  * primary ENA ``interface`` at card 0 / device 0 (an ``efa-only`` interface cannot be
    primary);
  * ``efa-only`` at card 0 / device 1 when card 0 supports EFA;
  * ``efa-only`` at device 0 on every other EFA-capable card.

``EfaLayout.LEGACY`` (older guidance; one IP address per interface):
  * ``efa`` at card 0 / device 0 when card 0 supports EFA, else an ENA ``interface``;
  * ``efa`` at device 1 on every other EFA-capable card.

Either way the number of EFA interfaces equals the type's maximum, one per EFA-capable card,
so p6-b300 (card 0 ENA-only) gets its 16 EFAs on cards 1-16. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from fm_constructs.catalog import InstanceSpec, require_efa
from fm_constructs.errors import FmValidationError

#: The code of a layout that does not fit the type's network cards (its meaning is registered
#: with the construct codes, :data:`fm_constructs.rules.constructs.EFA_LAYOUT`).
EFA_LAYOUT_CODE = "FM814"

InterfaceType = Literal["interface", "efa", "efa-only"]


class EfaLayout(StrEnum):
    """How EFA interfaces are declared in the launch template."""

    #: Primary ENA interface plus ``efa-only`` interfaces: one IP per node (default).
    EFA_ONLY = "efa-only"
    #: Every EFA interface of type ``efa`` (EFA with ENA): one IP per interface.
    LEGACY = "legacy"


@dataclass(frozen=True)
class NetworkInterfaceSlot:
    """One network interface of the launch template."""

    network_card_index: int
    device_index: int
    interface_type: InterfaceType
    #: Whether the interface takes a private IPv4 address from the subnet.
    has_ip: bool

    @property
    def is_primary(self) -> bool:
        return self.network_card_index == 0 and self.device_index == 0

    @property
    def is_efa(self) -> bool:
        return self.interface_type in ("efa", "efa-only")


PRIMARY_ENA = NetworkInterfaceSlot(
    network_card_index=0, device_index=0, interface_type="interface", has_ip=True
)


def efa_interface_layout(
    spec: InstanceSpec, layout: EfaLayout = EfaLayout.EFA_ONLY
) -> tuple[NetworkInterfaceSlot, ...]:
    """The interfaces for ``spec`` under ``layout``, primary first, then by card index.

    Raises FmValidationError when the type has no EFA, or when ``EFA_ONLY`` is asked of a type
    whose EFA cards do not accept ``efa-only`` interfaces.
    """
    require_efa(spec.name)
    if layout is EfaLayout.EFA_ONLY and not spec.efa_only_supported:
        raise FmValidationError(
            [
                f"efa_layout: {spec.name} does not accept efa-only interfaces on every EFA "
                f"card, got {layout.value!r}; use EfaLayout.LEGACY (type efa everywhere)"
            ],
            code=EFA_LAYOUT_CODE,
        )
    efa_cards = spec.efa_card_indexes[: spec.max_efa_interfaces]
    card0_efa = 0 in efa_cards
    slots: list[NetworkInterfaceSlot] = []
    if layout is EfaLayout.EFA_ONLY:
        slots.append(PRIMARY_ENA)
        if card0_efa:
            slots.append(NetworkInterfaceSlot(0, 1, "efa-only", has_ip=False))
        slots.extend(
            NetworkInterfaceSlot(card, 0, "efa-only", has_ip=False)
            for card in efa_cards
            if card != 0
        )
    else:
        slots.append(NetworkInterfaceSlot(0, 0, "efa", has_ip=True) if card0_efa else PRIMARY_ENA)
        slots.extend(
            NetworkInterfaceSlot(card, 1, "efa", has_ip=True) for card in efa_cards if card != 0
        )
    _check_card_limits(spec, slots)
    return tuple(slots)


def _check_card_limits(spec: InstanceSpec, slots: list[NetworkInterfaceSlot]) -> None:
    """Guard against a catalog entry whose cards cannot hold the layout (never for the
    catalogued types; a clear error beats a launch failure if data changes)."""
    for card in spec.network_cards:
        used = sum(1 for slot in slots if slot.network_card_index == card.index)
        if used > card.max_interfaces:
            raise FmValidationError(
                [
                    f"efa_layout: {spec.name} card {card.index} holds at most "
                    f"{card.max_interfaces} interfaces, the layout needs {used}"
                ],
                code=EFA_LAYOUT_CODE,
            )


def efa_interface_count(slots: tuple[NetworkInterfaceSlot, ...]) -> int:
    """How many of ``slots`` are EFA devices (``efa`` or ``efa-only``)."""
    return sum(1 for slot in slots if slot.is_efa)
