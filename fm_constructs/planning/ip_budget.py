"""Private IPv4 budget of a node subnet: will N nodes (and their pods) fit?

Every interface that carries an IP (the primary ENA, and each ``efa`` interface in the legacy
layout) takes one address per node; on EKS with the VPC CNI in the node subnet, the ENIs the
CNI attaches for pods take more (:func:`node_addressing`). A p5.48xlarge with the legacy
all-``efa`` layout uses 32 addresses before a single pod starts, so 64 nodes do not fit a /21.
AWS reserves five addresses in every subnet. Floor 1: no aws_cdk import.

The VPC CNI's arithmetic (amazon-vpc-cni-k8s; the EKS AMI's eni-max-pods.txt formula):

* the CNI uses network card 0 only; an ``efa-only`` interface on card 0 takes one of that
  card's interface slots and carries no IP, so the CNI may attach
  ``card-0 maximum - efa-only interfaces on card 0`` ENIs (primary included);
* each ENI gives pods ``IPv4 addresses per interface - 1`` addresses (its first address is
  the ENI's own), or as many /28 prefixes (16 addresses each) with prefix delegation;
* kubelet's maxPods is ``card-0 maximum x (IPv4 per interface - 1) + 2`` (two host-network
  pods); it does not subtract the efa-only slot, so on p5.48xlarge with efa-only at card 0
  kubelet admits 100 pods while the CNI has addresses for 49;
* with the default ``WARM_ENI_TARGET=1`` the CNI keeps one spare ENI attached and fills every
  attached ENI with addresses, so a full node draws whole ENIs from the subnet.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fm_constructs.catalog import InstanceSpec
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.efa_layout import EfaLayout, efa_interface_layout

#: The code of an IP budget's problems (its meaning is registered with the construct codes,
#: :data:`fm_constructs.rules.constructs.IP_BUDGET`).
IP_BUDGET_CODE = "FM815"

#: Addresses AWS reserves in every subnet (network, router, DNS, future use, broadcast).
AWS_RESERVED_ADDRESSES_PER_SUBNET = 5
#: Smallest and largest IPv4 subnets a VPC accepts.
MIN_SUBNET_PREFIX = 16
MAX_SUBNET_PREFIX = 28
#: Pods on host networking that the eni-max-pods formula adds (aws-node, kube-proxy).
HOST_NETWORK_PODS = 2
#: The VPC CNI's default WARM_ENI_TARGET: one spare ENI attached and filled with addresses.
DEFAULT_WARM_ENI_TARGET = 1
#: How many pods a node is counted for when the caller gives no figure, in the words
#: ``fmc plan``'s IP budget line and its ``--pod-ips-per-node`` help both use.
DEFAULT_POD_COUNT = "as many pods as kubelet admits and the VPC CNI can address"
#: Addresses in one delegated prefix (a /28), with VPC CNI prefix delegation.
PREFIX_DELEGATION_ADDRESSES = 16
#: kubelet maxPods cap the EKS max-pods calculator applies with prefix delegation (30 vCPUs
#: or fewer: 110; more: 250).
PREFIX_DELEGATION_MAX_PODS = (110, 250)


@dataclass(frozen=True)
class NodeAddressing:
    """What one node takes from its subnet, with the VPC CNI arithmetic behind the figure.

    ``interface_ips``: addresses of the launch template's interfaces (the node IP, and every
    ``efa`` interface of the legacy layout). ``cni_enis``: ENIs the VPC CNI may attach on card
    0 (0 without the VPC CNI). ``pod_ip_capacity``: pods the CNI can give an address.
    ``kubelet_max_pods``: kubelet's limit (eni-max-pods formula). ``cni_addresses``: addresses
    the CNI draws beyond ``interface_ips`` when the node runs as many pods as it can.
    """

    instance_type: str
    interface_ips: int
    cni_enis: int
    pod_ip_capacity: int
    kubelet_max_pods: int
    cni_addresses: int

    @property
    def per_node(self) -> int:
        return self.interface_ips + self.cni_addresses

    @property
    def pods_without_address(self) -> int:
        """Pods kubelet admits for which the CNI has no address (they stay ContainerCreating:
        "failed to assign an IP address to container")."""
        if self.cni_enis == 0:
            return 0
        return max(0, self.kubelet_max_pods - HOST_NETWORK_PODS - self.pod_ip_capacity)


def _layout_slots(spec: InstanceSpec, layout: EfaLayout | None) -> tuple[tuple[int, bool], ...]:
    """(network card, has IP) of each interface; ``None``: the primary interface alone."""
    if layout is None:
        return ((0, True),)
    return tuple(
        (slot.network_card_index, slot.has_ip) for slot in efa_interface_layout(spec, layout)
    )


def node_addressing(
    spec: InstanceSpec,
    layout: EfaLayout | None,
    *,
    vpc_cni: bool,
    prefix_delegation: bool = False,
    warm_eni_target: int = DEFAULT_WARM_ENI_TARGET,
    pods_per_node: int | None = None,
) -> NodeAddressing:
    """Subnet addresses one node of ``spec`` takes under ``layout``.

    ``vpc_cni``: pods get VPC addresses from the node's subnet (EKS and HyperPod-EKS; False
    for Slurm). ``pods_per_node``: pods that need an address, when known (default: as many
    as kubelet admits and the CNI can address, the largest the node can get).
    """
    slots = _layout_slots(spec, layout)
    interface_ips = sum(1 for _, has_ip in slots if has_ip)
    if not vpc_cni:
        return NodeAddressing(spec.name, interface_ips, 0, 0, 0, 0)
    card0 = spec.network_card(0)
    # Interfaces on card 0 without an IP (efa-only) take ENI slots the CNI cannot use.
    cni_enis = card0.max_interfaces - sum(1 for card, ip in slots if card == 0 and not ip)
    per_eni = spec.ipv4_addresses_per_interface - 1
    addresses_per_slot = PREFIX_DELEGATION_ADDRESSES if prefix_delegation else 1
    capacity = cni_enis * per_eni * addresses_per_slot
    max_pods = card0.max_interfaces * per_eni * addresses_per_slot + HOST_NETWORK_PODS
    if prefix_delegation:
        max_pods = min(max_pods, PREFIX_DELEGATION_MAX_PODS[spec.vcpus > 30])
    wanted = max_pods - HOST_NETWORK_PODS if pods_per_node is None else pods_per_node
    pods = min(wanted, capacity)
    enis_for_pods = math.ceil(pods / (per_eni * addresses_per_slot)) if pods else 0
    attached = min(cni_enis, max(1, enis_for_pods + warm_eni_target))
    # Every attached ENI is filled (secondary IPs or prefixes); the extra ENIs also take a
    # primary address each (the primary ENI's own address is the node IP, counted above).
    cni_addresses = attached * per_eni * addresses_per_slot + (attached - 1)
    return NodeAddressing(spec.name, interface_ips, cni_enis, capacity, max_pods, cni_addresses)


def ip_addresses_per_node(
    spec: InstanceSpec, layout: EfaLayout | None, pod_ips_per_node: int = 0
) -> int:
    """Subnet addresses one node uses: interfaces with an IP plus ``pod_ips_per_node``.

    ``layout=None`` means no EFA (a single primary interface).
    """
    if pod_ips_per_node < 0:
        raise FmValidationError(
            [f"pod_ips_per_node: must be 0 or more, got {pod_ips_per_node}"], code=IP_BUDGET_CODE
        )
    if layout is None:
        interface_ips = 1
    else:
        interface_ips = sum(1 for slot in efa_interface_layout(spec, layout) if slot.has_ip)
    return interface_ips + pod_ips_per_node


class SubnetFit:
    """A subnet's usable addresses against what must go in it: the one fit answer of every
    subnet the library counts (the GPU zone's private subnet, a node subnet, the pod subnet,
    an :class:`IpBudget`, the row ``fmc plan`` prints). A kind gives ``usable`` and
    ``required`` (fields or properties); one whose answer needs more than room (the pod
    subnet: room for each node's ENIs too) extends :attr:`fits`."""

    if TYPE_CHECKING:  # each kind gives both, as fields or properties

        @property
        def usable(self) -> int:
            """Addresses of the subnet free to hold what must go in it."""

        @property
        def required(self) -> int:
            """Addresses what must go in the subnet takes."""

    @property
    def free(self) -> int:
        """Addresses left after the plan (negative when it does not fit)."""
        return self.usable - self.required

    @property
    def fits(self) -> bool:
        return self.free >= 0

    @property
    def utilization(self) -> float:
        """Share of the usable addresses the plan takes (1.0 = full)."""
        return self.required / self.usable if self.usable > 0 else float("inf")


@dataclass(frozen=True)
class IpBudget(SubnetFit):
    """The arithmetic of one subnet plan."""

    node_count: int
    addresses_per_node: int
    subnet_prefix: int
    subnet_addresses: int
    reserved: int
    other_addresses: int

    @property
    def required(self) -> int:
        return self.node_count * self.addresses_per_node

    @property
    def usable(self) -> int:
        return self.subnet_addresses - self.reserved - self.other_addresses


def smallest_prefix_for(addresses: int, reserved: int = AWS_RESERVED_ADDRESSES_PER_SUBNET) -> int:
    """The longest prefix (smallest subnet) holding ``addresses`` plus the reserved ones, or
    ``MIN_SUBNET_PREFIX - 1`` when even a /16 is too small."""
    for prefix in range(MAX_SUBNET_PREFIX, MIN_SUBNET_PREFIX - 1, -1):
        if 2 ** (32 - prefix) - reserved >= addresses:
            return prefix
    return MIN_SUBNET_PREFIX - 1


def ip_budget(
    *,
    node_count: int,
    spec: InstanceSpec,
    layout: EfaLayout | None,
    subnet_prefix: int,
    pod_ips_per_node: int = 0,
    other_addresses: int = 0,
    reserved: int = AWS_RESERVED_ADDRESSES_PER_SUBNET,
) -> IpBudget:
    """The arithmetic of ``node_count`` nodes of ``spec`` in one subnet of ``/subnet_prefix``;
    ``other_addresses`` are taken in the subnet already (endpoints, load balancers, file
    systems). Whether the arguments are sound and the plan fits, with the fixes, is the rule
    :func:`fm_constructs.rules.subnets.ip_budget`."""
    return IpBudget(
        node_count=node_count,
        addresses_per_node=ip_addresses_per_node(spec, layout, pod_ips_per_node),
        subnet_prefix=subnet_prefix,
        subnet_addresses=2 ** (32 - subnet_prefix),
        reserved=reserved,
        other_addresses=other_addresses,
    )
