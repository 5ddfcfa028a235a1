"""Value types describing an accelerated EC2 instance type.

Plain frozen dataclasses: every other floor (planning math, constructs, the CLI) reads the same
facts from here instead of re-deriving them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

AcceleratorKind = Literal["gpu", "trainium"]
Architecture = Literal["x86_64", "arm64"]
EksAmiFamily = Literal["NVIDIA", "NEURON"]


@dataclass(frozen=True)
class NetworkCard:
    """One physical network card of an instance, as EC2 DescribeInstanceTypes reports it.

    ``efa_supported``: the card accepts an ``efa`` interface (EFA with ENA).
    ``efa_only_supported``: the card accepts an ``efa-only`` interface (EFA without an IP).
    """

    index: int
    bandwidth_gbps: float
    efa_supported: bool
    efa_only_supported: bool
    max_interfaces: int = 1


@dataclass(frozen=True)
class NvmeStorage:
    """NVMe instance store: ``count`` disks of ``size_gb`` GB (decimal, as EC2 reports it)."""

    count: int
    size_gb: int

    @property
    def total_gb(self) -> int:
        return self.count * self.size_gb


#: Instance families FSx for Lustre does not take as EFA clients ("EFA is supported on Nitro v4
#: (or higher) EC2 instances that support EFA, excluding the trn2 instance family": FSx for
#: Lustre guide, "Configuring EFA clients"): their nodes mount an EFA-enabled file system over
#: TCP and take none of its EFA connections.
NOT_LUSTRE_EFA_CLIENT_FAMILIES = frozenset({"trn2"})


def lustre_efa_client_family(instance_type: str) -> bool:
    """FSx takes the family of ``instance_type`` (``p5`` of ``p5.48xlarge``) as an EFA client:
    whether its nodes with EFA may mount an EFA-enabled file system over EFA."""
    return instance_type.split(".", 1)[0] not in NOT_LUSTRE_EFA_CLIENT_FAMILIES


@dataclass(frozen=True)
class InstanceSpec:
    """Everything the library needs to know about one accelerated instance type.

    Memory figures are GiB; ``accelerator_memory_gib`` is per device (GPU or Trainium chip).
    ``network_performance`` is EC2's instance-level text (``"8x 100 Gigabit"``) and
    ``network_performance_gbps`` its figure (800). ``max_efa_interfaces`` is 0 for types
    without EFA. ``hyperpod_name`` is the SageMaker
    HyperPod name (``ml.p5.48xlarge``) when HyperPod offers the type, else None.
    """

    name: str
    accelerator_kind: AcceleratorKind
    accelerator_manufacturer: str
    accelerator_name: str
    accelerator_count: int
    accelerator_memory_gib: float
    vcpus: int
    memory_gib: int
    architecture: Architecture
    network_performance: str
    network_performance_gbps: float
    network_cards: tuple[NetworkCard, ...]
    max_efa_interfaces: int
    ipv4_addresses_per_interface: int
    nvme: NvmeStorage | None
    eks_ami_family: EksAmiFamily
    hyperpod_name: str | None

    @property
    def family(self) -> str:
        """The part before the dot: ``p5en`` for ``p5en.48xlarge``."""
        return self.name.split(".", 1)[0]

    @property
    def efa_supported(self) -> bool:
        return self.max_efa_interfaces > 0

    @property
    def lustre_efa_client(self) -> bool:
        """A node of this type can mount an EFA-enabled FSx for Lustre file system over EFA
        (LNet over its EFA interfaces): it has EFA and FSx takes its family as an EFA client."""
        return self.efa_supported and lustre_efa_client_family(self.name)

    @property
    def efa_only_supported(self) -> bool:
        """Every EFA-capable card accepts ``efa-only`` interfaces (needed by the default
        layout, which gives secondary EFA interfaces no IP address)."""
        efa_cards = [card for card in self.network_cards if card.efa_supported]
        return bool(efa_cards) and all(card.efa_only_supported for card in efa_cards)

    @property
    def efa_card_indexes(self) -> tuple[int, ...]:
        """Indexes of the network cards that accept an EFA interface, ascending."""
        return tuple(card.index for card in self.network_cards if card.efa_supported)

    @property
    def total_efa_bandwidth_gbps(self) -> float:
        """Per-node bandwidth collectives can use when every EFA-capable card carries an EFA
        interface: the instance's documented network performance (0 without EFA).

        Not the sum of the cards' ``bandwidth_gbps``: EC2 repeats the instance total on each
        card of some types (g6e.48xlarge: four cards of "400 Gigabit", 400 Gbps in all) and
        lists less than the total on others (p6-b200.48xlarge: 8 x 200 for 3,200 Gbps).
        p6-b300's ENA-only card 0 is not part of its 6,400 Gbps.
        """
        return self.network_performance_gbps if self.efa_supported else 0.0

    @property
    def total_accelerator_memory_gib(self) -> float:
        return self.accelerator_count * self.accelerator_memory_gib

    @property
    def nvme_total_gb(self) -> int:
        return self.nvme.total_gb if self.nvme else 0

    @property
    def is_accelerated(self) -> bool:
        return self.accelerator_count > 0

    def network_card(self, index: int) -> NetworkCard:
        """The card with ``index`` (KeyError when the type has no such card)."""
        for card in self.network_cards:
            if card.index == index:
                return card
        raise KeyError(f"{self.name} has no network card {index}")
