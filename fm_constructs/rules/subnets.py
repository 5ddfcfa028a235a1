"""The subnet rules: why the largest deployment of a profile does not fit the GPU zone's
subnets, as findings under profile keys with the numbers and the fixes.

:mod:`fm_constructs.config.subnet_demand` maps the profile to its planning input and lets
:func:`~fm_constructs.planning.subnet_demand.plan_subnets` do the arithmetic; the functions
here read the result (custom networking that cannot work, an EFA pool too large for one node
subnet, a node or pod subnet too small). The profile loader and ``fmc plan`` both report
:func:`demand_problems`. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from dataclasses import dataclass

from fm_constructs.catalog import InstanceSpec
from fm_constructs.planning import ip_budget as budgets
from fm_constructs.planning import subnet_demand as planning
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.ip_budget import AWS_RESERVED_ADDRESSES_PER_SUBNET
from fm_constructs.planning.pod_networking import PREFIX_ADDRESSES, PodNetworking
from fm_constructs.planning.subnet_demand import OversizedPool
from fm_constructs.planning.vpc_layout import NODE_BLOCK_PREFIX
from fm_constructs.profile.model import Profile
from fm_constructs.rules import scale as scale_rules
from fm_constructs.rules.constructs import IP_BUDGET
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.scale import NODE_SUBNET_SHORT


@dataclass(frozen=True, kw_only=True)
class SubnetDemand(planning.SubnetDemand):
    """The planning result of a profile, with the findings of its pod networking under
    profile keys: ``networking_problems`` (the pod CIDR, combinations custom networking cannot
    carry) and ``pool_problems`` (EFA pools that cannot have one node subnet of their own)."""

    networking_problems: tuple[Finding, ...] = ()
    pool_problems: tuple[Finding, ...] = ()


def planned_demand(profile: Profile, plan: planning.SubnetDemand) -> SubnetDemand:
    """``plan`` (the planning result of ``profile``) with the findings of its pod networking:
    what custom networking cannot carry when the plan chose it, and every EFA pool too large
    for a node subnet of its own."""
    fields = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    pools = tuple(pool_too_large(p, plan.networking) for p in plan.oversized_pools)
    networking = (
        custom_networking_problems(profile, plan)
        if plan.networking is PodNetworking.CUSTOM_NETWORKING
        else []
    )
    return SubnetDemand(**fields, networking_problems=tuple(networking), pool_problems=pools)


def custom_networking_problems(profile: Profile, demand: planning.SubnetDemand) -> list[Finding]:
    """Why custom networking cannot work for ``profile`` (empty when it can): what the plan
    found wrong with the pod CIDR (its
    :attr:`~fm_constructs.planning.subnet_demand.SubnetDemand.pod_cidr_problems`, reported as
    :func:`fm_constructs.rules.scale.pod_cidr` reports them), then what else
    :attr:`~fm_constructs.planning.subnet_demand.SubnetDemand.networking_blocked` found."""
    out: list[Finding] = []
    unsupported = set(demand.unsupported_workloads)
    for w in profile.enabled_workloads:
        if w.name in unsupported:
            out.append(
                Finding(
                    scale_rules.CUSTOM_NETWORKING_HYPERPOD,
                    Severity.ERROR,
                    f"{w.name}.orchestrator",
                    w.orchestrator.value,
                    "custom networking is set up for EKS managed node groups only (SageMaker "
                    "HyperPod does not document ENIConfig support)",
                    f"run {w.name} on 'eks', or keep pods in the node subnet "
                    "(platform.pod_networking = 'node-subnet') with a larger vpc_cidr",
                )
            )
    for g in demand.node_groups:
        if g.pod_addressing is not None and g.pod_addressing.pod_enis == 0:
            out.append(
                Finding(
                    scale_rules.CUSTOM_NETWORKING_CARD_FULL,
                    Severity.ERROR,
                    "platform.pod_networking",
                    PodNetworking.CUSTOM_NETWORKING.value,
                    "custom networking puts pods on ENIs of network card 0 beside the primary "
                    f"interface, but {g.pod_addressing.instance_type} ({g.name}) has no free "
                    "interface slot there (the primary ENA and the efa-only interface fill "
                    "it), so its nodes would never become ready",
                    "use an instance type with room on card 0 (p5en.48xlarge, "
                    "p6-b200.48xlarge, p4d.24xlarge), or keep pods in the node subnet and "
                    "split the nodes across fewer addresses (lower instance_count or "
                    "max_pods_per_node)",
                )
            )
        elif g.pod_addressing is not None and not g.pod_addressing.fits_node:
            out.append(
                Finding(
                    scale_rules.POD_SUBNET_SHORT,
                    Severity.ERROR,
                    f"{g.name}.max_pods_per_node",
                    g.pod_addressing.max_pods,
                    f"{g.pod_addressing.max_pods} pods need {g.pod_addressing.attached_enis} "
                    f"pod ENIs on {g.pod_addressing.instance_type}, which has room for "
                    f"{g.pod_addressing.pod_enis}",
                    "lower max_pods_per_node",
                )
            )
    platform = profile.platform
    pod_cidr = [
        Finding(
            scale_rules.SECONDARY_BLOCK_REFUSED,
            Severity.ERROR,
            "platform.pod_cidr",
            platform.pod_cidr,
            problem,
        )
        for problem in demand.pod_cidr_problems
    ]
    return pod_cidr + out


def pool_too_large(pool: OversizedPool, networking: PodNetworking) -> Finding:
    """Why ``pool`` cannot have a node subnet of its own, with the max pods and the node
    count that would fit one."""
    group, capacity = pool.group, pool.capacity
    workload = group.workload
    instance_type = group.addressing.instance_type
    delegation = bool(group.prefixes)
    unit = PREFIX_ADDRESSES if delegation else 1
    room = capacity // unit
    per_node = group.node_subnet_blocks if delegation else group.addressing.per_node
    what = "whole /28s for prefixes" if delegation else "usable addresses"
    fixes = []
    smaller = pool.fitting
    if smaller is not None:
        pods = smaller.addressing.kubelet_max_pods
        fixes.append(
            f"set {workload}.max_pods_per_node = {pods} ("
            f"{smaller.prefixes} prefixes and {smaller.node_subnet_blocks} /28s per node"
            f": {smaller.worst_case_addresses(smaller.nodes) // unit:,} of {room:,})"
        )
    if not delegation:
        fixes.append(
            "give pods /28 prefixes: platform.pod_networking = 'auto' or 'prefix-delegation'"
        )
    fixes.append(
        f"or lower the pool to {room // max(per_node, 1):,} nodes, or split it over two workloads"
    )
    return Finding(
        NODE_SUBNET_SHORT,
        Severity.ERROR,
        f"{workload}.max_pods_per_node" if delegation else "platform.pod_networking",
        group.addressing.kubelet_max_pods if delegation else networking.value,
        f"the {group.nodes:,} {instance_type} nodes of {group.name} are one EFA pool and stay "
        f"in one node subnet (no AWS page documents EFA traffic across subnets); a "
        f"/{NODE_BLOCK_PREFIX} node subnet holds {room:,} {what}, and each node takes up to "
        + (
            f"{per_node} ({group.prefixes} prefixes and its single addresses, prefix delegation)"
            if delegation
            else f"{per_node}"
        )
        + f": {group.nodes * per_node:,} needed",
        "; ".join(fixes),
    )


def shortfall_finding(demand: SubnetDemand, vpc_cidr: str) -> Finding:
    """The numbers and the fixes when the node subnet of ``demand`` (a quarter of
    ``vpc_cidr``) does not fit, under ``platform.vpc_cidr``."""
    groups = ", ".join(
        f"{g.name} {g.nodes} x {g.addressing.per_node} = {g.addresses:,}"
        for g in demand.node_groups
    )
    fixed = ", ".join(f"{what} {n}" for what, n in demand.fixed)
    fixes = []
    needed = demand.smallest_prefix
    vpc_prefix = needed - 2
    if vpc_prefix >= 16:
        fixes.append(
            f"give platform.vpc_cidr a /{vpc_prefix} or larger (private subnets are a quarter "
            f"of the VPC: a /{needed} holds {2 ** (32 - needed) - 5:,})"
        )
    elif demand.prefix > 18:
        fixes.append(
            "give platform.vpc_cidr a /16: node groups that still do not fit its private "
            "subnet then get node subnets of their own in secondary /16 blocks"
        )
    if any(g.layout is EfaLayout.LEGACY and g.managed for g in demand.node_groups):
        fixes.append("use efa_layout = 'efa-only' (one address per node for the interfaces)")
    custom_possible = all(
        g.custom_networking_pod_enis for g in demand.node_groups if g.addressing.cni_enis
    )
    if any(g.addressing.cni_enis for g in demand.node_groups) and custom_possible:
        fixes.append(
            "give pods their own addresses from a secondary VPC CIDR: platform.pod_networking "
            "= 'custom-networking' (or 'auto', which switches it on when the node subnet is "
            "too small)"
        )
    elif any(g.addressing.cni_enis for g in demand.node_groups):
        full = sorted(
            {
                g.addressing.instance_type
                for g in demand.node_groups
                if g.addressing.cni_enis and not g.custom_networking_pod_enis
            }
        )
        fixes.append(
            f"VPC CNI custom networking cannot help {', '.join(full)}: network card 0 holds only "
            "the primary ENA and the efa-only interface, leaving no ENI for pods; at this size "
            "use a type with room on card 0 (p5en.48xlarge, p6-b200.48xlarge) or split the "
            "nodes over several deployments"
        )
    fixes.append("or lower instance_count / max_instance_count")
    return Finding(
        NODE_SUBNET_SHORT,
        Severity.ERROR,
        "platform.vpc_cidr",
        vpc_cidr,
        f"the private subnet /{demand.prefix} in {demand.availability_zone} must hold "
        f"{demand.required:,} addresses at the largest size of every node group, but has "
        f"{demand.usable:,} usable ("
        + (
            f"{demand.usable // PREFIX_ADDRESSES:,} whole /28s free for prefixes, counted in "
            "/28s with prefix delegation"
            if demand.prefix_delegation
            else f"{demand.addresses:,} - {AWS_RESERVED_ADDRESSES_PER_SUBNET} reserved by AWS"
        )
        + f"); short by {-demand.free:,}. Node groups (nodes x addresses per "
        f"node, VPC CNI arithmetic): {groups}. Other: {fixed or 'none'}",
        "; ".join(fixes),
    )


def pod_subnet_shortfall_finding(demand: SubnetDemand) -> Finding:
    """The numbers and the fixes when the pod subnet of ``demand`` is too small, counted in
    whole /28s (:class:`PodSubnetDemand`)."""
    pods = demand.pod_subnet
    assert pods is not None
    members = [g for g in pods.node_groups if g.pod_addressing is not None]
    groups = ", ".join(
        f"{g.name} {g.nodes:,} x {g.pod_addressing.blocks} /28s "
        f"({g.pod_addressing.max_pods} pods: {g.pod_addressing.prefixes} prefixes and "
        f"{g.pod_addressing.attached_enis} pod ENI address(es)) = "
        f"{g.pod_subnet_addresses // PREFIX_ADDRESSES:,}"
        for g in members
        if g.pod_addressing is not None
    )
    fixes = ["give platform.pod_cidr a larger block (a VPC CIDR block is at most a /16)"]
    if pods.fitting_max_pods is not None:
        fixes.append(
            f"set max_pods_per_node = {pods.fitting_max_pods} ({pods.fitting_blocks:,} "
            f"/28s of {pods.blocks:,})"
        )
    if len(members) == 1 and members[0].pod_addressing is not None:
        fixes.append(
            f"or lower {members[0].name} to "
            f"{pods.blocks // members[0].pod_addressing.blocks:,} nodes"
        )
    else:
        fixes.append("or lower instance_count / max_instance_count")
    return Finding(
        scale_rules.POD_SUBNET_SHORT,
        Severity.ERROR,
        "platform.pod_cidr",
        pods.cidr,
        f"the pod subnet {pods.cidr} in {demand.availability_zone} holds {pods.blocks:,} "
        f"whole /28s for prefixes (the first and last hold addresses AWS reserves), and the "
        f"node groups at their largest may take {pods.required // PREFIX_ADDRESSES:,}: each "
        f"prefix needs a free aligned /28 and each pod ENI's own address may spoil one "
        f"(prefix delegation, WARM_PREFIX_TARGET=1); short by "
        f"{-pods.free // PREFIX_ADDRESSES:,} /28s. Node groups: {groups}",
        ", ".join(fixes[:-1]) + ", " + fixes[-1],
    )


def demand_problems(demand: SubnetDemand, vpc_cidr: str) -> list[Finding]:
    """Every reason ``demand`` cannot be built (empty when it fits): the pod networking's own
    problems, the node subnet's shortfall (a quarter of ``vpc_cidr``) and the pod subnet's."""
    out = list(demand.networking_problems) + list(demand.pool_problems)
    if not demand.node_subnet_fits and not demand.pool_problems:
        out.append(shortfall_finding(demand, vpc_cidr))
    pods = demand.pod_subnet
    if pods is not None and not demand.networking_problems and pods.free < 0:
        out.append(pod_subnet_shortfall_finding(demand))
    for subnet in demand.node_subnets:
        if not subnet.fits:
            groups = ", ".join(
                f"{p.group} group {p.index + 1}: {p.nodes} nodes" for p in subnet.parts
            )
            out.append(
                Finding(
                    NODE_SUBNET_SHORT,
                    Severity.ERROR,
                    "platform.vpc_cidr",
                    vpc_cidr,
                    f"the node subnet {subnet.cidr} in {demand.availability_zone} must hold "
                    f"{subnet.required:,} addresses ({groups}) but has {subnet.usable:,} usable",
                    "lower max_pods_per_node or instance_count / max_instance_count",
                )
            )
    return out


def ip_budget(
    *,
    node_count: int,
    spec: InstanceSpec,
    layout: EfaLayout | None,
    subnet_cidr: str | int,
    pod_ips_per_node: int = 0,
    other_addresses: int = 0,
) -> list[Finding]:
    """Why ``node_count`` nodes of ``spec`` (EFA ``layout``, None for none) do not fit one
    subnet, with the numbers and the fixes (empty when they do): a subnet of another size,
    the efa-only layout, pods on a secondary block, more subnets. ``subnet_cidr``:
    ``"10.0.0.0/20"``, ``"/20"`` or the prefix length ``20``; ``other_addresses``: taken in
    the subnet already. The arithmetic is :func:`fm_constructs.planning.ip_budget.ip_budget`."""
    out = [
        Finding(IP_BUDGET, Severity.ERROR, key, value, "must be 0 or more")
        for key, value in (
            ("node_count", node_count),
            ("pod_ips_per_node", pod_ips_per_node),
            ("other_addresses", other_addresses),
        )
        if value < 0
    ]
    prefix = _prefix_length(subnet_cidr)
    if prefix is None:
        out.append(
            Finding(
                IP_BUDGET,
                Severity.ERROR,
                "subnet_cidr",
                subnet_cidr,
                f"must be an IPv4 CIDR such as '10.0.0.0/20', a '/20' suffix or a prefix length "
                f"from {budgets.MIN_SUBNET_PREFIX} to {budgets.MAX_SUBNET_PREFIX} (VPC subnets "
                f"are /{budgets.MIN_SUBNET_PREFIX} to /{budgets.MAX_SUBNET_PREFIX})",
            )
        )
    if out or prefix is None:
        return out
    budget = budgets.ip_budget(
        node_count=node_count,
        spec=spec,
        layout=layout,
        subnet_prefix=prefix,
        pod_ips_per_node=pod_ips_per_node,
        other_addresses=other_addresses,
    )
    if budget.fits:
        return []
    return [_shortfall(budget, spec, layout, pod_ips_per_node, subnet_cidr)]


def _prefix_length(subnet_cidr: str | int) -> int | None:
    """The prefix length of ``subnet_cidr`` when it spells a VPC subnet's size, else None."""
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
        except ValueError:
            return None
    return prefix if budgets.MIN_SUBNET_PREFIX <= prefix <= budgets.MAX_SUBNET_PREFIX else None


def _shortfall(
    budget: budgets.IpBudget,
    spec: InstanceSpec,
    layout: EfaLayout | None,
    pod_ips_per_node: int,
    subnet_cidr: str | int,
) -> Finding:
    per_node = f"{budget.addresses_per_node} addresses per node"
    if pod_ips_per_node:
        per_node += f" (including {pod_ips_per_node} pod IPs)"
    elsewhere = (
        f", {budget.other_addresses} of them needed elsewhere" if budget.other_addresses else ""
    )
    allowed = (
        f"{budget.node_count} x {spec.name} need {budget.required} addresses ({per_node}), "
        f"but a /{budget.subnet_prefix} has only {budget.subnet_addresses - budget.reserved} "
        f"usable ({budget.subnet_addresses} - {budget.reserved} reserved by AWS){elsewhere}; "
        f"short by {-budget.free}"
    )
    fixes = []
    needed = budgets.smallest_prefix_for(budget.required + budget.other_addresses, budget.reserved)
    if needed >= budgets.MIN_SUBNET_PREFIX:
        fixes.append(f"use a /{needed} or larger subnet")
    if layout is EfaLayout.LEGACY and spec.efa_only_supported:
        efa_only = budgets.ip_addresses_per_node(spec, EfaLayout.EFA_ONLY, pod_ips_per_node)
        fixes.append(
            f"use the efa-only layout (EfaLayout.EFA_ONLY: {efa_only} addresses per node "
            f"instead of {budget.addresses_per_node})"
        )
    if pod_ips_per_node:
        fixes.append(
            "give pods their own addresses from a secondary VPC CIDR (VPC CNI custom "
            "networking, e.g. 100.64.0.0/16) so they do not draw on the node subnet"
        )
    fixes.append("or split the nodes across more subnets")
    return Finding(IP_BUDGET, Severity.ERROR, "subnet_cidr", subnet_cidr, allowed, "; ".join(fixes))
