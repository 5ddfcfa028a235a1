"""The argument rules of :class:`~fm_constructs.network.gpu_vpc.GpuClusterVpc`: its zones, its
CIDR block, the pod CIDR and the node blocks of its secondary subnets.

One pure function over the construct's plain arguments, returning findings under the argument
names (``cidr``, ``node_subnet_cidrs[0]``): the rules the profile loader runs on
``platform.vpc_cidr``, the zones and the pod CIDR, then the construct's own (code FM801). The
construct reports them under its class and path before it builds anything.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Sequence

from fm_constructs.catalog.regions import ZONE_NAME_PATTERN
from fm_constructs.planning.vpc_layout import MAX_ZONES
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import platform as platform_rules
from fm_constructs.rules import scale as scale_rules
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.tokens import is_unresolved


def _overlaps(a: str, b: str) -> bool:
    try:
        return ipaddress.IPv4Network(a, strict=False).overlaps(
            ipaddress.IPv4Network(b, strict=False)
        )
    except ValueError:
        return False  # an invalid block has its own problem


def _argument(field: str, value: object, requirement: str) -> Finding:
    return Finding(codes.VPC, Severity.ERROR, field, value, requirement)


def _zone_regions(zones: Sequence[str]) -> list[Finding]:
    """Zones of a stack whose region is unresolved: each a zone name, all of one region
    (tokens, known only at deploy time, are skipped)."""
    out: list[Finding] = []
    found: dict[str, str] = {}
    if is_unresolved(list(zones)):
        return out
    for index, zone in enumerate(zones):
        if is_unresolved(zone):
            continue
        if not isinstance(zone, str) or not re.fullmatch(ZONE_NAME_PATTERN, zone):
            out.append(
                _argument(
                    f"availability_zones[{index}]",
                    zone,
                    "must be an availability zone name such as 'us-east-1a'",
                )
            )
        else:
            found.setdefault(zone[:-1], zone)
    if len(found) > 1:
        out.append(
            _argument(
                "availability_zones",
                list(zones),
                f"must all be zones of one region (these span {', '.join(sorted(found))})",
            )
        )
    return out


def vpc_arguments(
    zones: Sequence[str],
    cidr: str,
    *,
    region: str | None,
    pod_cidr: str | None,
    pod_subnet_zone: str | None,
    node_subnet_cidrs: Sequence[str],
    node_subnet_zone: str | None,
) -> list[Finding]:
    """Why a VPC of these arguments cannot be built (empty when it can). ``region`` is the
    stack's region, None while it is unresolved (its zones are then not checked)."""
    out: list[Finding] = []
    if isinstance(zones, str):
        # A string is a sequence of letters: say what is meant instead of one line per letter.
        out.append(
            _argument(
                "availability_zones",
                zones,
                f"must be a list of zone names, such as [{zones!r}]",
            )
        )
        zones = [zones]
    zones = list(zones)
    if not 1 <= len(zones) <= MAX_ZONES:
        out.append(_argument("availability_zones", zones, f"must list 1 to {MAX_ZONES} zones"))
    out += platform_rules.vpc_cidr(cidr, key="cidr")
    if region is None:
        out += _zone_regions(zones)
    else:
        for index, zone in enumerate(zones):
            out += platform_rules.zone_in_region(
                zone, region, key=f"availability_zones[{index}]", region_key="the stack's region"
            )
    if pod_cidr is not None:
        out += scale_rules.pod_cidr(pod_cidr, cidr)
        if pod_subnet_zone not in zones:
            out.append(_argument("pod_subnet_zone", pod_subnet_zone, f"must be one of {zones}"))
    for index, block in enumerate(node_subnet_cidrs):
        # A node block is a secondary VPC CIDR block like the pod CIDR: same rule.
        out += scale_rules.pod_cidr(block, cidr, key=f"node_subnet_cidrs[{index}]")
    others = [pod_cidr] if pod_cidr is not None else []
    for index, block in enumerate(node_subnet_cidrs):
        if any(_overlaps(block, other) for other in others):
            out.append(
                _argument(
                    f"node_subnet_cidrs[{index}]",
                    block,
                    "must not overlap the pod CIDR or another node block",
                )
            )
        others.append(block)
    if node_subnet_cidrs and node_subnet_zone not in zones:
        out.append(_argument("node_subnet_zone", node_subnet_zone, f"must be one of {zones}"))
    return out
