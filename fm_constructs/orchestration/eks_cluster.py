"""An EKS cluster for accelerated training and inference (aws-cdk-lib ``aws_eks_v2``).

Secure defaults in one place: private API endpoint, every control-plane log type, secrets
envelope-encrypted with a KMS key, access entries (no aws-auth ConfigMap) with admin roles
given explicitly, managed add-ons, pinned device-plugin and operator charts, and a small CPU
node group for cluster services. GPU/Trainium capacity is added with
:class:`~fm_constructs.orchestration.efa_node_group.EfaNodeGroup`.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import jsii
from aws_cdk import Annotations, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IConstruct

from fm_constructs.catalog import EksAmiFamily, InstanceSpec, all_instance_types
from fm_constructs.compute.node_template import node_launch_template
from fm_constructs.errors import Problems
from fm_constructs.kubernetes.eni_config import eni_configs
from fm_constructs.kubernetes.lustre_volume import rename_volume
from fm_constructs.kubernetes.objects import plain_namespace, service_account
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.addon_registry import AddonRegistry
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.eks_addons import ClusterAddons
from fm_constructs.orchestration.eks_versions import eks_version, resolve_version
from fm_constructs.orchestration.eks_versions import kubectl_layer as make_kubectl_layer
from fm_constructs.orchestration.node_role import allow_session_manager, remove_cni_policy
from fm_constructs.planning.kubernetes_versions import DEFAULT_KUBERNETES_VERSION, ENDING_SOON
from fm_constructs.planning.pod_networking import PodNetworking, vpc_cni_environment
from fm_constructs.policy import acknowledge
from fm_constructs.policy.nag_findings import acknowledge_generated_iam
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import platform as platform_rules

if TYPE_CHECKING:
    from fm_constructs.kubernetes.node_shape import WorkloadTarget
    from fm_constructs.storage.imported_lustre import ILustreFileSystem

ALL_LOG_TYPES: tuple[eks.ClusterLoggingTypes, ...] = (
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
)
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
#: What a workload's job submitters get, scoped to its namespaces (EKS access policies).
SUBMITTER_POLICY = "AmazonEKSEditPolicy"
#: EKS cluster names (EKS API: 1-100 characters, a letter or digit first).
_EKS_NAME = re.compile(r"^[0-9A-Za-z][A-Za-z0-9_-]{0,99}$")
_K8S_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


@dataclass(frozen=True)
class DevicePlugins:
    """Device plugins and GPU telemetry installed with the cluster.

    ``nvidia``: NVIDIA device plugin (``nvidia.com/gpu``); ``neuron``: Neuron device plugin
    (``aws.amazon.com/neuron``) for Trainium; ``efa``: AWS EFA device plugin
    (``vpc.amazonaws.com/efa``); ``dcgm_exporter``: DCGM exporter (GPU metrics on port 9400,
    needs ``nvidia``). Adding an :class:`EfaNodeGroup` switches on what its family needs.
    """

    nvidia: bool = True
    neuron: bool = False
    efa: bool = True
    dcgm_exporter: bool = True

    @classmethod
    def for_family(
        cls, family: EksAmiFamily, *, efa: bool = True, dcgm_exporter: bool = True
    ) -> DevicePlugins:
        """What accelerated nodes of ``family`` ("NVIDIA" or "NEURON") need: its device plugin
        (with the DCGM exporter for NVIDIA, unless ``dcgm_exporter`` is off) and, with ``efa``,
        the EFA device plugin."""
        return cls(
            nvidia=family == "NVIDIA",
            neuron=family == "NEURON",
            efa=efa,
            dcgm_exporter=dcgm_exporter,
        )

    def enable(self, cluster: IGpuCluster) -> None:
        """Install the switched-on plugins on ``cluster``, each chart once per cluster (those
        switched off are left as they are, so node groups sharing a cluster add up)."""
        if self.nvidia:
            cluster.add_pinned_chart(
                charts.NVIDIA_DEVICE_PLUGIN, charts.nvidia_device_plugin_values()
            )
            if self.dcgm_exporter:
                cluster.add_pinned_chart(charts.DCGM_EXPORTER, charts.dcgm_exporter_values())
        if self.neuron:
            cluster.add_pinned_chart(
                charts.NEURON_DEVICE_PLUGIN,
                charts.neuron_device_plugin_values(_family_types("NEURON")),
            )
        if self.efa:
            cluster.add_pinned_chart(
                charts.EFA_DEVICE_PLUGIN, charts.efa_device_plugin_values(_efa_types())
            )


@dataclass(frozen=True)
class WorkloadOperators:
    """Workload operators a training or serving team expects, each switchable per cluster.

    ``kueue``: quotas, queueing and gang admission for batch jobs (pre-training, SFT);
    ``kubeflow_trainer``: Kubeflow Trainer v2 (TrainJob; successor of the training operator,
    ships JobSet); ``kuberay``: KubeRay operator (RL post-training on Ray);
    ``leader_worker_set``: LeaderWorkerSet (multi-node inference replicas).
    """

    kueue: bool = True
    kubeflow_trainer: bool = True
    kuberay: bool = False
    leader_worker_set: bool = False

    @classmethod
    def named(cls, names: Iterable[str]) -> WorkloadOperators:
        """Exactly the operators in ``names`` (field names, as a profile's workloads list them
        in :data:`~fm_constructs.domain.workload_data.OPERATORS`); an unknown name is an error."""
        chosen = set(names)
        fields = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(chosen - fields)
        if unknown:
            raise ValueError(f"unknown operators {unknown}; known: {sorted(fields)}")
        return cls(**{name: name in chosen for name in fields})

    def enable(self, cluster: IGpuCluster) -> None:
        """Install the operators switched on here on ``cluster``, each once per cluster (those
        switched off are left as they are, so workloads sharing a cluster add up)."""
        for enabled, spec in (
            (self.kueue, charts.KUEUE),
            (self.kubeflow_trainer, charts.KUBEFLOW_TRAINER),
            (self.kuberay, charts.KUBERAY_OPERATOR),
            (self.leader_worker_set, charts.LEADER_WORKER_SET),
        ):
            if enabled:
                values = charts.kueue_values() if spec is charts.KUEUE else {}
                cluster.add_pinned_chart(spec, values, wait=True)


def _names(spec: InstanceSpec) -> list[str]:
    """Values a node's ``node.kubernetes.io/instance-type`` label can take for ``spec``: the EC2
    name on EKS node groups, the ``ml.`` name on SageMaker HyperPod nodes."""
    return [spec.name, *([spec.hyperpod_name] if spec.hyperpod_name else [])]


def _family_types(family: EksAmiFamily) -> list[str]:
    return [
        n for spec in all_instance_types() if spec.eks_ami_family == family for n in _names(spec)
    ]


def _efa_types() -> list[str]:
    return [n for spec in all_instance_types() if spec.efa_supported for n in _names(spec)]


@jsii.implements(ec2.IConnectable)
class GpuEksCluster(Construct):
    """EKS control plane, system node group, managed add-ons and pinned Helm charts.

    - ``kubernetes_version``: one of the versions in EKS standard support (see
      :data:`~fm_constructs.planning.kubernetes_versions.SUPPORTED_VERSIONS`); the matching
      kubectl layer comes from its PyPI package unless ``kubectl_layer`` is given.
    - ``gpu_availability_zone``: the zone holding the accelerated capacity and FSx for
      Lustre; EFA node groups outside it are rejected (cross-zone EFA and Lustre traffic is
      slow and billed). Unset: no zone check.
    - ``public_access_cidrs``: empty (default) keeps the API endpoint private; listing CIDRs
      opens the public endpoint to exactly those ranges (private access stays on).
    - ``admin_role_arns``: IAM roles granted ``AmazonEKSClusterAdminPolicy`` through access
      entries. The identity that deploys the stack gets no implicit admin access.
    - ``submitter_namespaces``: IAM role ARN -> the namespaces it submits jobs in; one access
      entry per role with ``AmazonEKSEditPolicy`` scoped to those namespaces (no cluster
      scope, no other namespace's Secrets or service accounts).
    - ``secrets_key``: KMS key for envelope encryption of Secrets; created (rotation on,
      retained on delete) when absent.
    - ``system_instance_type``/``system_node_count``: the CPU node group in the private
      subnets that runs CoreDNS, the CSI controller and the operators.
    - ``eni_config_subnets``: zone -> subnet id; switches on VPC CNI custom networking with
      prefix delegation (:mod:`fm_constructs.planning.pod_networking`): pods of a node in a
      zone get addresses from that zone's subnet, through an ENIConfig named after the zone.
      Custom networking is chosen when the cluster is created: nodes that joined before keep
      their pod addresses until they are replaced.
    - ``prefix_delegation``: VPC CNI prefix delegation in the node subnets (``/28`` prefixes
      instead of single addresses; ignored with ``eni_config_subnets``, which has its own).
    - ``addons_scope``: the construct the system nodes, managed add-ons, charts, operators and
      cluster-wide manifests are created under (default: this construct). One in another
      stack splits the cluster in two: the control plane (with its key, admin access entries
      and kubectl provider) here, everything that runs on it there, so what needs only the
      control plane (the managed scraper) does not wait for the charts.

    Authentication mode is ``API`` (access entries only), which SageMaker HyperPod accepts.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.EKS_CLUSTER

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        vpc_subnets: ec2.SubnetSelection | None = None,
        gpu_availability_zone: str | None = None,
        kubernetes_version: str = DEFAULT_KUBERNETES_VERSION,
        cluster_name: str | None = None,
        admin_role_arns: Sequence[str] = (),
        submitter_namespaces: Mapping[str, Sequence[str]] | None = None,
        public_access_cidrs: Sequence[str] = (),
        secrets_key: kms.IKey | None = None,
        kubectl_layer: lambda_.ILayerVersion | None = None,
        system_instance_type: str = "m7i.xlarge",
        system_node_count: int = 2,
        addon_versions: Mapping[str, str] | None = None,
        device_plugins: DevicePlugins | None = None,
        operators: WorkloadOperators | None = None,
        eni_config_subnets: Mapping[str, str] | None = None,
        prefix_delegation: bool = False,
        addons_scope: Construct | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        #: Where everything that runs on the control plane is created (see ``addons_scope``).
        self.addons_scope: Construct = addons_scope or self
        home = self.addons_scope
        version = resolve_version(kubernetes_version, problems)
        self._check_inputs(problems, admin_role_arns, public_access_cidrs, system_node_count)
        self._check_admin_accounts(problems, admin_role_arns)
        layer = kubectl_layer
        if layer is None and version is not None:
            layer = make_kubectl_layer(self, "KubectlLayer", version, problems)
        problems.raise_if_any()
        assert version is not None and layer is not None
        if version.version in ENDING_SOON:
            Annotations.of(self).add_warning_v2(
                "fm:eks-version-ending",
                f"Kubernetes {version.version} leaves EKS standard support on "
                f"{version.end_of_standard_support}; extended support costs more per cluster "
                f"hour. Prefer {DEFAULT_KUBERNETES_VERSION} or newer.",
            )

        self.kubernetes_version = version.version
        self.gpu_availability_zone = gpu_availability_zone
        self.secrets_key: kms.IKey = secrets_key or kms.Key(
            self,
            "SecretsKey",
            description="EKS secrets envelope encryption",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )
        endpoint = (
            eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*public_access_cidrs)
            if public_access_cidrs
            else eks.EndpointAccess.PRIVATE
        )
        self.cluster = eks.Cluster(
            self,
            "Resource",
            version=eks_version(version),
            cluster_name=cluster_name,
            vpc=vpc,
            vpc_subnets=[
                vpc_subnets or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
            ],
            endpoint_access=endpoint,
            cluster_logging=list(ALL_LOG_TYPES),
            secrets_encryption_key=self.secrets_key,
            bootstrap_cluster_creator_admin_permissions=False,
            default_capacity=0,
            default_capacity_type=eks.DefaultCapacityType.NODEGROUP,
            kubectl_provider_options=eks.KubectlProviderOptions(kubectl_layer=layer),
        )
        # aws-cdk-lib's Python typing does not list Cluster as an ICluster (jsii protocol gap).
        self.icluster: eks.ICluster = cast(eks.ICluster, self.cluster)
        self._acknowledge_cluster_findings(public=bool(public_access_cidrs))

        self.admin_access_entries: list[eks.AccessEntry] = []
        if not admin_role_arns:
            Annotations.of(self).add_warning_v2(
                "fm:no-cluster-admins",
                "No admin_role_arns: no person or pipeline can use the Kubernetes API of this "
                "cluster (the deploying identity gets no implicit access). List the IAM roles "
                "of your operators (platform.admin_role_arns in a profile, or cdk deploy -c "
                "admin_role_arns=arn:aws:iam::<account>:role/<name>); access entries can be "
                "added later without replacing the cluster.",
            )
        for index, arn in enumerate(admin_role_arns):
            entry = eks.AccessEntry(
                self,
                _admin_entry_id(arn, index),
                cluster=self.icluster,
                principal=arn,
                access_policies=[
                    eks.AccessPolicy.from_access_policy_name(
                        ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
                    )
                ],
            )
            self.admin_access_entries.append(entry)

        self.submitter_access_entries: list[eks.AccessEntry] = []
        for index, (arn, namespaces) in enumerate(sorted((submitter_namespaces or {}).items())):
            self.submitter_access_entries.append(
                eks.AccessEntry(
                    self,
                    _admin_entry_id(arn, index).replace("Admin", "Submitter", 1),
                    cluster=self.icluster,
                    principal=arn,
                    access_policies=[
                        eks.AccessPolicy.from_access_policy_name(
                            SUBMITTER_POLICY,
                            access_scope_type=eks.AccessScopeType.NAMESPACE,
                            namespaces=sorted(set(namespaces)),
                        )
                    ],
                )
            )

        self.system_launch_template = system_launch_template(home, "SystemLaunchTemplate")
        # "SystemNodeGroup", not the earlier "SystemNodes": EKS updates a node group to a launch
        # template only if it was created with one (botocore eks UpdateNodegroupVersion), so
        # a deployed group without one is replaced by a new group under a new id.
        self.system_nodes = eks.Nodegroup(
            home,
            "SystemNodeGroup",
            cluster=self.icluster,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=self.system_launch_template.ref,
                version=self.system_launch_template.attr_latest_version_number,
            ),
            instance_types=[ec2.InstanceType(system_instance_type)],
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            capacity_type=eks.CapacityType.ON_DEMAND,
            min_size=system_node_count,
            desired_size=system_node_count,
            max_size=max(system_node_count * 2, 2),
            subnets=vpc_subnets
            or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            labels={charts.WORKLOAD_LABEL: "system"},
            enable_node_auto_repair=True,
            max_unavailable=1,
        )
        acknowledge(
            self.system_nodes,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
            "AmazonEKSWorkerNodePolicy]",
            "EKS managed node groups require AmazonEKSWorkerNodePolicy on the node role.",
        )
        acknowledge(
            self.system_nodes,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
            "AmazonEC2ContainerRegistryReadOnly]",
            "Nodes pull add-on and system images from ECR with the AWS-managed read-only "
            "policy EKS documents for node roles.",
        )
        # The CNI's permissions are on its own Pod Identity role (ClusterAddons); a shell on a
        # broken system node through Session Manager (no SSH keys, no open port), without
        # Systems Manager's parameter reads.
        remove_cni_policy(self.system_nodes.role)
        allow_session_manager(self.system_nodes.role)
        acknowledge(
            self.system_nodes,
            "AwsSolutions-IAM5[Resource::*]",
            "The SSM Agent's Session Manager actions take no resource (Session Manager user "
            "guide, custom instance profile).",
        )

        self.addons = ClusterAddons(
            home,
            "Addons",
            cluster=self.cluster,
            system_nodes=self.system_nodes,
            addon_versions=addon_versions,
            vpc_cni_environment=vpc_cni_environment(
                PodNetworking.CUSTOM_NETWORKING
                if eni_config_subnets
                else PodNetworking.PREFIX_DELEGATION
                if prefix_delegation
                else PodNetworking.NODE_SUBNET
            ),
        )

        self.addon_registry = AddonRegistry(home)
        self.charts: dict[str, eks.HelmChart] = {}
        self._kubectl_acknowledged = False
        self._node_peers: list[ec2.IConnectable] = [self.cluster]
        self._lustre_file_systems: list[ILustreFileSystem] = []
        self.eni_configs: eks.KubernetesManifest | None = None
        if eni_config_subnets:
            self._custom_networking(eni_config_subnets)
        (device_plugins or DevicePlugins()).enable(self)
        (operators or WorkloadOperators()).enable(self)

    # ----------------------------------------------------------------------------- attributes

    @staticmethod
    def from_gpu_eks_cluster_attributes(
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        vpc: ec2.IVpc,
        cluster_security_group_id: str,
        kubectl_provider_options: eks.KubectlProviderOptions | None = None,
    ) -> eks.ICluster:
        """Use an EKS cluster that already exists (the interface node groups and manifests
        take): its name, VPC and cluster security group (``aws eks describe-cluster``);
        ``kubectl_provider_options`` (a kubectl role and layer) to apply manifests to it."""
        if not Token.is_unresolved(cluster_name) and not _EKS_NAME.match(cluster_name):
            problems = Problems(
                context=f"GpuEksCluster.from_gpu_eks_cluster_attributes {scope}",
                code=codes.EKS_CLUSTER,
            )
            problems.add("cluster_name", cluster_name, "must be an EKS cluster name")
            problems.raise_if_any()
        return eks.Cluster.from_cluster_attributes(
            scope,
            construct_id,
            cluster_name=cluster_name,
            vpc=vpc,
            cluster_security_group_id=cluster_security_group_id,
            kubectl_provider_options=kubectl_provider_options,
        )

    @property
    def cluster_name(self) -> str:
        return self.cluster.cluster_name

    @property
    def cluster_arn(self) -> str:
        return self.cluster.cluster_arn

    @property
    def vpc(self) -> ec2.IVpc:
        """The VPC of the control plane and the nodes."""
        return self.cluster.vpc

    @property
    def cluster_security_group(self) -> ec2.ISecurityGroup:
        return self.cluster.cluster_security_group

    @property
    def connections(self) -> ec2.Connections:
        """Connections of the cluster security group (control plane and system nodes)."""
        return self.cluster.connections

    @property
    def pod_identity_agent(self) -> IConstruct | None:
        """The Pod Identity agent add-on (components with AWS roles start after it)."""
        return self.addons.pod_identity_agent

    # ----------------------------------------------------------------------------- features

    def enable_device_plugins(self, family: EksAmiFamily, *, dcgm_exporter: bool = True) -> None:
        """Alias of ``DevicePlugins.for_family(family, efa=False, dcgm_exporter=...)
        .enable(cluster)``: the device plugin of ``family`` (and the DCGM exporter for NVIDIA)."""
        DevicePlugins.for_family(family, efa=False, dcgm_exporter=dcgm_exporter).enable(self)

    def enable_efa_device_plugin(self) -> None:
        """Alias of ``DevicePlugins(nvidia=False, efa=True).enable(cluster)``."""
        DevicePlugins(nvidia=False, efa=True).enable(self)

    def add_node_peer(self, peer: ec2.IConnectable) -> None:
        """Register the security groups of a node group so that every FSx for Lustre file system
        mounted with :meth:`add_lustre_volume` (before or after) accepts its clients."""
        self._node_peers.append(peer)
        for file_system in self._lustre_file_systems:
            file_system.connections.allow_default_port_from(peer)

    def add_lustre_volume(
        self,
        file_system: ILustreFileSystem,
        *,
        name: str = "fsx-lustre",
        namespace: str = "default",
        scope: Construct | None = None,
        volume_name: str | None = None,
        create_namespace: bool = True,
    ) -> eks.KubernetesManifest:
        """Mount ``file_system`` into pods: a static PersistentVolume ``volume_name`` (default
        ``name``; volumes are cluster-wide, so workloads sharing a cluster give theirs distinct
        names) and a claim ``namespace/name`` for the FSx CSI driver add-on. The namespace is
        created when it does not exist and ``create_namespace``.

        Without ``scope`` the manifest belongs to the cluster and the Lustre ports are opened
        from every node security group of this cluster (system nodes and EFA node groups,
        including ones added later). With ``scope`` (a workload on a shared cluster, in its own
        stack) the manifest is created there and the caller opens the ports from its own
        nodes, so the cluster never references a workload's file system.
        """
        problems = Problems(context="GpuEksCluster.add_lustre_volume", code=codes.EKS_CLUSTER)
        for field, value in (("name", name), ("namespace", namespace)):
            if not Token.is_unresolved(value) and not _K8S_NAME.match(value):
                problems.add(
                    field,
                    value,
                    "must be a Kubernetes DNS label (lowercase letters, digits and '-', at "
                    "most 63 characters, starting and ending with a letter or digit)",
                )
        problems.raise_if_any()
        manifests: list[dict[str, Any]] = []
        if create_namespace and namespace not in ("default", "kube-system"):
            manifests.append(plain_namespace(namespace))
        manifests.extend(
            rename_volume(
                file_system.kubernetes_static_volume(name=name, namespace=namespace),
                volume_name or name,
            )
        )
        manifest = eks.KubernetesManifest(
            scope or self.addons_scope,
            f"LustreVolume-{namespace}-{name}",
            cluster=self.icluster,
            manifest=manifests,
            overwrite=True,
        )
        manifest.node.add_dependency(self.addons.fsx_csi_driver)
        self._acknowledge_kubectl_provider()
        if scope is None:
            self._lustre_file_systems.append(file_system)
            for peer in self._node_peers:
                file_system.connections.allow_default_port_from(peer)
        return manifest

    def add_training_runtimes(self, target: WorkloadTarget) -> eks.KubernetesManifest:
        """Install the EFA-aware Kubeflow Trainer runtimes of ``target``'s workload (PyTorch,
        JAX, MPI; :mod:`fm_constructs.kubernetes.training_runtimes`) in its namespace, with the
        namespace and service account they run as and the PodDisruptionBudget of their pods,
        once the Trainer chart (and its CRDs) is installed."""
        from fm_constructs.kubernetes.training_runtimes import (
            training_pod_budget,
            training_runtimes,
        )

        trainer = self.charts.get(charts.KUBEFLOW_TRAINER.release)
        if trainer is None:
            problems = Problems(
                context="GpuEksCluster.add_training_runtimes", code=codes.EKS_CLUSTER
            )
            problems.add(
                "operators.kubeflow_trainer",
                False,
                "must be enabled: the training runtimes are Kubeflow Trainer objects",
            )
            problems.raise_if_any()
        namespace = target.namespace
        manifest = eks.KubernetesManifest(
            self.addons_scope,
            f"TrainingRuntimes-{namespace}",
            cluster=self.icluster,
            manifest=[
                plain_namespace(namespace),
                service_account(target.service_account, namespace),
                *training_runtimes(target),
                training_pod_budget(target),
            ],
            overwrite=True,
        )
        manifest.node.add_dependency(cast(Construct, trainer))
        self._acknowledge_kubectl_provider()
        return manifest

    def add_pinned_chart(
        self, spec: charts.HelmChartSpec, values: Mapping[str, Any], *, wait: bool = False
    ) -> eks.HelmChart:
        """Install the pinned Helm chart ``spec`` once per cluster (a second call returns the
        first release): after the system nodes, listed in :attr:`charts`."""
        existing = self.charts.get(spec.release)
        if existing is not None:
            return existing

        def create(scope: Construct, construct_id: str) -> eks.HelmChart:
            return eks.HelmChart(
                scope,
                construct_id,
                cluster=self.icluster,
                chart=spec.chart,
                repository=spec.repository,
                version=spec.version,
                release=spec.release,
                namespace=spec.namespace,
                create_namespace=True,
                values=dict(values) or None,
                wait=wait,
            )

        chart = self.addon_registry.install(f"Chart{spec.construct_id}", create)
        # Controllers need a node to run on; DaemonSets for accelerated nodes do not wait
        # (the nodes may come later), but installing them after the system nodes keeps the
        # helm releases from racing the add-ons.
        chart.node.add_dependency(self.system_nodes)
        self.charts[spec.release] = chart
        self._acknowledge_kubectl_provider()
        return chart

    # ----------------------------------------------------------------------------- internals

    def _custom_networking(self, subnets_by_zone: Mapping[str, str]) -> None:
        """VPC CNI custom networking: one ENIConfig per zone (named after it), applied once the
        vpc-cni add-on has installed the ENIConfig CRD and before any node joins, since a node
        that finds no ENIConfig never becomes ready."""
        self.eni_configs = eks.KubernetesManifest(
            self.addons_scope,
            "EniConfigs",
            cluster=self.icluster,
            manifest=eni_configs(subnets_by_zone),
            overwrite=True,
        )
        self.eni_configs.node.add_dependency(self.addons.vpc_cni)
        self.system_nodes.node.add_dependency(self.eni_configs)
        self._acknowledge_kubectl_provider()

    @staticmethod
    def _check_inputs(
        problems: Problems,
        admin_role_arns: Sequence[str],
        public_access_cidrs: Sequence[str],
        system_node_count: int,
    ) -> None:
        # The floor-1 rules the profile loader runs on platform.admin_role_arns and
        # platform.public_access_cidrs (tokens are skipped).
        problems.add_findings(platform_rules.admin_principals(admin_role_arns))
        problems.add_findings(platform_rules.public_access_cidrs(public_access_cidrs))
        if not 1 <= system_node_count <= 10:
            problems.add("system_node_count", system_node_count, "must be between 1 and 10")

    def _check_admin_accounts(self, problems: Problems, admin_role_arns: Sequence[str]) -> None:
        """The rule the loader runs with ``platform.account``, with the stack's account when
        it is known at synthesis."""
        account = Stack.of(self).account
        if not Token.is_unresolved(account):
            problems.add_findings(platform_rules.admin_accounts(admin_role_arns, account))

    def _acknowledge_kubectl_provider(self) -> None:
        """aws-cdk-lib creates the kubectl provider (a child of the cluster) on the first
        chart or manifest; acknowledge its findings once it exists."""
        provider = self.cluster.node.try_find_child("KubectlProvider")
        if provider is None or self._kubectl_acknowledged:
            return
        self._kubectl_acknowledged = True
        acknowledge_generated_iam(
            provider,
            managed_reason="aws-cdk-lib's kubectl provider Lambda roles use "
            "AWSLambdaBasicExecutionRole, AWSLambdaVPCAccessExecutionRole (the handler runs in "
            "the cluster VPC to reach the private endpoint) and the ECR read-only policies "
            "(to pull OCI Helm charts); the library fixes these roles.",
            wildcard_reason="aws-cdk-lib's provider framework may invoke any version of its "
            "own kubectl handler (function ARN with :*); the scope is fixed by the library.",
        )
        handler = provider.node.try_find_child("Handler")
        if handler is not None:
            acknowledge(
                handler,
                "AwsSolutions-L1",
                "The kubectl handler runtime is pinned by aws-cdk-lib to the Python version its "
                "kubectl/helm layer is built for.",
            )

    def _acknowledge_cluster_findings(self, *, public: bool) -> None:
        acknowledge(
            self.cluster,
            "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSClusterPolicy]",
            "The EKS cluster service role requires the AWS-managed AmazonEKSClusterPolicy.",
        )
        if public:
            acknowledge(
                self.cluster,
                "AwsSolutions-EKS1",
                "The public API endpoint is enabled on request and restricted to the listed "
                "public_access_cidrs; private access stays on for nodes.",
            )


#: Root volume of a system node: the size EKS gives a node group without a launch template,
#: on AL2023's root device, encrypted.
SYSTEM_ROOT_VOLUME_GIB = 20
SYSTEM_ROOT_DEVICE = "/dev/xvda"


def system_launch_template(scope: Construct, construct_id: str) -> ec2.CfnLaunchTemplate:
    """Launch template of the system node group: IMDSv2 required with a hop limit of 1 (EKS's
    default template allows 2), so a pod outside the host network cannot reach the metadata
    service and take the node role's credentials, and an encrypted gp3 root volume.

    Every pod on the system nodes that calls AWS has its own role through EKS Pod Identity
    (FSx CSI controller, Cluster Autoscaler, KEDA, the AWS Load Balancer Controller, which
    is given its region and VPC instead of reading them from the metadata service); the VPC
    CNI, kube-proxy and the Pod Identity agent run in the host network, where one hop is
    enough. No AMI, instance type, security group or subnet: the node group sets them and
    EKS adds its bootstrap."""
    return node_launch_template(
        scope,
        construct_id,
        root_device_name=SYSTEM_ROOT_DEVICE,
        root_volume_size_gib=SYSTEM_ROOT_VOLUME_GIB,
    )


def _admin_entry_id(arn: str, index: int) -> str:
    """Construct id of an admin access entry, from the role's path and name (stable when the
    list is reordered); a CDK token ARN falls back to its position."""
    if Token.is_unresolved(arn):
        return f"Admin{index}"
    return "Admin-" + arn.split(":role/", 1)[1].replace("/", "-")
