"""Where EKS pods get their addresses, and the VPC CNI settings that put them there.

Three ways AWS documents for clusters that outgrow their node subnet, and why this library
uses the second for large GPU clusters:

* **prefix delegation in the node subnet** (EKS User Guide, "Assign more IP addresses to
  Amazon EKS nodes with prefixes"): more pods per ENI, but every pod address still comes from
  the node subnet. A VPC CIDR is at most a /16, so the GPU zone's private subnet holds at most
  a quarter of that (16,379 addresses): a thousand nodes with a few dozen pods each do not fit.
* **custom networking** (EKS User Guide, "Deploy Pods in alternate subnets with custom
  networking"; EKS Best Practices, "Custom Networking"): the VPC CNI attaches the ENIs it uses
  for pods in a subnet named by an ENIConfig per zone, carved from a secondary VPC CIDR
  (``100.64.0.0/10`` shared address space is the documented example). Node addresses stay in
  the node subnet; with prefix delegation on those pod ENIs, a node takes whole /28 prefixes as
  its pods need them (``WARM_PREFIX_TARGET=1``). This is what the library switches on.
* **IPv6** (EKS User Guide, "IPv6 addresses for clusters, Pods, and services"): no address
  shortage at all, but the family is fixed when the cluster is created, and every component
  in the path (the AMP managed scraper, FSx for Lustre's LNet, SageMaker HyperPod, NCCL's
  bootstrap sockets) would have to be checked for IPv6-only pods; none of that can be checked
  without an account, so it is not offered.

Custom networking never uses the primary ENI for pods: the VPC CNI needs a free interface slot
on network card 0 (it manages card 0 only; ``ENABLE_MULTI_NIC`` leaves cards holding only an
``efa-only`` device unmanaged, amazon-vpc-cni-k8s v1.23.0 ``pkg/ipamd/ipamd.go``). On
p5.48xlarge, p5e.48xlarge and trn2.48xlarge card 0 holds two interfaces, the primary ENA and
the ``efa-only`` interface the EFA layout puts at device index 1, so no pod ENI fits; ipamd
then refuses to make the node ready ("Failed to attach any ENIs for custom networking", same
file). :func:`pod_enis_with_custom_networking` says how many fit, and the rules refuse custom
networking for such types.

Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum

from fm_constructs.catalog import InstanceSpec
from fm_constructs.planning.efa_layout import EfaLayout, efa_interface_layout


class PodNetworking(StrEnum):
    """``node-subnet``: pods take secondary addresses in the node's subnet (the VPC CNI
    default). ``prefix-delegation``: pods take /28 prefixes in the node's subnet, as many as
    kubelet's maxPods needs. ``custom-networking``: pods get addresses from per-zone pod
    subnets of a secondary VPC CIDR, with prefix delegation. ``auto``: the first of these, in
    that order, that the profile's largest deployment fits."""

    AUTO = "auto"
    NODE_SUBNET = "node-subnet"
    PREFIX_DELEGATION = "prefix-delegation"
    CUSTOM_NETWORKING = "custom-networking"


#: The secondary VPC CIDR of the pod subnets: RFC 6598 shared address space, the range the EKS
#: custom-networking guide uses (a VPC CIDR block is /16 to /28).
DEFAULT_POD_CIDR = "100.64.0.0/16"
#: kubelet maxPods of accelerated nodes under custom networking when the profile sets none: a
#: training node runs one to eight job pods beside about a dozen DaemonSets (device plugins,
#: DCGM, node exporter, node monitoring, FSx CSI, the EFA/Lustre counters). The figure bounds
#: what one node takes from the pod subnet (:func:`pod_subnet_addresses_per_node`).
DEFAULT_ACCELERATED_MAX_PODS = 32
#: Spare /28 prefixes the VPC CNI keeps on a node with prefix delegation (its default).
WARM_PREFIX_TARGET = 1
#: Addresses in one delegated /28 prefix.
PREFIX_ADDRESSES = 16
#: /28 blocks of a subnet that cannot hold a prefix: the first and the last hold addresses
#: AWS reserves (the first four and the last of every subnet).
RESERVED_PREFIX_BLOCKS = 2


def prefix_blocks(prefix: int) -> int:
    """Whole /28 blocks of a /``prefix`` subnet free to hold a delegated prefix (a prefix needs
    a free, aligned /28: EC2 User Guide, "Assign prefixes to network interfaces")."""
    if prefix > 28:
        return 0
    return max(0, int(2 ** (28 - prefix)) - RESERVED_PREFIX_BLOCKS)


#: Node label naming the ENIConfig of a node: its zone, so one ENIConfig per zone serves every
#: node group (EKS User Guide, custom networking, ``ENI_CONFIG_LABEL_DEF``).
ENI_CONFIG_LABEL = "topology.kubernetes.io/zone"


def vpc_cni_environment(networking: PodNetworking) -> dict[str, str]:
    """The VPC CNI's ``env`` settings (EKS add-on configuration values) for ``networking``;
    empty for the node subnet (the add-on's defaults)."""
    if networking is PodNetworking.PREFIX_DELEGATION:
        return {"ENABLE_PREFIX_DELEGATION": "true", "WARM_PREFIX_TARGET": str(WARM_PREFIX_TARGET)}
    if networking is not PodNetworking.CUSTOM_NETWORKING:
        return {}
    return {
        "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "true",
        "ENI_CONFIG_LABEL_DEF": ENI_CONFIG_LABEL,
        "ENABLE_PREFIX_DELEGATION": "true",
        "WARM_PREFIX_TARGET": str(WARM_PREFIX_TARGET),
    }


def _card0_interfaces(spec: InstanceSpec, layout: EfaLayout | None) -> int:
    """Interfaces the launch template puts on network card 0: the primary, and the layout's
    interfaces there (``None``: no EFA, the primary alone)."""
    if layout is None:
        return 1
    return sum(1 for slot in efa_interface_layout(spec, layout) if slot.network_card_index == 0)


def _prefixes_for(spec: InstanceSpec, max_pods: int) -> tuple[int, int]:
    """(prefixes, ENIs holding them) for ``max_pods`` pods: ``ceil(pods / 16)`` /28 prefixes
    plus ``WARM_PREFIX_TARGET`` spare, ``IPv4 addresses per interface - 1`` prefixes per ENI
    (the first address of an ENI is its own)."""
    prefixes = -(-max_pods // PREFIX_ADDRESSES) + WARM_PREFIX_TARGET
    return prefixes, -(-prefixes // (spec.ipv4_addresses_per_interface - 1))


def pod_enis_with_custom_networking(spec: InstanceSpec, layout: EfaLayout | None) -> int:
    """ENIs the VPC CNI can attach for pods under custom networking: the interface slots of
    network card 0 left after the primary interface and the layout's interfaces on card 0."""
    return max(0, spec.network_card(0).max_interfaces - _card0_interfaces(spec, layout))


@dataclass(frozen=True)
class PodSubnetAddressing:
    """What one node takes from the pod subnet of its zone under custom networking.

    ``max_pods``: kubelet's limit, set on the node. ``pod_enis``: ENIs the CNI may attach for
    pods. ``prefixes``: /28 prefixes the CNI holds at ``max_pods`` (one more spare).
    ``addresses``: prefixes x 16, plus one primary address per pod ENI attached.
    """

    instance_type: str
    max_pods: int
    pod_enis: int
    prefixes: int
    attached_enis: int
    addresses: int

    @property
    def fits_node(self) -> bool:
        """False when the node cannot hold the pod ENIs or prefixes it needs."""
        return self.pod_enis > 0 and self.attached_enis <= self.pod_enis

    @property
    def blocks(self) -> int:
        """Whole /28s of the pod subnet the node may take whatever addresses EC2 picks: one per
        prefix, and one per pod ENI, whose own (primary) address may land in a /28 of its own
        and leave it unusable for a prefix (the fragmentation behind the VPC CNI's
        ``InsufficientCidrBlocks``)."""
        return self.prefixes + self.attached_enis


def pod_subnet_addresses_per_node(
    spec: InstanceSpec, layout: EfaLayout | None, max_pods: int
) -> PodSubnetAddressing:
    """Pod-subnet addresses of one ``spec`` node running ``max_pods`` pods with custom
    networking and prefix delegation: ``ceil(pods / 16) + WARM_PREFIX_TARGET`` prefixes, spread
    over ENIs of ``IPv4 addresses per interface - 1`` prefixes each (the first address of an
    ENI is its own). Host-network pods are counted as if they took an address (an upper
    bound)."""
    pod_enis = pod_enis_with_custom_networking(spec, layout)
    prefixes, attached = _prefixes_for(spec, max_pods)
    return PodSubnetAddressing(
        spec.name,
        max_pods,
        pod_enis,
        prefixes,
        attached,
        prefixes * PREFIX_ADDRESSES + attached,
    )


@dataclass(frozen=True)
class PrefixAddressing:
    """What one node takes from its own subnet with prefix delegation there: ``prefixes``
    /28 prefixes for ``max_pods`` pods (one spare), on ``attached_enis`` of the ``enis`` the
    VPC CNI may use on card 0 (the primary included); ``addresses`` besides the node's own."""

    max_pods: int
    enis: int
    prefixes: int
    attached_enis: int
    addresses: int

    @property
    def fits_node(self) -> bool:
        return self.attached_enis <= self.enis


def node_subnet_prefix_addressing(
    spec: InstanceSpec, layout: EfaLayout | None, max_pods: int
) -> PrefixAddressing:
    """Prefix delegation in the node subnet: the primary ENI holds prefixes first (its first
    address is the node's), further ENIs on card 0 take one address of their own each. On
    p5.48xlarge (card 0 full with the efa-only interface) the primary's 49 prefix slots hold
    far more than kubelet's maxPods needs."""
    enis = spec.network_card(0).max_interfaces - _card0_interfaces(spec, layout) + 1
    prefixes, attached = _prefixes_for(spec, max_pods)
    return PrefixAddressing(
        max_pods, enis, prefixes, attached, prefixes * PREFIX_ADDRESSES + attached - 1
    )


@dataclass(frozen=True)
class PodSubnetLayout:
    """The pod subnets of a secondary CIDR: the GPU zone gets the whole block (it holds every
    accelerated node); the other zones' nodes (system nodes) keep using their private subnet
    as their ENIConfig subnet, so the block is not split."""

    pod_cidr: str
    gpu_zone: str

    @property
    def prefix(self) -> int:
        return ipaddress.IPv4Network(self.pod_cidr).prefixlen

    @property
    def addresses(self) -> int:
        return int(ipaddress.IPv4Network(self.pod_cidr).num_addresses)
