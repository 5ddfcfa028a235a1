"""Private IPv4 budget of a node subnet: will N nodes (and their pods) fit?

Every interface that carries an IP (the primary ENA, and each ``efa`` interface in the legacy
layout) takes one address per node; on EKS with the VPC CNI in the node subnet, every pod IP
the node keeps warm takes one more. A p5.48xlarge with the legacy all-``efa`` layout uses 32
addresses before a single pod starts, so 64 nodes do not fit a /21. AWS reserves five
addresses in every subnet. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from fm_constructs.catalog import InstanceSpec
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning.efa_layout import EfaLayout, efa_interface_layout

#: Addresses AWS reserves in every subnet (network, router, DNS, future use, broadcast).
AWS_RESERVED_ADDRESSES_PER_SUBNET = 5
#: Smallest and largest IPv4 subnets a VPC accepts.
MIN_SUBNET_PREFIX = 16
MAX_SUBNET_PREFIX = 28


def ip_addresses_per_node(
    spec: InstanceSpec, layout: EfaLayout | None, pod_ips_per_node: int = 0
) -> int:
    """Subnet addresses one node uses: interfaces with an IP plus ``pod_ips_per_node``.

    ``layout=None`` means no EFA (a single primary interface).
    """
    if pod_ips_per_node < 0:
        raise FmValidationError([f"pod_ips_per_node: must be 0 or more, got {pod_ips_per_node}"])
    if layout is None:
        interface_ips = 1
    else:
        interface_ips = sum(1 for slot in efa_interface_layout(spec, layout) if slot.has_ip)
    return interface_ips + pod_ips_per_node


@dataclass(frozen=True)
class IpBudget:
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


def _subnet_prefix(subnet_cidr: str | int) -> int:
    if isinstance(subnet_cidr, int):
        prefix = subnet_cidr
    else:
        text = subnet_cidr.strip()
        try:
            prefix = (
                int(text.removeprefix("/"))
                if text.startswith("/")
                else ipaddress.ip_network(text, strict=False).prefixlen
            )
        except ValueError as error:
            raise FmValidationError(
                [
                    f"subnet_cidr: must be an IPv4 CIDR such as '10.0.0.0/20', a '/20' "
                    f"suffix or a prefix length, got {subnet_cidr!r} ({error})"
                ]
            ) from None
    if not MIN_SUBNET_PREFIX <= prefix <= MAX_SUBNET_PREFIX:
        raise FmValidationError(
            [
                f"subnet_cidr: VPC subnets are /{MIN_SUBNET_PREFIX} to /{MAX_SUBNET_PREFIX}, "
                f"got {subnet_cidr!r}"
            ]
        )
    return prefix


def smallest_prefix_for(addresses: int, reserved: int = AWS_RESERVED_ADDRESSES_PER_SUBNET) -> int:
    """The longest prefix (smallest subnet) holding ``addresses`` plus the reserved ones, or
    ``MIN_SUBNET_PREFIX - 1`` when even a /16 is too small."""
    for prefix in range(MAX_SUBNET_PREFIX, MIN_SUBNET_PREFIX - 1, -1):
        if 2 ** (32 - prefix) - reserved >= addresses:
            return prefix
    return MIN_SUBNET_PREFIX - 1


def check_ip_budget(
    *,
    node_count: int,
    spec: InstanceSpec,
    layout: EfaLayout | None,
    subnet_cidr: str | int,
    pod_ips_per_node: int = 0,
    other_addresses: int = 0,
    reserved: int = AWS_RESERVED_ADDRESSES_PER_SUBNET,
) -> IpBudget:
    """Check that ``node_count`` nodes of ``spec`` fit one subnet; return the arithmetic.

    ``subnet_cidr``: ``"10.0.0.0/20"``, ``"/20"`` or the prefix length ``20``.
    ``other_addresses``: addresses already taken in the subnet (endpoints, load balancers,
    file systems). Raises FmValidationError with the numbers and the fixes when it does not fit.
    """
    problems = Problems(context="IpBudget")
    if node_count < 0:
        problems.add("node_count", node_count, "must be 0 or more")
    if other_addresses < 0:
        problems.add("other_addresses", other_addresses, "must be 0 or more")
    problems.raise_if_any()
    prefix = _subnet_prefix(subnet_cidr)
    budget = IpBudget(
        node_count=node_count,
        addresses_per_node=ip_addresses_per_node(spec, layout, pod_ips_per_node),
        subnet_prefix=prefix,
        subnet_addresses=2 ** (32 - prefix),
        reserved=reserved,
        other_addresses=other_addresses,
    )
    if not budget.fits:
        raise FmValidationError([_shortfall_message(budget, spec, layout, pod_ips_per_node)])
    return budget


def _shortfall_message(
    budget: IpBudget, spec: InstanceSpec, layout: EfaLayout | None, pod_ips_per_node: int
) -> str:
    per_node = f"{budget.addresses_per_node} addresses per node"
    if pod_ips_per_node:
        per_node += f" (including {pod_ips_per_node} pod IPs)"
    lines = [
        f"subnet_cidr: {budget.node_count} x {spec.name} need {budget.required} addresses "
        f"({per_node}), but a /{budget.subnet_prefix} has only "
        f"{budget.subnet_addresses - budget.reserved} usable ({budget.subnet_addresses} - "
        f"{budget.reserved} reserved by AWS)"
        + (f", {budget.other_addresses} of them needed elsewhere" if budget.other_addresses else "")
        + f"; short by {-budget.free}. Fix:"
    ]
    needed_prefix = smallest_prefix_for(budget.required + budget.other_addresses, budget.reserved)
    if needed_prefix >= MIN_SUBNET_PREFIX:
        lines.append(f"use a /{needed_prefix} or larger subnet")
    if layout is EfaLayout.LEGACY and spec.efa_only_supported:
        efa_only = ip_addresses_per_node(spec, EfaLayout.EFA_ONLY, pod_ips_per_node)
        lines.append(
            f"use the efa-only layout (EfaLayout.EFA_ONLY: {efa_only} addresses per node "
            f"instead of {budget.addresses_per_node})"
        )
    if pod_ips_per_node:
        lines.append(
            "give pods their own addresses from a secondary VPC CIDR (VPC CNI custom "
            "networking, e.g. 100.64.0.0/16) so they do not draw on the node subnet"
        )
    lines.append("or split the nodes across more subnets")
    return lines[0] + " " + "; ".join(lines[1:])
