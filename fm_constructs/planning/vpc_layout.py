"""How a GPU VPC's CIDR is divided into subnets (shared by the VPC construct and the
profile's IP budget check, so both count the same addresses)."""

from __future__ import annotations

import ipaddress


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
