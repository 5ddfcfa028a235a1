"""Every address the largest possible deployment of a profile takes from the GPU zone's
subnets, as the profile asks for it: this module turns the profile into one
:class:`~fm_constructs.planning.subnet_demand.SubnetRequest` (node groups at their maximum
size, the interface endpoints, the EKS control plane and system nodes, FSx, load balancers
and scrapers), lets :func:`~fm_constructs.planning.subnet_demand.plan_subnets` do the
arithmetic (:func:`subnet_plan`), and hands the plan to the rules of
:mod:`fm_constructs.rules.subnets` (re-exported here), which read it as findings under profile
keys, the numbers and the fixes (:func:`subnet_demand`).

The profile loader refuses a profile whose demand does not fit (under ``platform.vpc_cidr``),
and ``fmc plan`` prints it, so both read these functions. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from fm_constructs.catalog import get_instance_type
from fm_constructs.config.model import (
    SHARED_CLUSTER,
    InferenceConfig,
    LoadBalancer,
    Orchestrator,
    Profile,
    WorkloadConfig,
)
from fm_constructs.config.sizing import workload_fsx_sizing_request
from fm_constructs.domain.kinds import HYPERPOD
from fm_constructs.planning import subnet_demand as planning
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.pod_networking import (
    DEFAULT_ACCELERATED_MAX_PODS,
    PodNetworking,
)
from fm_constructs.planning.subnet_demand import (
    EKS_CONTROL_PLANE_ADDRESSES,
    EKS_SYSTEM_NODE_ADDRESSES,
    FSX_FIXED_ADDRESSES,
    FSX_UNIT_GIB,
    NLB_ADDRESSES,
    SCRAPER_ADDRESSES,
    FileSystemRequest,
    FixedRequest,
    NodeGroupDemand,
    NodeGroupPart,
    NodeGroupRequest,
    NodeSubnetDemand,
    PodSubnetDemand,
    SubnetRequest,
    file_system_capacity_gib,
    fsx_addresses,
    private_subnet_required,
    private_subnet_usable,
)
from fm_constructs.planning.vpc_layout import PRIVATE_CLUSTER_ENDPOINT_NAMES
from fm_constructs.rules.subnets import SubnetDemand as SubnetDemand
from fm_constructs.rules.subnets import demand_problems as demand_problems
from fm_constructs.rules.subnets import planned_demand
from fm_constructs.rules.subnets import (
    pod_subnet_shortfall_finding as pod_subnet_shortfall_finding,
)
from fm_constructs.rules.subnets import shortfall_finding as shortfall_finding

__all__ = [
    "EKS_CONTROL_PLANE_ADDRESSES",
    "EKS_SYSTEM_NODE_ADDRESSES",
    "FSX_FIXED_ADDRESSES",
    "FSX_UNIT_GIB",
    "HYPERPOD",
    "NLB_ADDRESSES",
    "SCRAPER_ADDRESSES",
    "NodeGroupDemand",
    "NodeGroupPart",
    "NodeSubnetDemand",
    "PodSubnetDemand",
    "SubnetDemand",
    "accelerated_max_pods",
    "demand_problems",
    "file_system_request",
    "fsx_addresses",
    "fsx_capacity_gib",
    "largest_node_count",
    "pod_subnet_shortfall_finding",
    "private_subnet_required",
    "private_subnet_usable",
    "requested_layout",
    "shortfall_finding",
    "subnet_demand",
    "subnet_plan",
    "subnet_request",
]


def requested_layout(
    workload: WorkloadConfig, instance_type: str | None = None
) -> EfaLayout | None:
    """The interface layout a workload's nodes really get.

    EKS node groups use the profile's ``efa_layout`` in their launch template. HyperPod
    instance groups request ``NetworkInterface.InterfaceType`` from it too: ``efa-only`` where
    every EFA card of the type accepts it, else ``efa`` (one address per EFA interface),
    counted here as the legacy layout.
    """
    spec = get_instance_type(instance_type or workload.instance_type)
    if not spec.efa_supported:
        return None  # a type without EFA (inference within one node): no EFA interfaces
    layout = EfaLayout(workload.efa_layout)
    if workload.orchestrator in HYPERPOD and not spec.efa_only_supported:
        return EfaLayout.LEGACY
    return layout


def largest_node_count(workload: WorkloadConfig) -> int:
    """The most nodes the workload's group can reach (autoscaling maximum included)."""
    return workload.largest_size


def accelerated_max_pods(workload: WorkloadConfig) -> int:
    """kubelet maxPods of the workload's accelerated nodes under custom networking."""
    return workload.max_pods_per_node or DEFAULT_ACCELERATED_MAX_PODS


def file_system_request(workload: WorkloadConfig) -> FileSystemRequest | None:
    """The workload's own file system (None: it has none or reuses one)."""
    storage = workload.storage
    if not storage.enabled or workload.reuses_pretraining_storage:
        return None
    return FileSystemRequest(
        workload.name, workload_fsx_sizing_request(workload), storage.storage_capacity_gib
    )


def fsx_capacity_gib(workload: WorkloadConfig) -> int | None:
    """Capacity of the workload's own file system (None: it has none or reuses one)."""
    request = file_system_request(workload)
    return None if request is None else file_system_capacity_gib(request)


def _node_group(
    name: str, workload: WorkloadConfig, instance_type: str, nodes: int
) -> NodeGroupRequest:
    return NodeGroupRequest(
        name=name,
        workload=workload.name,
        orchestrator=workload.orchestrator,
        instance_type=instance_type,
        layout=requested_layout(workload, instance_type),
        nodes=nodes,
        vpc_cni=not workload.orchestrator.is_slurm,
        managed=workload.orchestrator is Orchestrator.EKS,
        max_pods_per_node=workload.max_pods_per_node,
    )


def subnet_request(profile: Profile, *, pods_per_node: int | None = None) -> SubnetRequest:
    """The planning input of ``profile``: every node group at its largest (rollout groups
    too) and everything else the GPU zone's private subnet holds."""
    groups: list[NodeGroupRequest] = []
    fixed: list[FixedRequest] = []
    platform = profile.platform
    if platform.interface_endpoints and profile.enabled_workloads:
        fixed.append(("interface endpoints", len(PRIVATE_CLUSTER_ENDPOINT_NAMES)))
    for w in profile.enabled_workloads:
        groups.append(_node_group(w.name, w, w.instance_type, largest_node_count(w)))
        rollout = w.rollout_group
        if rollout is not None:
            groups.append(
                _node_group(f"{w.name}.rollout", w, rollout.instance_type, rollout.instance_count)
            )
        file_system = file_system_request(w)
        if file_system is not None:
            fixed.append(file_system)
        if isinstance(w, InferenceConfig) and w.load_balancer is not LoadBalancer.NONE:
            fixed.append(("inference: network load balancer", NLB_ADDRESSES))
    # One control plane, system node group and scraper per EKS cluster the stacks build: the
    # shared cluster, plus each workload's dedicated one.
    clusters = dict.fromkeys(w.eks_cluster for w in profile.enabled_workloads if w.eks_cluster)
    for cluster in clusters:
        label = "shared EKS cluster" if cluster == SHARED_CLUSTER else f"{cluster}: EKS cluster"
        fixed.append((f"{label} control plane", EKS_CONTROL_PLANE_ADDRESSES))
        fixed.append((f"{label} system nodes", EKS_SYSTEM_NODE_ADDRESSES))
        if platform.observability:
            fixed.append((f"{label} Prometheus scraper", SCRAPER_ADDRESSES))
    return SubnetRequest(
        availability_zone=platform.availability_zone,
        vpc_cidr=platform.vpc_cidr,
        pod_cidr=platform.pod_cidr,
        node_groups=tuple(groups),
        fixed=tuple(fixed),
        pods_per_node=pods_per_node,
    )


def subnet_plan(
    profile: Profile,
    *,
    pods_per_node: int | None = None,
    networking: PodNetworking | None = None,
) -> planning.SubnetDemand:
    """The addresses the largest deployment of ``profile`` needs in the GPU zone's subnet
    (and its pod subnet under custom networking): the plan alone, without findings.

    ``pods_per_node``: pods per Kubernetes node that need an address, when the user knows it
    (default: the workload's ``max_pods_per_node``, else as many as kubelet admits and the VPC
    CNI can address). ``networking``: evaluate this pod networking instead of the profile's
    (``auto`` resolved: the node subnet when it fits, else custom networking).
    """
    request = subnet_request(profile, pods_per_node=pods_per_node)
    return planning.plan_subnets(request, networking or profile.platform.pod_networking)


def subnet_demand(
    profile: Profile,
    *,
    pods_per_node: int | None = None,
    networking: PodNetworking | None = None,
) -> SubnetDemand:
    """:func:`subnet_plan` with the findings of its pod networking under profile keys
    (:func:`fm_constructs.rules.subnets.planned_demand`)."""
    plan = subnet_plan(profile, pods_per_node=pods_per_node, networking=networking)
    return planned_demand(profile, plan)
