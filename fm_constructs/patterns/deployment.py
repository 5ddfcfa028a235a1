"""The deployment pattern: a profile's platform, clusters and workloads, built from its options.

:class:`Deployment` takes the :class:`~fm_constructs.config.options.DeploymentOptions` of a
profile (the one mapping from profile to options) and builds each part into the scope its
caller gives, under the construct ids the parts have always had, so a part lands in a stack of
the caller's choosing and adds no construct level: the stacks of ``stacks/`` create the stacks
and call one ``build_*`` method each. What runs where is decided by the workload's
orchestrator: EKS workloads get the workload pattern of their kind on their cluster, HyperPod
(Slurm or EKS) workloads a :class:`HyperPodAcceleratedWorkload`, AWS PCS workloads a
:class:`PcsAcceleratedWorkload`; each owns its FSx for Lustre file system unless it mounts the
pre-training one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.compute import CapacitySource
from fm_constructs.config.options import (
    CapacityOptions,
    ClusterOptions,
    DeploymentOptions,
    WorkloadOptions,
)
from fm_constructs.domain.kinds import Orchestrator
from fm_constructs.domain.names import ROLLOUT_POOL
from fm_constructs.network.gpu_vpc import GpuClusterVpc
from fm_constructs.orchestration import DevicePlugins, GpuEksCluster, WorkloadOperators
from fm_constructs.orchestration.hyperpod import InstanceGroup
from fm_constructs.patterns.eks_monitoring import EksClusterScraping, scraper_security_group
from fm_constructs.patterns.hyperpod_workload import HyperPodAcceleratedWorkload
from fm_constructs.patterns.inference_manifests import AutoscalingPolicy, ModelServerSpec
from fm_constructs.patterns.observability import ObservabilityPlatform
from fm_constructs.patterns.pcs_workload import PcsAcceleratedWorkload
from fm_constructs.patterns.workloads import (
    InferenceWorkload,
    PostTrainingWorkload,
    PretrainingWorkload,
)
from fm_constructs.storage import (
    DataBucket,
    ILustreFileSystem,
    LustreFileSystem,
    workload_associations,
)
from fm_constructs.storage.data_perimeter import DataPerimeter
from fm_constructs.storage.teardown import VpcTeardownGuard

#: The workload pattern of each EKS workload kind.
EksWorkloadPattern = PretrainingWorkload | PostTrainingWorkload | InferenceWorkload


def capacity_source(options: CapacityOptions) -> CapacitySource:
    """The capacity source of a node group's capacity options."""
    return CapacitySource.from_config(
        options.config,
        availability_zone=options.availability_zone,
        instance_type=options.instance_type,
    )


@dataclass(frozen=True)
class Platform:
    """The shared platform :meth:`Deployment.build_platform` created."""

    network: GpuClusterVpc
    teardown_guard: VpcTeardownGuard
    data: DataBucket
    observability: ObservabilityPlatform | None

    @property
    def vpc(self) -> ec2.IVpc:
        return self.network.vpc


@dataclass(frozen=True)
class Cluster:
    """One EKS cluster :meth:`Deployment.build_cluster` created, with the security group and
    role scope of its managed scraper when observability is on."""

    options: ClusterOptions
    cluster: GpuEksCluster
    scraper_security_group: ec2.SecurityGroup | None
    scraper_role_scope: Construct | None


@dataclass(frozen=True)
class WorkloadStorage:
    """What :meth:`Deployment.build_workload` created for one workload: the file system it
    mounts (its own or the pre-training one) and its HyperPod or AWS PCS cluster."""

    file_system: LustreFileSystem | None
    owns_file_system: bool
    hyperpod: HyperPodAcceleratedWorkload | None
    pcs: PcsAcceleratedWorkload | None


class Deployment:
    """Builds one profile's deployment from its options into given scopes.

    :meth:`build` builds every part; the parts' methods build one each, in the order
    :meth:`build` calls them: :meth:`build_platform`, then :meth:`build_cluster` (and
    :meth:`build_cluster_monitoring`) per cluster, then :meth:`build_workload` and, on EKS,
    :meth:`build_workload_nodes` per workload (post-training may mount the pre-training file
    system). What each built is kept on the instance (``platform``, ``clusters``,
    ``scrapers``, ``storage``, ``nodes``).
    """

    def __init__(self, options: DeploymentOptions) -> None:
        self.options = options
        self._platform: Platform | None = None
        self.clusters: dict[str, Cluster] = {}
        self.scrapers: dict[str, EksClusterScraping] = {}
        self.storage: dict[str, WorkloadStorage] = {}
        self.nodes: dict[str, EksWorkloadPattern] = {}

    def build(
        self,
        platform: Construct,
        grafana: Construct | None,
        clusters: Mapping[str, Construct],
        cluster_addons: Mapping[str, Construct],
        monitoring: Mapping[str, Construct],
        workloads: Mapping[str, Construct],
        nodes: Mapping[str, Construct],
    ) -> None:
        """Every part of the deployment, each into its scope (a stack each, in ``stacks/``):
        the platform (``grafana``: its Grafana workspace, else in ``platform``); per cluster
        key its control plane, the scope of what runs on it and, with observability on, of its
        scraper; per workload the scope of its file system or HyperPod/PCS cluster
        (``workloads``) and, on EKS, of its nodes and Kubernetes objects (``nodes``)."""
        self.build_platform(platform, grafana_scope=grafana)
        for key, cluster in self.options.clusters.items():
            self.build_cluster(clusters[key], key, addons_scope=cluster_addons[key])
            if cluster.scraped:
                self.build_cluster_monitoring(monitoring[key], key)
        for name, w in self.options.workloads.items():
            if w.has_storage_stack:
                self.build_workload(workloads[name], name)
            if w.eks_nodes:
                self.build_workload_nodes(nodes[name], name)

    @property
    def platform(self) -> Platform:
        if self._platform is None:
            raise RuntimeError("build_platform() first")
        return self._platform

    @property
    def gpu_subnet(self) -> ec2.ISubnet:
        """The private subnet of the GPU zone every accelerated node and file system uses."""
        return self.platform.network.private_subnet(self.options.platform.availability_zone)

    # ---- platform ----------------------------------------------------------------------------

    def build_platform(self, scope: Construct, *, grafana_scope: Construct | None) -> Platform:
        """The GPU VPC (``Network``), its teardown guard, the data bucket (``Data``) and, with
        observability on, the ``Observability`` platform (its Grafana workspace under
        ``grafana_scope``, else under ``scope``)."""
        p = self.options.platform
        network = GpuClusterVpc(
            scope,
            "Network",
            availability_zones=p.availability_zones,
            cidr=p.vpc_cidr,
            pod_subnet_zone=p.availability_zone if p.pod_cidr is not None else None,
            nat_gateways_per_az=p.nat_gateways_per_az,
            interface_endpoints=p.interface_endpoints,
            node_subnet_zone=p.availability_zone if p.node_subnet_cidrs else None,
            pod_cidr=p.pod_cidr,
            node_subnet_cidrs=p.node_subnet_cidrs,
        )
        # Deleted before the VPC: stops `cdk destroy` with what to delete first while retained
        # file systems (and their security groups) are still in the VPC.
        pod_subnet = network.pod_subnet
        guard = VpcTeardownGuard(
            scope,
            "TeardownGuard",
            vpc=network.vpc,
            extra_subnet_ids=[pod_subnet.ref] if pod_subnet is not None else [],
        )
        # The data perimeter: the bucket's objects and key only for the deployment's data
        # roles, FSx and the roles the profile lists (platform.data_perimeter opts out).
        perimeter = (
            DataPerimeter.of_deployment(
                p.name,
                [
                    *([p.break_glass_role_arn] if p.break_glass_role_arn else []),
                    *p.data_perimeter_principals,
                ],
            )
            if p.data_perimeter
            else False
        )
        data = DataBucket(scope, "Data", perimeter=perimeter)
        observability = None
        if p.observability:
            observability = ObservabilityPlatform(
                scope,
                "Observability",
                grafana=p.grafana,
                grafana_scope=Construct(grafana_scope, "Observability") if grafana_scope else None,
            )
        self._platform = Platform(network, guard, data, observability)
        return self._platform

    # ---- clusters ----------------------------------------------------------------------------

    def build_cluster(self, scope: Construct, key: str, *, addons_scope: Construct) -> Cluster:
        """EKS cluster ``key`` (``Cluster``) with its members' device plugins and operators
        (what runs on the control plane under ``addons_scope``) and the scraper's security
        group and role configuration when observability is on."""
        options = self.options.clusters[key]
        platform = self.platform
        cluster = GpuEksCluster(
            scope,
            "Cluster",
            vpc=platform.vpc,
            submitter_namespaces={arn: list(ns) for arn, ns in options.submitter_namespaces},
            submitter_read_namespaces={
                arn: list(ns) for arn, ns in options.submitter_read_namespaces
            },
            gpu_availability_zone=options.availability_zone,
            kubernetes_version=options.kubernetes_version,
            admin_role_arns=options.admin_role_arns,
            public_access_cidrs=options.public_access_cidrs,
            operators=WorkloadOperators.named(options.operators),
            eni_config_subnets=(
                platform.network.eni_config_subnets() if options.custom_networking else None
            ),
            prefix_delegation=options.prefix_delegation,
            addons_scope=Construct(addons_scope, "Cluster"),
        )
        for family in options.device_plugin_families:
            DevicePlugins.for_family(family, efa=False).enable(cluster)
        DevicePlugins(nvidia=False, efa=True).enable(cluster)
        security_group: ec2.SecurityGroup | None = None
        role_scope: Construct | None = None
        if options.scraped:
            security_group = scraper_security_group(scope, "ScraperSecurityGroup", vpc=platform.vpc)
            # The scraper's role configuration, created with the control plane so that the
            # monitoring stack creates only the scraper (same construct path as there).
            role_scope = Construct(Construct(scope, "Scraping"), "Scraper")
        self.clusters[key] = Cluster(options, cluster, security_group, role_scope)
        return self.clusters[key]

    def build_cluster_monitoring(self, scope: Construct, key: str) -> EksClusterScraping:
        """The AMP managed scraper (``Scraping``) of cluster ``key`` (observability on)."""
        cluster = self.clusters[key]
        observability = self.platform.observability
        if observability is None or cluster.scraper_security_group is None:
            raise ValueError(f"cluster {key!r} is not scraped (observability is off)")
        scraping = observability.monitor_eks_cluster(
            scope,
            "Scraping",
            cluster=cluster.cluster,
            subnets=self.platform.vpc.private_subnets,
            security_group=cluster.scraper_security_group,
            scraper_role_scope=cluster.scraper_role_scope,
        )
        assert scraping is not None  # the platform's observability always has its workspace
        self.scrapers[key] = scraping
        return scraping

    # ---- workloads ---------------------------------------------------------------------------

    def build_workload(self, scope: Construct, name: str) -> WorkloadStorage:
        """Workload ``name``'s file system (``FileSystem``, with ``FileSystemAlarms``) unless
        it mounts another's, and its HyperPod (``HyperPod``) or AWS PCS (``Pcs``) cluster on
        those orchestrators (PCS nodes launch from the profile's pinned ``pcs_ami``)."""
        w = self.options.workloads[name]
        owned = self._file_system(scope, w)
        file_system = owned
        if owned is None and w.file_system_of is not None and w.file_system_of != name:
            file_system = self.storage[w.file_system_of].file_system
        hyperpod = None
        pcs = None
        if w.orchestrator is Orchestrator.PCS:
            pcs = self._pcs(scope, w, file_system)
        elif w.hyperpod is not None:
            hyperpod = self._hyperpod(scope, w, file_system)
        self.storage[name] = WorkloadStorage(file_system, owned is not None, hyperpod, pcs)
        return self.storage[name]

    def build_workload_nodes(
        self, scope: Construct, name: str, *, associations_scope: Construct | None = None
    ) -> EksWorkloadPattern:
        """EKS workload ``name``'s node groups and Kubernetes objects on its cluster
        (``Workload``: the pattern of its kind). The data repository associations of the
        workload's own file system are created under ``associations_scope`` (by default
        ``scope``'s ``FileSystem``), while the nodes start: FSx creates them one by one."""
        w = self.options.workloads[name]
        if w.cluster is None:
            raise ValueError(f"{name} does not run on EKS")
        storage = self.storage.get(name)
        if storage is None and w.file_system_of is not None:
            storage = self.storage[w.file_system_of]
        file_system = storage.file_system if storage is not None else None
        self.nodes[name] = _EKS_PATTERNS[name](self, scope, w, file_system)
        if storage is not None and storage.owns_file_system and file_system is not None:
            file_system.add_associations(associations_scope or Construct(scope, "FileSystem"))
        return self.nodes[name]

    def _file_system(self, scope: Construct, w: WorkloadOptions) -> LustreFileSystem | None:
        fs = w.file_system
        if fs is None:
            return None
        data = self.platform.data
        file_system = LustreFileSystem(
            scope,
            "FileSystem",
            vpc=self.platform.vpc,
            subnet=self.gpu_subnet,
            data_bucket=data,
            # One association per directory; only the workload's own outputs are exported.
            associations=workload_associations(
                fs.directories, fs.exported_prefixes, bucket_name=data.bucket_name
            ),
            # EKS: the workload's nodes scope creates the associations while its nodes start.
            defer_associations=w.orchestrator is Orchestrator.EKS,
            **fs.settings,
        )
        observability = self.platform.observability
        if observability is not None:
            observability.monitor_lustre(scope, "FileSystemAlarms", file_system=file_system)
        return file_system

    def _hyperpod(
        self, scope: Construct, w: WorkloadOptions, file_system: ILustreFileSystem | None
    ) -> HyperPodAcceleratedWorkload:
        hp = w.hyperpod
        assert hp is not None
        rollout = w.rollout
        groups = (
            [
                InstanceGroup(
                    name=ROLLOUT_POOL,
                    instance_type=rollout.instance_type,
                    instance_count=rollout.instance_count,
                    partition_name=rollout.partition_name,
                    efa_layout=w.efa_layout,
                )
            ]
            if rollout is not None
            else []
        )
        cluster = self.clusters[w.cluster] if w.cluster is not None else None
        observability = self.platform.observability
        return HyperPodAcceleratedWorkload(
            scope,
            "HyperPod",
            **self._accelerated_common(w, file_system),
            orchestrator=hp.orchestrator,
            alert_topic=observability.alert_topic if observability is not None else None,
            extra_instance_groups=groups,
            kubernetes_version=hp.kubernetes_version,
            admin_role_arns=hp.admin_role_arns,
            public_access_cidrs=hp.public_access_cidrs,
            operators=WorkloadOperators.named(w.operators),
            scraper_subnets=self.platform.vpc.private_subnets,
            eks_cluster=cluster.cluster if cluster is not None else None,
            training=hp.training,
            users=hp.users,
        )

    def _pcs(
        self,
        scope: Construct,
        w: WorkloadOptions,
        file_system: ILustreFileSystem | None,
    ) -> PcsAcceleratedWorkload:
        # The profile rules require the pinned AMI on 'pcs' (FM337).
        assert w.pcs_ami_id is not None
        return PcsAcceleratedWorkload(
            scope,
            "Pcs",
            **self._accelerated_common(w, file_system),
            ami_id=w.pcs_ami_id,
            session_manager=w.session_manager,
        )

    def _accelerated_common(
        self, w: WorkloadOptions, file_system: ILustreFileSystem | None
    ) -> dict[str, Any]:
        """The keyword arguments the HyperPod and AWS PCS workloads both take."""
        assert w.capacity is not None
        observability = self.platform.observability
        return {
            "vpc": self.platform.vpc,
            "gpu_subnet": self.gpu_subnet,
            "instance_type": w.instance_type,
            "node_count": w.instance_count,
            "capacity": capacity_source(w.capacity),
            "file_system": file_system,
            "efa_layout": w.efa_layout,
            "workspace": observability.prometheus if observability is not None else None,
            "name": w.name,
            "file_system_efa_clients": w.file_system_efa_clients,
        }

    def _eks_common(self, w: WorkloadOptions) -> dict[str, Any]:
        """The keyword arguments every EKS workload pattern takes."""
        assert w.cluster is not None and w.capacity is not None
        subnets = [self.gpu_subnet, *self.platform.network.node_subnets]
        return {
            "cluster": self.clusters[w.cluster].cluster,
            "subnet": self.gpu_subnet,
            "instance_type": w.instance_type,
            "node_count": w.instance_count,
            "capacity": capacity_source(w.capacity),
            "data_bucket": self.platform.data,
            "efa_layout": w.node_efa_layout,
            "root_volume_size_gib": w.root_volume_size_gib,
            "session_manager": w.session_manager,
            "max_pods_per_node": w.max_pods_per_node,
            "launch_template_version": w.launch_template_version,
            "file_system_efa_clients": w.file_system_efa_clients,
            "node_group_subnets": {
                pool: [subnets[i] for i in indexes] for pool, indexes in w.node_group_subnets
            },
        }

    def _pretraining(
        self, scope: Construct, w: WorkloadOptions, file_system: ILustreFileSystem | None
    ) -> PretrainingWorkload:
        common = self._eks_common(w)
        return PretrainingWorkload(scope, "Workload", file_system=file_system, **common)

    def _post_training(
        self, scope: Construct, w: WorkloadOptions, file_system: ILustreFileSystem | None
    ) -> PostTrainingWorkload:
        rollout = w.rollout
        return PostTrainingWorkload(
            scope,
            "Workload",
            file_system=file_system,
            rollout_instance_type=rollout.instance_type if rollout is not None else None,
            rollout_node_count=rollout.instance_count if rollout is not None else 1,
            rollout_launch_template_version=(
                rollout.launch_template_version if rollout is not None else None
            ),
            **self._eks_common(w),
        )

    def _inference(
        self, scope: Construct, w: WorkloadOptions, file_system: ILustreFileSystem | None
    ) -> InferenceWorkload:
        serving = w.inference
        assert serving is not None
        observability = self.platform.observability
        server = serving.model_server
        model = None
        if server is not None:
            given = dataclasses.asdict(server)
            model = ModelServerSpec(**{k: v for k, v in given.items() if v is not None})
        scaling = serving.autoscaling
        policy = None
        if scaling is not None:
            policy = AutoscalingPolicy(metric=scaling.metric, target=scaling.target)
        return InferenceWorkload(
            scope,
            "Workload",
            model=model,
            autoscaling=policy,
            load_balancer_source_ranges=list(serving.load_balancer_source_ranges) or None,
            tls_certificate_arn=serving.tls_certificate_arn,
            max_node_count=serving.max_node_count,
            file_system=file_system,
            load_balancer=serving.load_balancer,
            workspace=observability.prometheus if observability is not None else None,
            **self._eks_common(w),
        )


_EKS_PATTERNS: dict[
    str,
    Callable[
        [Deployment, Construct, WorkloadOptions, ILustreFileSystem | None], EksWorkloadPattern
    ],
] = {
    "pretraining": Deployment._pretraining,
    "post_training": Deployment._post_training,
    "inference": Deployment._inference,
}

__all__ = [
    "Cluster",
    "Deployment",
    "EksWorkloadPattern",
    "Platform",
    "WorkloadStorage",
    "capacity_source",
]
