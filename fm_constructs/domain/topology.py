"""The EC2 network topology the nodes of a cluster carry as labels, for Kueue's
topology-aware scheduling.

EKS labels every node of a supported instance type with its place in the AWS network
hierarchy, ``topology.k8s.aws/network-node-layer-1`` (broadest) to ``-3`` (closest; EKS User
Guide, "Place distributed AI/ML workloads with network topology labels",
https://docs.aws.amazon.com/eks/latest/userguide/ml-workload-topology.html). Kueue's Topology
lists them from the top, with ``kubernetes.io/hostname`` as the lowest level: without it Kueue
0.16 does not respect node taints in topology-aware placement (Kueue docs, "Topology Aware
Scheduling", Limitations), and every accelerated node here is tainted.

Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from typing import Protocol


class InstanceSpec(Protocol):
    """What these functions read of a catalogued type (:class:`fm_constructs.catalog.InstanceSpec`;
    the vocabulary does not import the catalog)."""

    @property
    def family(self) -> str: ...


#: Name of the cluster's Kueue Topology.
KUEUE_TOPOLOGY = "aws-network"
HOSTNAME_LABEL = "kubernetes.io/hostname"
#: The network layers, broadest first.
NETWORK_LAYER_LABELS: tuple[str, ...] = (
    "topology.k8s.aws/network-node-layer-1",
    "topology.k8s.aws/network-node-layer-2",
    "topology.k8s.aws/network-node-layer-3",
)
#: The Topology's levels, broadest first.
TOPOLOGY_LEVELS: tuple[str, ...] = (*NETWORK_LAYER_LABELS, HOSTNAME_LABEL)
#: The level a training job prefers to fit in (Kueue's ``podset-preferred-topology``): the
#: closest network layer; Kueue goes one layer up at a time when the job does not fit.
PREFERRED_LEVEL = NETWORK_LAYER_LABELS[-1]
PREFERRED_TOPOLOGY_ANNOTATION = "kueue.x-k8s.io/podset-preferred-topology"
#: Instance families EC2 describes with an instance topology (EC2 User Guide, "Amazon EC2
#: instance topology", prerequisites: the accelerated families of this catalog listed there).
#: A node of another type carries no layer labels, and a topology-aware flavor could not place
#: it.
TOPOLOGY_FAMILIES = frozenset(
    {"p3dn", "p4d", "p4de", "p5", "p5e", "p5en", "p6-b200", "trn1", "trn1n", "trn2"}
)


def has_instance_topology(spec: InstanceSpec) -> bool:
    """True when EKS labels nodes of ``spec`` with their network layers."""
    return spec.family in TOPOLOGY_FAMILIES


#: Topology of pools whose nodes carry no network-layer labels: the host alone. Every pool's
#: flavor is topology-aware, so no ClusterQueue mixes topology-aware and plain flavors: Kueue
#: then places every pod set of every queue by topology, with or without an annotation (a queue
#: is "TAS-only" when all its flavors name a topology, kueue v0.19.2
#: pkg/cache/scheduler/clusterqueue.go ``isTASOnly``; in a mixed queue a pod set without a
#: topology annotation is refused by every topology-aware flavor, "supports only
#: TopologyAwareScheduling", pkg/scheduler/flavorassigner/tas_flavorassigner.go
#: ``checkPodSetAndFlavorMatchForTAS``).
HOST_TOPOLOGY = "host"
#: Levels of each Topology the library renders, by name.
TOPOLOGIES: dict[str, tuple[str, ...]] = {
    KUEUE_TOPOLOGY: TOPOLOGY_LEVELS,
    HOST_TOPOLOGY: (HOSTNAME_LABEL,),
}


def flavor_topology(spec: InstanceSpec, *, network_layers: bool = True) -> str:
    """The Topology a pool of ``spec`` nodes is placed by: the network layers where EKS labels
    its nodes with them, else the host alone. ``network_layers=False`` for nodes the library
    does not know to carry the layer labels (HyperPod)."""
    if network_layers and has_instance_topology(spec):
        return KUEUE_TOPOLOGY
    return HOST_TOPOLOGY
