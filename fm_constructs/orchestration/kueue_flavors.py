"""Kueue on a shared GPU cluster: the cohort's ResourceFlavors, and each workload's queues.

The flavors of every node pool are applied once per cluster, with the cluster (an add-on of
its registry), because a ClusterQueue that names a flavor which does not exist stays inactive:
created with the cluster, every flavor exists before any workload's queue. Each workload's
ClusterQueue lists its own pools at their capacity and every other lendable pool of the cohort
at quota 0, which is what lets it borrow idle capacity; the list is rendered at synthesis, once
every workload has registered its pools.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jsii
from aws_cdk import IStableAnyProducer, Lazy
from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from fm_constructs import kubernetes as k8s
from fm_constructs.domain.topology import TOPOLOGIES
from fm_constructs.kubernetes import kueue
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster

ADDON_ID = "KueueFlavors"


@dataclass(frozen=True)
class _Pool:
    owner: str
    flavor: k8s.Flavor
    quota: Mapping[str, int | str]
    lendable: bool


@jsii.implements(IStableAnyProducer)
class _Producer:
    """A value rendered at synthesis (plain JSON data)."""

    def __init__(self, produce: Callable[[], Any]) -> None:
        self._produce = produce

    def produce(self) -> Any:
        return self._produce()


class KueueFlavors(Construct):
    """Every ResourceFlavor of one cluster's cohort; get it with :meth:`enable`."""

    def __init__(self, scope: Construct, construct_id: str, *, cluster: IGpuCluster) -> None:
        super().__init__(scope, construct_id)
        self._cluster = cluster
        self._pools: dict[str, _Pool] = {}
        self.manifests: dict[str, eks.KubernetesManifest] = {}
        self.topologies: dict[str, eks.KubernetesManifest] = {}

    @classmethod
    def enable(cls, cluster: IGpuCluster) -> KueueFlavors:
        """The cluster's flavors, installed once through its add-on registry."""
        return cluster.addon_registry.install(
            ADDON_ID, lambda scope, construct_id: cls(scope, construct_id, cluster=cluster)
        )

    def add(
        self,
        flavor: k8s.Flavor,
        *,
        owner: str,
        quota: Mapping[str, int | str],
        lendable: bool = True,
    ) -> eks.KubernetesManifest:
        """Register the pool ``flavor`` of workload ``owner`` with its capacity ``quota``."""
        if flavor.name in self._pools:
            raise ValueError(f"ResourceFlavor {flavor.name!r} is already registered")
        self._pools[flavor.name] = _Pool(owner, flavor, dict(quota), lendable)
        manifest = eks.KubernetesManifest(
            self,
            f"Flavor-{flavor.name}",
            cluster=self._cluster.icluster,
            manifest=[k8s.resource_flavor(flavor)],
        )
        kueue = self._cluster.charts.get(charts.KUEUE.release)
        if kueue is not None:
            manifest.node.add_dependency(kueue)
        if flavor.topology_name is not None:
            manifest.node.add_dependency(self._topology(flavor.topology_name))
        self.manifests[flavor.name] = manifest
        return manifest

    def _topology(self, name: str) -> eks.KubernetesManifest:
        """One of the cluster's Kueue Topologies (``domain.topology.TOPOLOGIES``), once per
        cluster."""
        if name not in self.topologies:
            manifest = eks.KubernetesManifest(
                self,
                f"Topology-{name}",
                cluster=self._cluster.icluster,
                manifest=[k8s.topology(name, TOPOLOGIES[name])],
            )
            kueue = self._cluster.charts.get(charts.KUEUE.release)
            if kueue is not None:
                manifest.node.add_dependency(kueue)
            self.topologies[name] = manifest
        return self.topologies[name]

    def queue_lines(self, owner: str) -> list[k8s.QueueFlavor]:
        """Lines of ``owner``'s ClusterQueue: its pools at their quota first, then every other
        lendable pool at 0 (borrowable from the cohort)."""
        own = [p for p in self._pools.values() if p.owner == owner]
        others = [p for p in self._pools.values() if p.owner != owner and p.lendable]
        return [
            *(k8s.QueueFlavor(p.flavor.name, p.quota, lendable=p.lendable) for p in own),
            *(k8s.QueueFlavor(p.flavor.name, {}) for p in others),
        ]

    def cluster_queue(self, name: str, *, owner: str, namespace: str) -> dict[str, Any]:
        """``owner``'s ClusterQueue, its flavor list resolved at synthesis."""
        return kueue.cluster_queue_object(
            name,
            Lazy.any(
                _Producer(
                    lambda: kueue.cluster_queue_spec(
                        name, namespace=namespace, flavors=self.queue_lines(owner)
                    )
                )
            ),
        )
