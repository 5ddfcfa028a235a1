"""What one workload owns on a GPU EKS cluster that it may share with others.

Node groups, a namespace, a service account with its own EKS Pod Identity role (read and
write on the workload's prefixes of the data bucket, nothing else), the FSx for Lustre claim in
its namespace, and its Kueue queues. Everything here lives in the workload's own scope (its
stack), refers to the cluster and never the other way round, so workloads on one cluster deploy
side by side and a node group that cannot get capacity fails only the stack that holds it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import cast

import jsii
from aws_cdk import Annotations, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs import kubernetes as k8s
from fm_constructs.catalog import get_instance_type
from fm_constructs.compute import CapacityKind, CapacitySource
from fm_constructs.domain import names
from fm_constructs.domain.defaults import ROOT_VOLUME_SIZE_GIB
from fm_constructs.domain.topology import flavor_topology
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.kubernetes.node_shape import INSTANCE_TYPE_LABEL, WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import training_pod_budget, training_runtimes
from fm_constructs.network import EfaSecurityGroup
from fm_constructs.orchestration import EfaNodeGroup
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_autoscaler import ClusterAutoscaler
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.eks_charts import ClusterAutoscalerSettings
from fm_constructs.orchestration.kueue_flavors import KueueFlavors
from fm_constructs.orchestration.network_isolation import network_policies_manifest
from fm_constructs.orchestration.pod_identity import associate_pod_identity, pod_identity_role
from fm_constructs.planning.aws_limits import node_groups_for, split_sizes
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.kueue_quota import capacity_quota
from fm_constructs.policy.nag_findings import acknowledge_generated_iam
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import eks_workload as eks_workload_rules
from fm_constructs.storage import IDataBucket
from fm_constructs.storage.lustre_interface import ILustreFileSystem


@dataclass(frozen=True)
class NodePool:
    """One accelerated node group of a workload.

    ``name`` is the pool's short name (``gpu``, ``rollout``); the group's nodes carry the
    label ``fm-constructs/node-pool=<namespace>-<name>``, which is also the name of its Kueue
    ResourceFlavor. ``min_node_count``/``max_node_count`` default to ``node_count`` (fixed
    size); a pool that can grow gets the Cluster Autoscaler. ``labels`` and ``taints`` come on
    top of the accelerator label and taint. ``launch_template_version`` pins the version of
    the pool's launch templates its nodes run (None: the newest; see :class:`EfaNodeGroup`).
    """

    name: str
    instance_type: str
    node_count: int
    min_node_count: int | None = None
    max_node_count: int | None = None
    capacity: CapacitySource | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Mapping[str, str] = field(default_factory=dict)
    launch_template_version: int | None = None

    @property
    def bounds(self) -> tuple[int, int]:
        low = self.node_count if self.min_node_count is None else self.min_node_count
        high = self.node_count if self.max_node_count is None else self.max_node_count
        return low, high

    @property
    def autoscaled(self) -> bool:
        low, high = self.bounds
        return high > low


#: Node label the Cluster Autoscaler's AWS provider reads to know a node will offer GPUs: until
#: the device plugin advertises them, such a node counts as not ready instead of as a node
#: without GPUs (which would trigger another scale-up for the same Pending pods).
GPU_TYPE_LABEL = "k8s.amazonaws.com/accelerator"


def gpu_type_label(instance_type: str) -> dict[str, str]:
    """``{GPU_TYPE_LABEL: "nvidia-h100"}`` for an NVIDIA type of the catalog, ``{}`` for other
    or unknown types (the node group reports unknown types itself)."""
    try:
        spec = get_instance_type(instance_type)
    except FmValidationError:
        return {}
    if spec.eks_ami_family != "NVIDIA":
        return {}
    name = re.sub(r"[^a-z0-9]+", "-", spec.accelerator_name.lower()).strip("-")
    return {GPU_TYPE_LABEL: f"nvidia-{name}"[:63].rstrip("-")}


#: Short name of the HyperPod node pool (its ResourceFlavor is ``<namespace>-hyperpod``).
HYPERPOD_POOL = "hyperpod"


@dataclass(frozen=True)
class HyperPodNodes:
    """The SageMaker HyperPod nodes a workload runs on when HyperPod, not EKS node groups,
    creates them: ``node_count`` nodes of ``instance_type`` (the EC2 name; nodes carry the
    ``ml.`` name as their instance-type label, which their ResourceFlavor selects), reachable
    through ``peer`` (the HyperPod cluster's security groups)."""

    instance_type: str
    node_count: int
    peer: ec2.IConnectable


def pool_quota(pool: NodePool) -> dict[str, int | str]:
    """Kueue nominal quota of ``pool`` at its largest size."""
    return capacity_quota(pool.instance_type, pool.bounds[1])


def _construct_id(pool: str) -> str:
    return (
        "GpuNodes" if pool == "gpu" else "".join(p.capitalize() for p in pool.split("-")) + "Nodes"
    )


@jsii.implements(ec2.IConnectable)
class EksWorkload(Construct):
    """One workload's share of ``cluster``, in one statement.

    - ``name``: the workload (``pretraining``, ``post_training``, ``inference`` or your own);
      it names the namespace, service account, queues and claim
      (:mod:`fm_constructs.domain.names`).
    - ``node_pools``: the workload's EFA node groups in ``subnet``; one ResourceFlavor each.
      A pool larger than the EKS quota of nodes per managed node group (450) becomes several
      node groups with the same labels, taints and flavor.
    - A pool's ``capacity`` may list one reservation per managed node group
      (:meth:`~fm_constructs.compute.CapacitySource.odcr_node_groups`): group ``i`` targets
      entry ``i``, in its placement group when the entry has one.
    - ``node_group_subnets``: pool name -> the subnet of each of its managed node groups
      (one per group, in split order), for pools that outgrow ``subnet``: the GPU zone's
      extra node subnets (:class:`~fm_constructs.network.GpuClusterVpc` ``node_subnets``).
    - ``max_pods_per_node``: kubelet maxPods of every pool's nodes (the VPC CNI's figure when
      absent; the profile sets it under custom networking).
    - ``data_bucket`` with ``data_prefixes`` and ``read_prefixes`` (each ending in ``/``): the
      service account's role may read, write and delete objects under ``data_prefixes`` (the
      workload's own outputs), only read those under ``read_prefixes`` (its inputs: datasets,
      another workload's checkpoints, served models), and list both, nothing else.
    - ``file_system``: mounted through the claim ``fsx-lustre`` in the workload namespace and
      reachable from the workload's nodes only. An EFA-enabled one gets LNet over EFA on the
      nodes before kubelet starts (:meth:`EfaNodeGroup.use_lnet_over_efa`), within one
      ``file_system_efa_clients``-th of its EFA connections each (every EFA node mounting it;
      never fewer than the workload's own EFA nodes, which count alone when it is not given).
    - ``session_manager``: Session Manager shells on the workload's GPU nodes (off: no
      Systems Manager permission on their role at all).
    - ``lend_quota``: whether the workload's idle capacity may be borrowed by the other queues
      of the cohort (serving capacity usually is not: model servers are not queued).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.EKS_WORKLOAD

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IGpuCluster,
        name: str,
        subnet: ec2.ISubnet | None = None,
        node_pools: Sequence[NodePool] = (),
        data_bucket: IDataBucket | None = None,
        data_prefixes: Sequence[str] = (),
        read_prefixes: Sequence[str] = (),
        file_system: ILustreFileSystem | None = None,
        efa_layout: EfaLayout | None = EfaLayout.EFA_ONLY,
        root_volume_size_gib: int = ROOT_VOLUME_SIZE_GIB,
        session_manager: bool = False,
        lend_quota: bool = True,
        autoscaler_settings: ClusterAutoscalerSettings | None = None,
        training: bool = False,
        max_pods_per_node: int | None = None,
        node_group_subnets: Mapping[str, Sequence[ec2.ISubnet]] | None = None,
        hyperpod_nodes: HyperPodNodes | None = None,
        file_system_efa_clients: int | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        self.file_system_efa_clients = file_system_efa_clients
        subnets_of = dict(node_group_subnets or {})
        problems.adopt(
            eks_workload_rules.eks_workload(
                name=name,
                hyperpod_instance_type=None
                if hyperpod_nodes is None
                else hyperpod_nodes.instance_type,
                pools=[
                    eks_workload_rules.PoolGroups(
                        pool.name,
                        pool.bounds[1],
                        len(pool.capacity.node_groups) if pool.capacity is not None else 0,
                    )
                    for pool in node_pools
                ],
                subnet_given=subnet is not None,
                data_prefixes=data_prefixes,
                read_prefixes=read_prefixes,
                data_bucket_given=data_bucket is not None,
                node_group_subnets={key: len(value) for key, value in subnets_of.items()},
            )
        )
        problems.raise_if_any()
        namespace = names.workload_namespace(name)
        self.cluster = cluster
        self.name = name
        self.namespace = namespace
        self.service_account = names.service_account_name(name)
        self.cluster_queue_name = names.cluster_queue_name(name)
        self.local_queue_name = names.local_queue_name(name)
        self.fsx_claim = names.fsx_claim_name(name)

        self.hyperpod_nodes = hyperpod_nodes
        #: The EKS node groups' EFA group (None on HyperPod nodes, which have their own).
        self.efa_security_group: EfaSecurityGroup | None = None
        if node_pools:
            self.efa_security_group = EfaSecurityGroup(
                self,
                "EfaSecurityGroup",
                vpc=cluster.vpc,
                description=f"EFA traffic between the {namespace} nodes",
            )
        self.max_pods_per_node = max_pods_per_node
        self.session_manager = session_manager
        #: The first node group of every pool; :attr:`node_group_parts` holds them all.
        self.node_groups: dict[str, EfaNodeGroup] = {}
        self.node_group_parts: dict[str, list[EfaNodeGroup]] = {}
        for pool in node_pools:
            parts = self._node_group_parts(
                pool,
                subnets_of.get(pool.name) or [cast(ec2.ISubnet, subnet)],
                efa_layout,
                root_volume_size_gib,
            )
            self.node_groups[pool.name] = parts[0]
            self.node_group_parts[pool.name] = parts
        self.autoscaler: ClusterAutoscaler | None = None
        if any(p.autoscaled for p in node_pools):
            self.autoscaler = ClusterAutoscaler.enable(cluster, autoscaler_settings)
            self._warn_reserved_autoscaling(node_pools)

        # -- namespace and identity -----------------------------------------------------------
        kueue = charts.KUEUE.release in cluster.charts
        self.namespace_manifest = eks.KubernetesManifest(
            self,
            "Namespace",
            cluster=cluster.icluster,
            manifest=k8s.namespace_objects(name, kueue_managed=kueue),
        )
        self.network_policies = network_policies_manifest(
            self, cluster, name, self.namespace_manifest
        )
        #: The Pod Identity role of the service account (EKS node groups only).
        self.role: iam.IRole | None = None
        if node_pools:
            self.role = self._identity(data_bucket, data_prefixes, read_prefixes)

        # -- file system ----------------------------------------------------------------------
        self.file_system: ILustreFileSystem | None = None
        self.volume: eks.KubernetesManifest | None = None
        if file_system is not None:
            self.mount_file_system(file_system)

        # -- Kueue ----------------------------------------------------------------------------
        self.queues: eks.KubernetesManifest | None = None
        if kueue:
            self._queues(self._flavors(node_pools), lend_quota)
            if training:
                self._warn_queued_autoscaling(node_pools)

        # -- training runtimes ----------------------------------------------------------------
        self.training_target: WorkloadTarget | None = None
        self.training_runtimes: eks.KubernetesManifest | None = None
        if training:
            self._training_runtimes(
                WorkloadTarget(name, hyperpod_nodes.instance_type, hyperpod=True)
                if hyperpod_nodes is not None
                else WorkloadTarget(name, node_pools[0].instance_type)
            )

    # ----------------------------------------------------------------------------- interface

    @property
    def connections(self) -> ec2.Connections:
        """The workload nodes' EFA security group (on every node interface), or the HyperPod
        nodes' groups."""
        if self.efa_security_group is None:
            assert self.hyperpod_nodes is not None
            return self.hyperpod_nodes.peer.connections
        return self.efa_security_group.connections

    @property
    def node_roles(self) -> list[iam.IRole]:
        """The node groups' roles (none on HyperPod nodes: their cluster has its role)."""
        return [group.role for parts in self.node_group_parts.values() for group in parts]

    @property
    def queue_names(self) -> tuple[str, ...]:
        """The LocalQueue jobs name (``kueue.x-k8s.io/queue-name``) when the cluster runs
        Kueue."""
        return (self.local_queue_name,) if self.queues is not None else ()

    @property
    def all_node_groups(self) -> list[EfaNodeGroup]:
        """Every managed node group of every pool (large pools have several)."""
        return [group for parts in self.node_group_parts.values() for group in parts]

    @property
    def main_nodes(self) -> EfaNodeGroup:
        """The first node pool (``gpu``)."""
        return next(iter(self.node_groups.values()))

    def mount_file_system(self, file_system: ILustreFileSystem) -> eks.KubernetesManifest:
        """Claim ``fsx-lustre`` in the workload namespace, bound to ``file_system``, and the
        Lustre ports opened from this workload's nodes only."""
        if self.volume is not None:
            raise FmValidationError(
                [f"file_system: {self.namespace} already mounts a file system"],
                context=f"EksWorkload({self.name})",
                code=codes.EKS_WORKLOAD,
            )
        self.file_system = file_system
        self.volume = self.cluster.add_lustre_volume(
            file_system,
            name=self.fsx_claim,
            namespace=self.namespace,
            scope=self,
            volume_name=f"{self.namespace}-{self.fsx_claim}",
            create_namespace=False,
        )
        self.volume.node.add_dependency(self.namespace_manifest)
        if file_system.efa_enabled:  # LNet over EFA on the nodes, before kubelet starts
            sizes = [
                g.max_node_count
                for g in self.all_node_groups
                if g.efa_layout is not None and g.instance_spec.lustre_efa_client
            ]
            own = None if any(Token.is_unresolved(n) for n in sizes) else sum(sizes)
            # Never fewer clients than the workload's own EFA nodes (as HyperPod counts).
            clients = max(self.file_system_efa_clients or 0, own or 0)
            for group in self.all_node_groups:
                group.use_lnet_over_efa(clients or None)
        if self.efa_security_group is not None:  # HyperPod opens the ports from its nodes
            file_system.connections.allow_default_port_from(
                ec2.Connections(security_groups=[self.efa_security_group.security_group])
            )
        return self.volume

    # ----------------------------------------------------------------------------- internals

    def _warn_reserved_autoscaling(self, node_pools: Sequence[NodePool]) -> None:
        """A pool that scales on a reservation saves nothing when it shrinks."""
        for pool in node_pools:
            kind = self.node_groups[pool.name].capacity.kind
            if pool.autoscaled and kind in (CapacityKind.CAPACITY_BLOCK, CapacityKind.ODCR):
                low, high = pool.bounds
                Annotations.of(self).add_warning_v2(
                    "fm:autoscaler-reserved-capacity",
                    f"The {pool.name} node group runs on a {kind.value} reservation, billed "
                    f"whether nodes run or not, yet scales between {low} and {high} nodes: the "
                    "Cluster Autoscaler removes idle nodes down to min_node_count without "
                    "saving anything. Set min_node_count = max_node_count to keep the "
                    "reservation filled.",
                )

    def _warn_queued_autoscaling(self, node_pools: Sequence[NodePool]) -> None:
        """A pool that scales up only for pods that exist, under jobs that Kueue admits only
        onto nodes that exist."""
        for pool in node_pools:
            if pool.autoscaled:
                low, high = pool.bounds
                Annotations.of(self).add_warning_v2(
                    "fm:kueue-autoscaled-pool",
                    f"The {pool.name} node pool of {self.namespace} scales between {low} and "
                    f"{high} nodes, but Kueue {charts.KUEUE.version} admits its queued jobs by "
                    "topology-aware scheduling onto nodes that already exist (every flavor "
                    "names a topology), and supports the Cluster Autoscaler there only through "
                    "a ProvisioningRequest admission check, which is not configured: a queued "
                    "job larger than the running nodes stays unadmitted, creates no pod, and "
                    "the pool never grows for it. Give the pool a fixed size (min_node_count "
                    "= max_node_count) for queued jobs; pods outside Kueue still scale it.",
                )

    def _node_group_parts(
        self,
        pool: NodePool,
        subnets: Sequence[ec2.ISubnet],
        efa_layout: EfaLayout | None,
        root_gib: int,
    ) -> list[EfaNodeGroup]:
        """The pool's managed node groups: one, or as many as the EKS quota of nodes per
        managed node group asks for (``GpuNodes``, ``GpuNodes2``, ...), sharing the pool's
        sizes evenly, its labels and its ResourceFlavor. Group ``i`` goes to ``subnets[i]``
        (one subnet for all when only one is given)."""
        low, high = pool.bounds
        if Token.is_unresolved(high) or Token.is_unresolved(low):
            return [self._node_group(pool, subnets[0], efa_layout, root_gib, None, "")]
        parts = node_groups_for(high)
        if parts == 1:
            return [self._node_group(pool, subnets[0], efa_layout, root_gib, None, "", 0)]
        sizes = split_sizes(pool.node_count, low, high, parts)
        return [
            self._node_group(
                pool,
                subnets[i] if len(subnets) > 1 else subnets[0],
                efa_layout,
                root_gib,
                size,
                "" if i == 0 else str(i + 1),
                i,
            )
            for i, size in enumerate(sizes)
        ]

    def _node_group(
        self,
        pool: NodePool,
        subnet: ec2.ISubnet,
        efa_layout: EfaLayout | None,
        root_gib: int,
        sizes: tuple[int, int, int] | None,
        suffix: str,
        index: int = 0,
    ) -> EfaNodeGroup:
        """Managed node group ``index`` of ``pool`` (its own reservation when the pool's
        capacity lists one per node group)."""
        low, high = pool.bounds
        desired, min_size, max_size = (
            (pool.node_count, pool.min_node_count, pool.max_node_count) if sizes is None else sizes
        )
        labels = dict(pool.labels)
        if pool.autoscaled:
            labels.update(gpu_type_label(pool.instance_type))
        return EfaNodeGroup(
            self,
            _construct_id(pool.name) + suffix,
            cluster=self.cluster,
            instance_type=pool.instance_type,
            subnet=subnet,
            node_count=desired,
            min_node_count=min_size,
            max_node_count=max_size,
            max_pods=self.max_pods_per_node,
            capacity=pool.capacity.for_node_group(index) if pool.capacity else None,
            efa_security_group=self.efa_security_group,
            efa_layout=efa_layout,
            root_volume_size_gib=root_gib,
            session_manager=self.session_manager,
            labels=labels or None,
            taints=dict(pool.taints) or None,
            node_pool=names.resource_flavor_name(self.name, pool.name),
            launch_template_version=pool.launch_template_version,
            # A group that grows later must not be pinned to a cluster placement group.
            create_placement_group=False if high > low else None,
        )

    def _training_runtimes(self, target: WorkloadTarget) -> None:
        """The EFA-aware Kubeflow Trainer runtimes of ``target`` (the main pool or the
        HyperPod nodes), in the workload namespace (NVIDIA nodes; Neuron jobs use the AWS
        Neuron images instead)."""
        trainer = self.cluster.charts.get(charts.KUBEFLOW_TRAINER.release)
        if trainer is None or target.spec.eks_ami_family != "NVIDIA":
            return
        self.training_target = target
        self.training_runtimes = eks.KubernetesManifest(
            self,
            "TrainingRuntimes",
            cluster=self.cluster.icluster,
            manifest=[*training_runtimes(target), training_pod_budget(target)],
            overwrite=True,
        )
        self.training_runtimes.node.add_dependency(self.namespace_manifest)
        self.training_runtimes.node.add_dependency(trainer)

    def _identity(
        self, data_bucket: IDataBucket | None, writes: Sequence[str], reads: Sequence[str]
    ) -> iam.IRole:
        """The service account's Pod Identity role, with the data bucket's prefixes."""
        grants = data_bucket is not None and bool(writes or reads)
        role = pod_identity_role(
            self,
            "Role",
            description=f"Pods of the {self.namespace} workload (EKS Pod Identity)",
            # Inside the bucket's data perimeter when it reads or writes the bucket.
            path=data_bucket.role_path if data_bucket is not None and grants else None,
        )
        if data_bucket is not None and grants:
            self._grant_prefixes(role, data_bucket, writes, reads)
        self.pod_identity = associate_pod_identity(
            self,
            "PodIdentity",
            cluster_name=self.cluster.cluster_name,
            namespace=self.namespace,
            service_account=self.service_account,
            role=role,
        )
        return role

    def _grant_prefixes(
        self, role: iam.IRole, data_bucket: IDataBucket, writes: Sequence[str], reads: Sequence[str]
    ) -> None:
        """Read-write on the workload's outputs, read-only on its inputs, list both."""
        bucket = data_bucket.bucket
        if reads:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ReadInputs",
                    actions=["s3:GetObject"],
                    resources=[bucket.arn_for_objects(f"{prefix}*") for prefix in reads],
                )
            )
        if writes:
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    sid="ReadWriteOutputs",
                    actions=[
                        "s3:GetObject",
                        "s3:PutObject",
                        "s3:DeleteObject",
                        "s3:AbortMultipartUpload",
                    ],
                    resources=[bucket.arn_for_objects(f"{prefix}*") for prefix in writes],
                )
            )
        prefixes = [*reads, *writes]
        listed = [p for prefix in prefixes for p in (prefix, f"{prefix}*")]
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": listed}},
            )
        )
        if data_bucket.key is not None:
            # SSE-KMS: decrypt to read objects, a data key only to write them.
            role.add_to_principal_policy(
                iam.PolicyStatement(
                    actions=["kms:Decrypt", "kms:GenerateDataKey"] if writes else ["kms:Decrypt"],
                    resources=[data_bucket.key.key_arn],
                )
            )
        acknowledge_generated_iam(
            role,
            managed_reason="The workload role uses no AWS-managed policy.",
            wildcard_reason="Object access is limited to the workload's key prefixes of the "
            f"data bucket (reads {', '.join(reads) or 'none'}; writes "
            f"{', '.join(writes) or 'none'}); the key grant allows the data bucket's key only.",
        )

    def _flavors(
        self, node_pools: Sequence[NodePool]
    ) -> list[tuple[k8s.Flavor, Mapping[str, int | str]]]:
        """Each pool's ResourceFlavor (its node-pool label) with its quota, or the HyperPod
        nodes' (their ``ml.`` instance-type label; the host alone as topology: every flavor of
        the cohort names one, see domain.topology.HOST_TOPOLOGY)."""
        if self.hyperpod_nodes is not None:
            target = WorkloadTarget(self.name, self.hyperpod_nodes.instance_type, hyperpod=True)
            flavor = k8s.Flavor(
                name=names.resource_flavor_name(self.name, HYPERPOD_POOL),
                node_labels=((INSTANCE_TYPE_LABEL, target.node_type_label),),
                taints=(),
                topology_name=flavor_topology(target.spec, network_layers=False),
            )
            nodes = self.hyperpod_nodes
            return [(flavor, capacity_quota(nodes.instance_type, nodes.node_count))]
        flavors: list[tuple[k8s.Flavor, Mapping[str, int | str]]] = []
        for pool, group in zip(node_pools, self.node_groups.values(), strict=True):
            flavor_name = names.resource_flavor_name(self.name, pool.name)
            flavors.append(
                (
                    k8s.Flavor(
                        name=flavor_name,
                        node_labels=((names.NODE_POOL_LABEL, flavor_name),),
                        taints=group.taints,
                        topology_name=flavor_topology(group.instance_spec),
                    ),
                    pool_quota(pool),
                )
            )
        return flavors

    def _queues(
        self, flavors: Sequence[tuple[k8s.Flavor, Mapping[str, int | str]]], lend_quota: bool
    ) -> None:
        registry = KueueFlavors.enable(self.cluster)
        for flavor, quota in flavors:
            registry.add(flavor, owner=self.name, quota=quota, lendable=lend_quota)
        self.queues = eks.KubernetesManifest(
            self,
            "Queues",
            cluster=self.cluster.icluster,
            manifest=[
                registry.cluster_queue(
                    self.cluster_queue_name, owner=self.name, namespace=self.namespace
                ),
                k8s.local_queue(
                    self.local_queue_name,
                    namespace=self.namespace,
                    cluster_queue_name=self.cluster_queue_name,
                ),
            ],
        )
        self.queues.node.add_dependency(self.namespace_manifest)
        self.queues.node.add_dependency(self.cluster.charts[charts.KUEUE.release])
