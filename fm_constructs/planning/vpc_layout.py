"""How a GPU VPC's CIDR is divided into subnets (shared by the VPC construct and the
profile's IP budget check, so both count the same addresses)."""

from __future__ import annotations

import ipaddress

#: The prefix lengths a GPU VPC's CIDR may have: a /16 is the largest block a VPC takes
#: (Amazon VPC User Guide, "VPC CIDR blocks"); below a /24 the private quarter-subnets (/26)
#: hold too few addresses for a GPU node group and its pods.
VPC_PREFIX_RANGE = (16, 24)
#: The most zones a GPU cluster VPC spans: each zone's private subnet takes a quarter of the
#: VPC, and the public subnets need the rest.
MAX_ZONES = 3


def subnet_prefixes(vpc_cidr: str) -> tuple[int, int]:
    """(private, public) subnet prefix lengths for a VPC CIDR.

    Private subnets take a quarter of the VPC each (a /16 gives /18: 16,379 usable addresses per
    zone, room for EFA nodes and EKS pod IPs); public subnets only hold NAT gateways and load
    balancers, so they are 1/256 of the VPC (at most /28).
    """
    prefix = ipaddress.IPv4Network(vpc_cidr).prefixlen
    return prefix + 2, min(prefix + 8, 28)


#: The interface endpoints the GPU VPC creates in every private subnet (one ENI, so one
#: address, each per subnet): the IP budget counts them, the VPC construct builds them.
PRIVATE_CLUSTER_ENDPOINT_NAMES: tuple[str, ...] = (
    "EcrApi",
    "EcrDocker",
    "Sts",
    "Eks",
    "EksAuth",
    "Ec2",
    "Logs",
    "PrometheusWorkspaces",
    "SageMakerApi",
    "Ssm",
    "SsmMessages",
    "Ec2Messages",
)


#: Node subnets beyond the GPU zone's private subnet each span one secondary VPC CIDR block of
#: this size: the largest block a VPC accepts and the largest subnet (Amazon VPC User Guide,
#: "VPC CIDR blocks": blocks and subnets are /16 to /28).
NODE_BLOCK_PREFIX = 16
#: The RFC 1918 ranges, and RFC 6598 shared address space (100.64.0.0/10). A secondary block
#: from the primary block's own RFC 1918 range, or from 100.64.0.0/10, is accepted whatever
#: the primary is (Amazon VPC User Guide, "IPv4 CIDR block association restrictions").
RFC1918_RANGES = (
    ipaddress.IPv4Network("10.0.0.0/8"),
    ipaddress.IPv4Network("172.16.0.0/12"),
    ipaddress.IPv4Network("192.168.0.0/16"),
)
SHARED_ADDRESS_SPACE = ipaddress.IPv4Network("100.64.0.0/10")
#: A VPC with a block in 10.0.0.0/15 cannot take a block from 10.0.0.0/16 (same restrictions).
_RESTRICTED_WITH_10_0_15 = ipaddress.IPv4Network("10.0.0.0/16")
_TEN_0_15 = ipaddress.IPv4Network("10.0.0.0/15")
#: Refused as a secondary block whatever the primary is (same table).
_RESTRICTED_ALWAYS = ipaddress.IPv4Network("198.19.0.0/16")


def _rfc1918_range(network: ipaddress.IPv4Network) -> ipaddress.IPv4Network | None:
    return next((r for r in RFC1918_RANGES if network.subnet_of(r)), None)


def secondary_block_problems(block: str, vpc_cidr: str) -> list[str]:
    """What is wrong with ``block`` as a secondary IPv4 CIDR block (pod CIDR or node block) of
    a VPC whose primary block is ``vpc_cidr``; empty when AWS accepts it and the library can
    use it. One rule for every secondary block the library adds.

    From the Amazon VPC User Guide table "IPv4 CIDR block association restrictions": a VPC
    whose primary block is in one RFC 1918 range refuses blocks from the other RFC 1918
    ranges (a 10/8 primary takes no 172.16.0.0/12 or 192.168.0.0/16 block); a primary in
    10.0.0.0/15 refuses 10.0.0.0/16; a primary outside RFC 1918 (100.64.0.0/10 or publicly
    routable) refuses every RFC 1918 block; 198.19.0.0/16 is refused. Blocks are /16 to /28
    ("VPC CIDR blocks"). The library takes blocks from the primary's own RFC 1918 range or
    from 100.64.0.0/10 only (publicly routable blocks are not private addresses)."""
    try:
        network = ipaddress.IPv4Network(block, strict=True)
    except ValueError:
        return ["must be an IPv4 network such as '100.64.0.0/16' (host bits zero)"]
    out = []
    if not NODE_BLOCK_PREFIX <= network.prefixlen <= 28:
        out.append("must have a prefix between /16 and /28 (a VPC CIDR block)")
    try:
        primary: ipaddress.IPv4Network | None = ipaddress.IPv4Network(vpc_cidr, strict=False)
    except ValueError:
        primary = None
    own = _rfc1918_range(primary) if primary is not None else None
    allowed = [r for r in (own, SHARED_ADDRESS_SPACE) if r is not None]
    names = " or ".join(str(r) for r in allowed)
    theirs = _rfc1918_range(network)
    if network.overlaps(_RESTRICTED_ALWAYS):
        out.append(
            f"must not be in {_RESTRICTED_ALWAYS} (AWS refuses it as a secondary block); use "
            f"a block in {names}"
        )
    elif theirs is not None and primary is not None and theirs != own:
        primary_range = f"the RFC 1918 range {own}" if own else "no RFC 1918 range"
        out.append(
            f"must lie in {names}: platform.vpc_cidr {vpc_cidr!r} is in {primary_range}, and "
            f"AWS refuses a secondary block from another RFC 1918 range ({theirs}) for it "
            "(Amazon VPC User Guide, IPv4 CIDR block association restrictions)"
        )
    elif not any(network.subnet_of(r) for r in allowed):
        out.append(
            f"must lie in {names} (the secondary ranges AWS accepts and the library uses "
            "beside this primary)"
        )
    elif (
        primary is not None
        and primary.subnet_of(_TEN_0_15)
        and network.overlaps(_RESTRICTED_WITH_10_0_15)
    ):
        out.append(
            f"must not be in {_RESTRICTED_WITH_10_0_15}: AWS refuses it for a VPC whose "
            f"primary block is in {_TEN_0_15} ({vpc_cidr!r})"
        )
    if primary is not None and network.overlaps(primary):
        out.append(f"must not overlap platform.vpc_cidr {vpc_cidr!r}")
    return out


def node_cidr_blocks(vpc_cidr: str, count: int, avoid: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The first ``count`` /16 secondary blocks for node subnets of a VPC whose primary block
    is ``vpc_cidr``: the /16s of the primary's own RFC 1918 range after the primary, then those
    of 100.64.0.0/10, skipping any that overlap the primary or a block in ``avoid`` (the pod
    CIDR). Deterministic, so the IP budget and the VPC construct carve the same blocks."""
    primary = ipaddress.IPv4Network(vpc_cidr, strict=False)
    taken = [primary, *(ipaddress.IPv4Network(c, strict=False) for c in avoid)]
    ranges = [r for r in RFC1918_RANGES if primary.subnet_of(r)] + [SHARED_ADDRESS_SPACE]
    out: list[str] = []
    for space in ranges:
        candidates = list(space.subnets(new_prefix=NODE_BLOCK_PREFIX))
        if space.overlaps(primary):
            # Start after the primary, then wrap around to the blocks before it.
            after = [c for c in candidates if c.network_address > primary.network_address]
            candidates = after + [c for c in candidates if c not in after]
        for block in candidates:
            if len(out) == count:
                return tuple(out)
            if any(block.overlaps(t) for t in taken):
                continue
            if secondary_block_problems(str(block), vpc_cidr):
                continue
            out.append(str(block))
    return tuple(out)
