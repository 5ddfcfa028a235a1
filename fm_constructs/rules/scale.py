"""Rules of deployments at scale: the pod CIDR of custom networking, pod networking an instance
type cannot carry, and fixed AWS limits (Capacity Block size).

The pod CIDR rule is a pure function over its values; the other codes are reported by the IP
budget (:mod:`fm_constructs.config.subnet_demand`) and the limit count
(:mod:`fm_constructs.config.limits`), which hold the arithmetic, with the codes below.
"""

from __future__ import annotations

from collections.abc import Iterable

from fm_constructs.planning.aws_limits import LimitUsage
from fm_constructs.planning.vpc_layout import secondary_block_problems
from fm_constructs.rules.findings import Finding, Severity, info

CUSTOM_NETWORKING_CARD_FULL = info(
    "FM602",
    "VPC CNI custom networking needs a free interface slot on network card 0 for pod ENIs; the "
    "instance type has none (p5, p5e, trn2.48xlarge: the primary ENA and the efa-only "
    "interface fill it), so its nodes would never become ready.",
    "Use a type with room on card 0 (p5en.48xlarge, p6-b200.48xlarge, p4d.24xlarge), or keep "
    "pods in the node subnet (platform.pod_networking = 'node-subnet') with fewer nodes.",
)
CUSTOM_NETWORKING_HYPERPOD = info(
    "FM603",
    "Custom networking is set up for EKS managed node groups only; SageMaker HyperPod does not "
    "document ENIConfig support.",
    "Run the workload on 'eks', or keep pods in the node subnet.",
)
POD_SUBNET_SHORT = info(
    "FM604",
    "The pod subnet (platform.pod_cidr) cannot hold the pod addresses of every node group at "
    "its largest size.",
    "Give platform.pod_cidr a larger block (at most a /16), lower max_pods_per_node, or lower "
    "instance_count.",
)
NODE_SUBNET_SHORT = info(
    "FM606",
    "The private subnet of the GPU zone (a quarter of platform.vpc_cidr) cannot hold the "
    "addresses of every node group at its largest size, the endpoints, FSx and EKS.",
    "Give platform.vpc_cidr a larger block (the message names the size), use efa_layout = "
    "'efa-only', give pods a secondary CIDR (platform.pod_networking), or lower the node "
    "counts.",
)
FIXED_LIMIT_EXCEEDED = info(
    "FM605",
    "The deployment needs more than a fixed (not adjustable) AWS limit allows, such as more "
    "than 64 instances in one Capacity Block.",
    "Change the profile: split the pool (one Capacity Block per pool), or reserve another way.",
)


SECONDARY_BLOCK_REFUSED = info(
    "FM601",
    "A secondary VPC CIDR block (the pod CIDR, a node block) is not a /16 to /28 block that "
    "AWS accepts beside the primary (IPv4 CIDR block association restrictions: no block from "
    "another RFC 1918 range than the primary's, no 198.19.0.0/16, no 10.0.0.0/16 beside "
    "10.0.0.0/15), or it overlaps the VPC CIDR.",
    "Use a block from 100.64.0.0/10 such as '100.64.0.0/16', or one of the primary's own RFC "
    "1918 range that does not overlap platform.vpc_cidr.",
)


def pod_cidr(value: str, vpc_cidr: str, *, key: str = "pod_cidr") -> list[Finding]:
    """What is wrong with ``value`` as a secondary block beside ``vpc_cidr`` (the subnet
    rules report what a subnet plan found under the same code)."""
    return [
        Finding(SECONDARY_BLOCK_REFUSED, Severity.ERROR, key, value, problem)
        for problem in secondary_block_problems(value, vpc_cidr)
    ]


def fixed_limits(usages: Iterable[LimitUsage]) -> list[Finding]:
    """An error for every fixed AWS limit a usage exceeds (an adjustable one only needs a
    quota increase before the deploy: ``fmc plan`` shows it), under the limit's profile key."""
    return [
        Finding(
            FIXED_LIMIT_EXCEEDED,
            Severity.ERROR,
            u.limit.key,
            u.used,
            f"the deployment needs {u.used:,} {u.limit.unit} but AWS allows "
            f"{u.limit.value:,} per {u.limit.scope} (a fixed limit, {u.limit.source}); "
            f"{u.what}",
        )
        for u in usages
        if u.exceeded and not u.limit.adjustable
    ]
