"""Kueue objects that share accelerators between workloads (``kueue.x-k8s.io/v1beta2``, the
storage version of the pinned Kueue 0.16).

- one :func:`resource_flavor` per node pool: the node labels Kueue adds to the pods it admits
  on that pool and the tolerations of the pool's taints;
- one :func:`cluster_queue` per workload, in the cohort
  :data:`~fm_constructs.domain.names.KUEUE_COHORT`: nominal quota equal to the capacity of
  the workload's own pools, and every other pool of the cohort at quota 0, so a workload may
  borrow what another leaves idle;
- one :func:`local_queue` in the workload namespace, the queue jobs name.

Preemption, stated once for every queue (:data:`PREEMPTION`): a queue that needs its own
quota back preempts the borrowers (``reclaimWithinCohort: Any``); a borrowing job never
preempts another queue's jobs (``borrowWithinCohort: Never``); inside a queue a job may
preempt lower-priority jobs (``withinClusterQueue: LowerPriority``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fm_constructs.domain import names

API_VERSION = "kueue.x-k8s.io/v1beta2"
PREEMPTION: dict[str, Any] = {
    "reclaimWithinCohort": "Any",
    "borrowWithinCohort": {"policy": "Never"},
    "withinClusterQueue": "LowerPriority",
}
#: Resources every queue covers (one resource group: a resource may appear in one group only).
#: Kueue admits no job that requests a resource its queue does not cover, so this lists every
#: resource a training pod requests, huge pages (EFA) included.
COVERED_RESOURCES: tuple[str, ...] = (
    "cpu",
    "memory",
    names.NVIDIA_GPU_RESOURCE,
    names.NEURON_RESOURCE,
    names.EFA_RESOURCE,
    names.HUGEPAGES_2MI_RESOURCE,
)


@dataclass(frozen=True)
class Flavor:
    """A node pool as Kueue sees it: its name, the labels that select its nodes and the
    taints (``key``, ``value``; effect NoSchedule) its nodes carry."""

    name: str
    node_labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str], ...]
    #: Kueue Topology the flavor's nodes are placed by (topology-aware scheduling), if any.
    topology_name: str | None = None


@dataclass(frozen=True)
class QueueFlavor:
    """A flavor's line in a ClusterQueue: nominal quota per resource (missing resources count
    0) and whether idle quota may be lent to the cohort."""

    flavor: str
    nominal: Mapping[str, int | str]
    lendable: bool = True


def resource_flavor(flavor: Flavor) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "nodeLabels": dict(flavor.node_labels),
        "tolerations": [
            {"key": key, "operator": "Equal", "value": value, "effect": "NoSchedule"}
            for key, value in flavor.taints
        ],
    }
    if flavor.topology_name is not None:
        spec["topologyName"] = flavor.topology_name
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor.name},
        "spec": spec,
    }


def topology(name: str, levels: Sequence[str]) -> dict[str, Any]:
    """A Kueue Topology: node labels from the broadest level to the closest."""
    return {
        "apiVersion": API_VERSION,
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": label} for label in levels]},
    }


def cluster_queue(
    name: str, *, namespace: str, flavors: Sequence[QueueFlavor], cohort: str = names.KUEUE_COHORT
) -> dict[str, Any]:
    """The workload's ClusterQueue, open to jobs of ``namespace`` only."""
    return cluster_queue_object(
        name, cluster_queue_spec(name, namespace=namespace, flavors=flavors, cohort=cohort)
    )


def cluster_queue_object(name: str, spec: Any) -> dict[str, Any]:
    """The ClusterQueue ``name`` with ``spec``: :func:`cluster_queue_spec`, or a value that
    resolves to it at synthesis (its flavor list is known once every workload registered)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def cluster_queue_spec(
    name: str, *, namespace: str, flavors: Sequence[QueueFlavor], cohort: str = names.KUEUE_COHORT
) -> dict[str, Any]:
    """The spec of the ClusterQueue ``name``: the cohort, jobs of ``namespace`` only, and one
    line per flavor covering :data:`COVERED_RESOURCES`."""
    if not flavors:
        raise ValueError(f"ClusterQueue {name!r} needs at least one flavor")
    lines = []
    for line in flavors:
        resources = []
        for resource in COVERED_RESOURCES:
            entry: dict[str, Any] = {
                "name": resource,
                "nominalQuota": line.nominal.get(resource, 0),
            }
            if not line.lendable:
                entry["lendingLimit"] = 0
            resources.append(entry)
        lines.append({"name": line.flavor, "resources": resources})
    return {
        "cohortName": cohort,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "queueingStrategy": "BestEffortFIFO",
        "preemption": dict(PREEMPTION),
        "resourceGroups": [{"coveredResources": list(COVERED_RESOURCES), "flavors": lines}],
    }


def local_queue(name: str, *, namespace: str, cluster_queue_name: str) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue_name},
    }


def flavor_line(
    flavor: str, quota: Mapping[str, int | str] | None, *, lendable: bool = True
) -> QueueFlavor:
    """A queue line: the workload's own pool at ``quota``, another pool at 0 (``None``)."""
    return QueueFlavor(flavor=flavor, nominal=dict(quota or {}), lendable=lendable)


#: Job kinds Kueue admits through queues. The ``pod``, ``deployment``, ``statefulset`` and
#: ``leaderworkerset`` integrations are left out: they put a fail-closed webhook on every pod
#: creation, and model servers are not queued (inference capacity is not lent, see
#: the module docstring).
KUEUE_FRAMEWORKS: tuple[str, ...] = (
    "batch/job",
    "jobset.x-k8s.io/jobset",
    "trainer.kubeflow.org/trainjob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/raycluster",
)


def manager_config() -> dict[str, Any]:
    """Kueue's controller configuration (``config.kueue.x-k8s.io/v1beta2``): the chart's
    defaults, the job kinds of :data:`KUEUE_FRAMEWORKS`, and ``managedJobsNamespaceSelector``
    on the workload-namespace label, which the chart (0.19.2,
    ``templates/webhook/manifests.yaml``) copies into the namespace selector of its job
    webhooks: pods and jobs in other namespaces (kube-system, device plugins, exporters,
    operators) are never sent to Kueue, so they start even while Kueue is down."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "health": {"healthProbeBindAddress": ":8081"},
        "metrics": {"bindAddress": ":8443"},
        "webhook": {"port": 9443},
        "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
        "controller": {
            "groupKindConcurrency": {
                "Job.batch": 5,
                "Pod": 5,
                "Workload.kueue.x-k8s.io": 10,
                "LocalQueue.kueue.x-k8s.io": 5,
                "ClusterQueue.kueue.x-k8s.io": 5,
                "ResourceFlavor.kueue.x-k8s.io": 1,
            }
        },
        "clientConnection": {"qps": 300, "burst": 500},
        "manageJobsWithoutQueueName": False,
        "managedJobsNamespaceSelector": {"matchLabels": {names.KUEUE_MANAGED_LABEL: "true"}},
        "integrations": {"frameworks": list(KUEUE_FRAMEWORKS)},
    }
