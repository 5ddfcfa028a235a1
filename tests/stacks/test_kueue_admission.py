"""Every pod set the library renders is admitted by Kueue onto the pools it targets, in every
EKS profile, and does not stay Pending once admitted.

The walk follows Kueue's flavor assignment at the pinned chart version (kubernetes-sigs/kueue
v0.19.2):

* ``pkg/scheduler/flavorassigner/tas_flavorassigner.go`` ``checkPodSetAndFlavorMatchForTAS``: a
  pod set without a topology annotation is refused by a topology-aware flavor unless every
  flavor of its ClusterQueue is topology-aware (``isTASImplied``; ``isTASOnly`` in
  ``pkg/cache/scheduler/clusterqueue.go``); a pod set with one is refused by plain flavors and by
  topology-aware flavors whose Topology lacks the requested level;
* ``pkg/scheduler/flavorassigner/flavorassigner.go`` ``flavorSelector``: a pod's nodeSelector is
  matched against the flavor's ``nodeLabels`` on the label keys the group's flavors use only;
  the flavor's ``nodeTaints`` must be tolerated by the pod's and the flavor's tolerations; every
  resource requested must be covered by the queue, within the quota the cohort holds;
* ``pkg/cache/scheduler/tas_flavor_snapshot.go``: topology-aware placement only counts nodes of
  the flavor that match the pod's nodeSelector, tolerate their taints, carry every level label
  of the Topology and have room for the pod;
* once admitted, Kueue adds the flavor's ``nodeLabels`` and tolerations to the pods, which then
  need a node that matches all of it (else they are admitted and stay Pending).

Nodes are read from the synthesized templates (node groups: labels, taints, launch template
instance type, maximum size; HyperPod instance groups). EKS adds ``node.kubernetes.io/
instance-type``, ``kubernetes.io/hostname`` and, on the types EC2 gives an instance topology, the
network-layer labels. Allocatable is a stated model: 92 % of the node's vCPUs and memory (the
kubelet's reservation and the DaemonSets), every accelerator and EFA device, and on EFA nodes the
5120 MiB of 2 MiB huge pages the queues' quota counts per node.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.config import Orchestrator
from fm_constructs.domain.names import EFA_HUGEPAGES_2MI_MI
from fm_constructs.domain.topology import (
    HOSTNAME_LABEL,
    NETWORK_LAYER_LABELS,
    has_instance_topology,
)
from fm_constructs.errors import FmValidationError
from fm_constructs.kubernetes import jobs
from fm_constructs.kubernetes.node_shape import (
    EFA_RESOURCE,
    GPU_RESOURCE,
    INSTANCE_TYPE_LABEL,
    QUEUE_LABEL,
    WorkloadTarget,
)
from tests.stacks.profiles import PROFILE_NAMES, ROOT, synthesize

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
TOPOLOGY_ANNOTATIONS = (
    "kueue.x-k8s.io/podset-required-topology",
    "kueue.x-k8s.io/podset-preferred-topology",
    "kueue.x-k8s.io/podset-unconstrained-topology",
)
ALLOCATABLE_SHARE = 0.92
_UNITS = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "m": 1e-3, "k": 1e3, "M": 1e6}


def quantity(value: int | str) -> float:
    text = str(value)
    match = re.fullmatch(r"([0-9.]+)([A-Za-z]*)", text)
    assert match, text
    return float(match.group(1)) * _UNITS.get(match.group(2), 1)


@dataclass(frozen=True)
class NodePool:
    name: str
    labels: dict[str, str]
    taints: list[dict[str, str]]
    allocatable: dict[str, float]
    count: int


@dataclass
class PodSet:
    """One pod template Kueue makes a pod set of, with the queue its job names."""

    what: str
    namespace: str
    queue: str
    spec: dict[str, Any]
    annotations: dict[str, str] = field(default_factory=dict)
    count: int = 1

    def requests(self) -> dict[str, float]:
        total: dict[str, float] = {}
        for container in self.spec["containers"]:
            resources = container.get("resources", {})
            merged = {**resources.get("limits", {}), **resources.get("requests", {})}
            for name, value in merged.items():
                total[name] = total.get(name, 0.0) + quantity(value)
        return total


def _allocatable(instance_type: str) -> dict[str, float]:
    spec = get_instance_type(instance_type)
    out = {
        "cpu": spec.vcpus * ALLOCATABLE_SHARE,
        "memory": spec.memory_gib * 2**30 * ALLOCATABLE_SHARE,
    }
    if spec.eks_ami_family == "NVIDIA":
        out[GPU_RESOURCE] = spec.accelerator_count
    if spec.efa_supported:
        out[EFA_RESOURCE] = spec.max_efa_interfaces
        out["hugepages-2Mi"] = EFA_HUGEPAGES_2MI_MI * 2**20
    return out


def _eks_labels(instance_type: str, labels: dict[str, str]) -> dict[str, str]:
    out = {**labels, INSTANCE_TYPE_LABEL: instance_type, HOSTNAME_LABEL: "ip-10-0-0-1"}
    if has_instance_topology(get_instance_type(instance_type)):
        out.update({label: "nn-1" for label in NETWORK_LAYER_LABELS})
    return out


def _catalogued(instance_type: str) -> bool:
    try:
        get_instance_type(instance_type)
    except FmValidationError:
        return False
    return True


@dataclass
class Cluster:
    pools: list[NodePool] = field(default_factory=list)
    flavors: dict[str, dict[str, Any]] = field(default_factory=dict)
    topologies: dict[str, list[str]] = field(default_factory=dict)
    cluster_queues: dict[str, dict[str, Any]] = field(default_factory=dict)
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)
    pod_sets: list[PodSet] = field(default_factory=list)
    #: Pod templates of jobs outside Kueue (the privileged diagnostics namespace is not
    #: Kueue-managed): only the scheduler places them.
    unqueued: list[PodSet] = field(default_factory=list)


def _objects(resource: dict[str, Any]) -> list[dict[str, Any]]:
    manifest = resource["Properties"]["Manifest"]
    if not isinstance(manifest, str):
        return []  # manifests with deploy-time tokens carry no Kueue objects or pod sets
    objects: list[dict[str, Any]] = json.loads(manifest)
    return objects


def _runtime_pod_sets(runtime: dict[str, Any], queue: str) -> list[PodSet]:
    namespace = runtime["metadata"]["namespace"]
    out = []
    for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
        pod = job["template"]["spec"]["template"]
        out.append(
            PodSet(
                what=f"{runtime['metadata']['name']}/{job['name']}",
                namespace=namespace,
                queue=queue,
                spec=pod["spec"],
                annotations=pod.get("metadata", {}).get("annotations", {}),
            )
        )
    return out


def read_cluster(profile_name: str) -> Cluster:
    result = synthesize(profile_name)
    cluster = Cluster()
    runtimes: list[dict[str, Any]] = []
    for template in result.templates.values():
        resources = template["Resources"]
        for resource in resources.values():
            kind = resource["Type"]
            props = resource.get("Properties", {})
            if kind == "AWS::EKS::Nodegroup":
                ref = props["LaunchTemplate"]["Id"]["Ref"]
                data = resources[ref]["Properties"]["LaunchTemplateData"]
                (instance_type,) = props.get("InstanceTypes") or [data["InstanceType"]]
                if not _catalogued(instance_type):
                    continue  # the system node group: no flavor names it
                taints = [
                    {"key": t["Key"], "value": t.get("Value", ""), "effect": "NoSchedule"}
                    for t in props.get("Taints", [])
                    if t["Effect"] == "NO_SCHEDULE"
                ]
                cluster.pools.append(
                    NodePool(
                        name=props.get("Labels", {}).get("fm-constructs/node-pool", instance_type),
                        labels=_eks_labels(instance_type, props.get("Labels", {})),
                        taints=taints,
                        allocatable=_allocatable(instance_type),
                        count=props["ScalingConfig"]["MaxSize"],
                    )
                )
            elif kind == "AWS::SageMaker::Cluster":
                for group in props["InstanceGroups"]:
                    ml_type = group["InstanceType"]
                    if not _catalogued(ml_type):
                        continue
                    cluster.pools.append(
                        NodePool(
                            name=group["InstanceGroupName"],
                            labels={INSTANCE_TYPE_LABEL: ml_type, HOSTNAME_LABEL: "hyperpod-i-1"},
                            taints=[],
                            allocatable=_allocatable(ml_type),
                            count=group["InstanceCount"],
                        )
                    )
            elif kind == MANIFEST:
                for obj in _objects(resource):
                    name = obj["metadata"]["name"]
                    if obj["kind"] == "ResourceFlavor":
                        cluster.flavors[name] = obj["spec"]
                    elif obj["kind"] == "Topology":
                        cluster.topologies[name] = [lv["nodeLabel"] for lv in obj["spec"]["levels"]]
                    elif obj["kind"] == "ClusterQueue":
                        cluster.cluster_queues[name] = obj["spec"]
                    elif obj["kind"] == "LocalQueue":
                        key = (obj["metadata"]["namespace"], name)
                        cluster.local_queues[key] = obj["spec"]["clusterQueue"]
                    elif obj["kind"] == "TrainingRuntime":
                        runtimes.append(obj)
    # The runtimes run through the TrainJobs that name them (queue label on the TrainJob);
    # the first-job guide's DCGM Job has its own pod template, outside Kueue (it runs in the
    # privileged diagnostics namespace). Both for every training workload.
    for workload in result.profile.enabled_workloads:
        if workload.orchestrator not in (Orchestrator.EKS, Orchestrator.HYPERPOD_EKS):
            continue
        if workload.name == "inference":
            continue
        target = WorkloadTarget(
            workload.name,
            workload.instance_type,
            hyperpod=workload.orchestrator is Orchestrator.HYPERPOD_EKS,
        )
        if target.spec.eks_ami_family != "NVIDIA":
            continue
        nodes = workload.instance_count
        for runtime in (r for r in runtimes if r["metadata"]["namespace"] == target.namespace):
            for pod_set in _runtime_pod_sets(runtime, target.local_queue):
                pod_set.count = nodes if pod_set.what.endswith("/node") else 1
                cluster.pod_sets.append(pod_set)
        dcgm = jobs.dcgm_diag_job(target, nodes)
        template = dcgm["spec"]["template"]
        assert QUEUE_LABEL not in dcgm["metadata"]["labels"]
        cluster.unqueued.append(
            PodSet(
                what=f"{jobs.DCGM_DIAG_JOB} Job",
                namespace=dcgm["metadata"]["namespace"],
                queue="",
                spec=template["spec"],
                annotations=template.get("metadata", {}).get("annotations", {}),
                count=nodes,
            )
        )
    return cluster


# ------------------------------------------------------------------------ Kueue's rules


def _tolerated(taint: dict[str, str], tolerations: list[dict[str, Any]]) -> bool:
    for t in tolerations:
        if t.get("effect") not in (None, "", taint["effect"]):
            continue
        if t.get("operator") == "Exists" and t.get("key") in (None, "", taint["key"]):
            return True
        if t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


def _fits(pool: NodePool, requests: dict[str, float]) -> bool:
    return all(pool.allocatable.get(name, 0.0) >= value for name, value in requests.items())


def _schedulable_pools(
    cluster: Cluster, selector: dict[str, str], tolerations: list[dict[str, Any]], ps: PodSet
) -> list[NodePool]:
    requests = ps.requests()
    return [
        pool
        for pool in cluster.pools
        if all(pool.labels.get(k) == v for k, v in selector.items())
        and all(_tolerated(t, tolerations) for t in pool.taints)
        and _fits(pool, requests)
    ]


def _cohort_quota(cluster: Cluster, cohort: str, flavor: str, resource: str) -> float:
    total = 0.0
    for cq in cluster.cluster_queues.values():
        if cq.get("cohortName") != cohort:
            continue
        for group in cq["resourceGroups"]:
            for line in group["flavors"]:
                if line["name"] != flavor:
                    continue
                for r in line["resources"]:
                    if r["name"] == resource:
                        total += quantity(r["nominalQuota"])
    return total


def flavor_verdict(
    cluster: Cluster, cq: dict[str, Any], group: dict[str, Any], flavor_name: str, ps: PodSet
) -> str | None:
    """Why Kueue refuses ``flavor_name`` for ``ps`` (None: it admits it there)."""
    flavor = cluster.flavors.get(flavor_name)
    if flavor is None:
        return f"flavor {flavor_name} does not exist (the queue stays inactive)"
    all_flavors = [line["name"] for g in cq["resourceGroups"] for line in g["flavors"]]
    tas_only = all(cluster.flavors.get(f, {}).get("topologyName") for f in all_flavors)
    explicit = {k: v for k, v in ps.annotations.items() if k in TOPOLOGY_ANNOTATIONS}
    topology = flavor.get("topologyName")
    requests = ps.requests()
    uses_tas = bool(explicit) or tas_only
    if explicit:
        # Explicitly requested: plain flavors refuse it, topology flavors need the level.
        if topology is None:
            if set(requests) & set(group["coveredResources"]):
                return f"flavor {flavor_name} does not support TopologyAwareScheduling"
        else:
            levels = cluster.topologies.get(topology)
            if levels is None:
                return f"Topology {topology} of flavor {flavor_name} does not exist"
            for key, level in explicit.items():
                if not key.endswith("unconstrained-topology") and level not in levels:
                    return f"flavor {flavor_name} does not contain the requested level {level}"
    elif topology is not None and not tas_only:
        # Not requested and not implied (the queue has a plain flavor too).
        return f"flavor {flavor_name} supports only TopologyAwareScheduling"
    # Implied (every flavor of the queue is topology-aware) or plain on plain: a match.
    for taint in flavor.get("nodeTaints", []):
        if not _tolerated(taint, [*ps.spec.get("tolerations", []), *flavor["tolerations"]]):
            return f"untolerated taint {taint['key']} in flavor {flavor_name}"
    allowed = {
        k
        for f in (line["name"] for line in group["flavors"])
        for k in cluster.flavors.get(f, {}).get("nodeLabels", {})
    }
    labels = flavor.get("nodeLabels", {})
    for key, value in ps.spec.get("nodeSelector", {}).items():
        if key in allowed and labels.get(key) != value:
            return f"flavor {flavor_name} doesn't match node affinity ({key}={value})"
    for resource, value in requests.items():
        if resource not in group["coveredResources"]:
            return f"resource {resource} unavailable in ClusterQueue"
        quota = _cohort_quota(cluster, cq["cohortName"], flavor_name, resource)
        if value * ps.count > quota:
            return f"insufficient quota for {resource} in flavor {flavor_name}"
    if uses_tas:
        assert topology is not None
        levels = cluster.topologies[topology]
        tolerations = [*ps.spec.get("tolerations", []), *flavor["tolerations"]]
        pools = [
            p
            for p in _schedulable_pools(
                cluster, {**ps.spec.get("nodeSelector", {})}, tolerations, ps
            )
            if all(lv in p.labels for lv in levels)
            and all(p.labels.get(k) == v for k, v in labels.items())
        ]
        if sum(p.count for p in pools) < ps.count:
            return f"topology-aware placement finds no room on flavor {flavor_name}'s nodes"
    return None


def admission(cluster: Cluster, ps: PodSet) -> tuple[list[str], list[str]]:
    """(flavors Kueue may admit ``ps`` on, why each other flavor refuses it)."""
    cq_name = cluster.local_queues.get((ps.namespace, ps.queue))
    assert cq_name, f"{ps.what}: no LocalQueue {ps.queue} in {ps.namespace}"
    cq = cluster.cluster_queues[cq_name]
    assert cq["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"] == ps.namespace
    admitted, refused = [], []
    for group in cq["resourceGroups"]:
        for line in group["flavors"]:
            why = flavor_verdict(cluster, cq, group, line["name"], ps)
            if why is None:
                admitted.append(line["name"])
            else:
                refused.append(why)
    return admitted, refused


EKS_PROFILES = [
    name
    for name in PROFILE_NAMES
    if (ROOT / "config" / f"{name}.toml").read_text().count('orchestrator = "hyperpod-slurm"') == 0
]


@pytest.mark.parametrize(
    "profile", [pytest.param(n, marks=pytest.mark.xdist_group(n)) for n in EKS_PROFILES]
)
def test_every_rendered_pod_set_is_admitted_and_placed(profile: str) -> None:
    cluster = read_cluster(profile)
    failures = []
    for ps in cluster.pod_sets:
        admitted, refused = admission(cluster, ps)
        if not admitted:
            failures.append(f"{ps.namespace}/{ps.what}: never admitted: {'; '.join(refused)}")
        for flavor_name in admitted:
            flavor = cluster.flavors[flavor_name]
            selector = {**ps.spec.get("nodeSelector", {}), **flavor.get("nodeLabels", {})}
            tolerations = [*ps.spec.get("tolerations", []), *flavor["tolerations"]]
            if not _schedulable_pools(cluster, selector, tolerations, ps):
                failures.append(
                    f"{ps.namespace}/{ps.what}: admitted on {flavor_name}, then Pending "
                    f"(no node matches {selector})"
                )
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize(
    "profile", [pytest.param(n, marks=pytest.mark.xdist_group(n)) for n in EKS_PROFILES]
)
def test_jobs_outside_kueue_have_nodes_to_run_on(profile: str) -> None:
    """The DCGM diagnostic bypasses Kueue: its own nodeSelector, tolerations and requests must
    still match a node group of its workload, or it stays Pending."""
    cluster = read_cluster(profile)
    if not cluster.unqueued:
        pytest.skip(f"{profile} has no NVIDIA training workload on EKS, so no DCGM job")
    for ps in cluster.unqueued:
        spec = ps.spec
        pools = _schedulable_pools(
            cluster, spec.get("nodeSelector", {}), spec.get("tolerations", []), ps
        )
        assert pools, f"{ps.namespace}/{ps.what}: no node matches {spec.get('nodeSelector')}"


@pytest.mark.parametrize(
    "profile", [pytest.param(n, marks=pytest.mark.xdist_group(n)) for n in EKS_PROFILES]
)
def test_no_cluster_queue_mixes_topology_aware_and_plain_flavors(profile: str) -> None:
    cluster = read_cluster(profile)
    for name, cq in cluster.cluster_queues.items():
        kinds = {
            cluster.flavors[line["name"]].get("topologyName") is not None
            for group in cq["resourceGroups"]
            for line in group["flavors"]
        }
        # All topology-aware: Kueue then places every pod set by topology, annotated or not.
        assert kinds == {True}, f"ClusterQueue {name} has a flavor without a topology"
