"""An EKS cluster for accelerated training and inference (aws-cdk-lib ``aws_eks_v2``).

Secure defaults in one place: private API endpoint, every control-plane log type, secrets
envelope-encrypted with a KMS key, access entries (no aws-auth ConfigMap) with admin roles
given explicitly, managed add-ons, pinned device-plugin and operator charts, and a small CPU
node group for cluster services. GPU/Trainium capacity is added with
:class:`~fm_constructs.orchestration.efa_node_group.EfaNodeGroup`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Unpack, cast

import jsii
from aws_cdk import Annotations, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_kms as kms
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IConstruct

from fm_constructs.compute.node_template import node_launch_template
from fm_constructs.errors import Problems
from fm_constructs.kubernetes.eni_config import eni_configs
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.addon_registry import AddonRegistry
from fm_constructs.orchestration.cluster_features import (
    DevicePlugins,
    GpuClusterFeatures,
    WorkloadOperators,
)
from fm_constructs.orchestration.eks_addons import ClusterAddons
from fm_constructs.orchestration.eks_versions import eks_version, supported_version
from fm_constructs.orchestration.eks_versions import kubectl_layer as make_kubectl_layer
from fm_constructs.orchestration.imported_eks import (
    GpuEksClusterAttributes,
    ImportedGpuEksCluster,
    cluster_admin_entry,
)
from fm_constructs.orchestration.node_role import allow_session_manager, remove_cni_policy
from fm_constructs.planning.kubernetes_versions import (
    DEFAULT_KUBERNETES_VERSION,
    ENDING_SOON,
    SupportedVersion,
)
from fm_constructs.planning.pod_networking import PodNetworking, vpc_cni_environment
from fm_constructs.policy import acknowledge
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import eks as eks_rules
from fm_constructs.rules import platform as platform_rules

if TYPE_CHECKING:
    from fm_constructs.orchestration.cluster_interface import IGpuCluster

ALL_LOG_TYPES: tuple[eks.ClusterLoggingTypes, ...] = (
    eks.ClusterLoggingTypes.API,
    eks.ClusterLoggingTypes.AUDIT,
    eks.ClusterLoggingTypes.AUTHENTICATOR,
    eks.ClusterLoggingTypes.CONTROLLER_MANAGER,
    eks.ClusterLoggingTypes.SCHEDULER,
)

#: What a workload's job submitters get, scoped to its namespaces (EKS access policies).
SUBMITTER_POLICY = "AmazonEKSEditPolicy"
#: What they get in namespaces they may only read (Kubernetes' ``view`` role: objects, pod
#: logs; no Secrets, no writes).
SUBMITTER_READ_POLICY = "AmazonEKSViewPolicy"


@jsii.implements(ec2.IConnectable)
class GpuEksCluster(GpuClusterFeatures, Construct):
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
    - ``submitter_read_namespaces``: IAM role ARN -> namespaces it may only read
      (``AmazonEKSViewPolicy`` there, in the same entry): the workloads' privileged
      diagnostics namespaces, where a pod that could be created would be root on a node.
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
        submitter_read_namespaces: Mapping[str, Sequence[str]] | None = None,
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

        # -- checks, and the kubectl layer of the version ---------------------------------------
        layer_argument = "kubectl_layer" if kubectl_layer is None else None
        problems.add_findings(
            platform_rules.cluster_kubernetes_version(
                kubernetes_version, layer_argument=layer_argument
            )
        )
        version = supported_version(kubernetes_version)
        self._check_inputs(problems, admin_role_arns, public_access_cidrs, system_node_count)
        self._check_admin_accounts(problems, admin_role_arns)
        self._check_zones(problems, vpc, vpc_subnets)
        layer = kubectl_layer
        if layer is None and version is not None and not problems:
            layer = make_kubectl_layer(self, "KubectlLayer", version)
        problems.raise_if_any()
        assert version is not None and layer is not None
        self._warn_if_support_ends_soon(version)
        self.kubernetes_version = version.version
        self.gpu_availability_zone = gpu_availability_zone

        # -- control plane and who may use it ---------------------------------------------------
        self.secrets_key: kms.IKey = secrets_key or self._create_secrets_key()
        self.cluster = self._create_control_plane(
            vpc,
            vpc_subnets,
            version=version,
            kubectl_layer=layer,
            cluster_name=cluster_name,
            public_access_cidrs=public_access_cidrs,
        )
        # aws-cdk-lib's Python typing does not list Cluster as an ICluster (jsii protocol gap).
        self.icluster: eks.ICluster = cast(eks.ICluster, self.cluster)
        self._acknowledge_cluster_findings(public=bool(public_access_cidrs))
        self.admin_access_entries: list[eks.AccessEntry] = self._admin_entries(admin_role_arns)
        self.submitter_access_entries: list[eks.AccessEntry] = self._submitter_entries(
            submitter_namespaces or {}, submitter_read_namespaces or {}
        )

        # -- what runs on it: system nodes, managed add-ons, charts and operators ---------------
        self.system_launch_template = system_launch_template(home, "SystemLaunchTemplate")
        self.system_nodes = self._create_system_nodes(
            vpc_subnets, instance_type=system_instance_type, node_count=system_node_count
        )
        self.addons = ClusterAddons(
            home,
            "Addons",
            cluster=self.cluster,
            system_nodes=self.system_nodes,
            addon_versions=addon_versions,
            vpc_cni_environment=vpc_cni_environment(
                _pod_networking(eni_config_subnets, prefix_delegation=prefix_delegation)
            ),
        )
        self.addon_registry = AddonRegistry(home)
        self.fsx_csi_driver: IConstruct | None = self.addons.fsx_csi_driver
        self.kubectl_provider_parent: IConstruct = self.cluster
        self._init_features()
        self.eni_configs: eks.KubernetesManifest | None = None
        if eni_config_subnets:
            self._custom_networking(eni_config_subnets)
        (device_plugins or DevicePlugins()).enable(self)
        (operators or WorkloadOperators()).enable(self)

    # ----------------------------------------------------------------------------- attributes

    @staticmethod
    def from_gpu_eks_cluster_attributes(
        scope: Construct, construct_id: str, **attributes: Unpack[GpuEksClusterAttributes]
    ) -> IGpuCluster:
        """Use an EKS cluster that already exists (its name, VPC and cluster security group:
        ``aws eks describe-cluster``; :class:`GpuEksClusterAttributes`). It goes wherever a
        created one does: workloads, node groups, HyperPod, add-ons
        (:class:`~fm_constructs.orchestration.imported_eks.ImportedGpuEksCluster`)."""
        return ImportedGpuEksCluster(scope, construct_id, **attributes)

    @property
    def pod_identity_agent(self) -> IConstruct | None:
        """The Pod Identity agent add-on (components with AWS roles start after it)."""
        return self.addons.pod_identity_agent

    def managed_addon(self, name: str) -> IConstruct | None:
        """The managed add-on ``name`` (``vpc-cni``, ...) this cluster created, if any."""
        return self.addons.addons.get(name)

    # ----------------------------------------------------------------------------- features

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
        problems.adopt(eks_rules.system_node_count(system_node_count))

    def _check_admin_accounts(self, problems: Problems, admin_role_arns: Sequence[str]) -> None:
        """The rule the loader runs with ``platform.account``, with the stack's account when
        it is known at synthesis."""
        account = Stack.of(self).account
        if not Token.is_unresolved(account):
            problems.add_findings(platform_rules.admin_accounts(admin_role_arns, account))

    @staticmethod
    def _check_zones(
        problems: Problems, vpc: ec2.IVpc, vpc_subnets: ec2.SubnetSelection | None
    ) -> None:
        """EKS places its control-plane interfaces in subnets of at least two zones
        (CreateCluster fails otherwise): a one-zone VPC is refused here, not at deploy.
        Zones that are tokens (an imported VPC) are not checked."""
        if vpc_subnets is not None and vpc_subnets.subnets is not None:
            zones = [subnet.availability_zone for subnet in vpc_subnets.subnets]
        elif vpc_subnets is not None:
            return  # a selection by name or group: eks.Cluster resolves it
        else:
            try:
                selected = vpc.select_subnets(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS)
            except RuntimeError:  # no such subnets: eks.Cluster reports the selection itself
                return
            zones = list(selected.availability_zones)
        problems.adopt(eks_rules.cluster_zones(zones))

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

    def _warn_if_support_ends_soon(self, version: SupportedVersion) -> None:
        """A warning when the version leaves EKS standard support soon: extended support
        costs more per cluster hour."""
        if version.version in ENDING_SOON:
            Annotations.of(self).add_warning_v2(
                "fm:eks-version-ending",
                f"Kubernetes {version.version} leaves EKS standard support on "
                f"{version.end_of_standard_support}; extended support costs more per cluster "
                f"hour. Prefer {DEFAULT_KUBERNETES_VERSION} or newer.",
            )

    def _create_secrets_key(self) -> kms.Key:
        """The KMS key of the Secrets' envelope encryption (``SecretsKey``): rotated,
        retained on delete."""
        return kms.Key(
            self,
            "SecretsKey",
            description="EKS secrets envelope encryption",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
        )

    def _create_control_plane(
        self,
        vpc: ec2.IVpc,
        vpc_subnets: ec2.SubnetSelection | None,
        *,
        version: SupportedVersion,
        kubectl_layer: lambda_.ILayerVersion,
        cluster_name: str | None,
        public_access_cidrs: Sequence[str],
    ) -> eks.Cluster:
        """The control plane (``Resource``) in the private subnets: endpoint private unless
        ``public_access_cidrs`` opens it to them, every log type, Secrets encrypted with
        ``secrets_key``, no implicit admin for the deploying identity and no default
        capacity (the system node group is added here, GPU nodes by EfaNodeGroup)."""
        endpoint = (
            eks.EndpointAccess.PUBLIC_AND_PRIVATE.only_from(*public_access_cidrs)
            if public_access_cidrs
            else eks.EndpointAccess.PRIVATE
        )
        return eks.Cluster(
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
            kubectl_provider_options=eks.KubectlProviderOptions(kubectl_layer=kubectl_layer),
        )

    def _admin_entries(self, admin_role_arns: Sequence[str]) -> list[eks.AccessEntry]:
        """One cluster-admin access entry per role; a warning when there is none, since the
        deploying identity gets no implicit access."""
        if not admin_role_arns:
            Annotations.of(self).add_warning_v2(
                "fm:no-cluster-admins",
                "No admin_role_arns: no person or pipeline can use the Kubernetes API of this "
                "cluster (the deploying identity gets no implicit access). List the IAM roles "
                "of your operators (platform.admin_role_arns in a profile, or cdk deploy -c "
                "admin_role_arns=arn:aws:iam::<account>:role/<name>); access entries can be "
                "added later without replacing the cluster.",
            )
        return [
            cluster_admin_entry(self, _admin_entry_id(arn, index), self.icluster, arn)
            for index, arn in enumerate(admin_role_arns)
        ]

    def _submitter_entries(
        self,
        submitter_namespaces: Mapping[str, Sequence[str]],
        read_namespaces: Mapping[str, Sequence[str]],
    ) -> list[eks.AccessEntry]:
        """One access entry per job-submitter role (in ARN order), with
        :data:`SUBMITTER_POLICY` scoped to its namespaces and :data:`SUBMITTER_READ_POLICY`
        to those it may only read."""
        entries = []
        for index, arn in enumerate(sorted({*submitter_namespaces, *read_namespaces})):
            scoped = (
                (SUBMITTER_POLICY, submitter_namespaces.get(arn, ())),
                (SUBMITTER_READ_POLICY, read_namespaces.get(arn, ())),
            )
            entries.append(
                eks.AccessEntry(
                    self,
                    _admin_entry_id(arn, index).replace("Admin", "Submitter", 1),
                    cluster=self.icluster,
                    principal=arn,
                    access_policies=[
                        eks.AccessPolicy.from_access_policy_name(
                            policy,
                            access_scope_type=eks.AccessScopeType.NAMESPACE,
                            namespaces=sorted(set(namespaces)),
                        )
                        for policy, namespaces in scoped
                        if namespaces
                    ],
                )
            )
        return entries

    def _create_system_nodes(
        self, vpc_subnets: ec2.SubnetSelection | None, *, instance_type: str, node_count: int
    ) -> eks.Nodegroup:
        """The CPU node group of the cluster services (``SystemNodeGroup`` under
        ``addons_scope``) on ``system_launch_template``, in the private subnets, with auto
        repair; its role keeps the worker and ECR read-only policies and gets Session Manager
        (:func:`_restrict_system_node_role`).

        "SystemNodeGroup", not the earlier "SystemNodes": EKS updates a node group to a launch
        template only if it was created with one (botocore eks UpdateNodegroupVersion), so a
        deployed group without one is replaced by a new group under a new id."""
        nodes = eks.Nodegroup(
            self.addons_scope,
            "SystemNodeGroup",
            cluster=self.icluster,
            launch_template_spec=eks.LaunchTemplateSpec(
                id=self.system_launch_template.ref,
                version=self.system_launch_template.attr_latest_version_number,
            ),
            instance_types=[ec2.InstanceType(instance_type)],
            ami_type=eks.NodegroupAmiType.AL2023_X86_64_STANDARD,
            capacity_type=eks.CapacityType.ON_DEMAND,
            min_size=node_count,
            desired_size=node_count,
            max_size=max(node_count * 2, 2),
            subnets=vpc_subnets
            or ec2.SubnetSelection(subnet_type=ec2.SubnetType.PRIVATE_WITH_EGRESS),
            labels={charts.WORKLOAD_LABEL: "system"},
            enable_node_auto_repair=True,
            max_unavailable=1,
        )
        _restrict_system_node_role(nodes)
        return nodes


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


def _pod_networking(
    eni_config_subnets: Mapping[str, str] | None, *, prefix_delegation: bool
) -> PodNetworking:
    """How pods get their addresses: custom networking with ENIConfig subnets, else prefix
    delegation when asked, else one address of the node's subnet per pod."""
    if eni_config_subnets:
        return PodNetworking.CUSTOM_NETWORKING
    if prefix_delegation:
        return PodNetworking.PREFIX_DELEGATION
    return PodNetworking.NODE_SUBNET


def _restrict_system_node_role(nodes: eks.Nodegroup) -> None:
    """The system node role keeps the AWS-managed worker and ECR read-only policies
    (acknowledged); the CNI's permissions are on its own Pod Identity role (ClusterAddons);
    Session Manager gives a shell on a broken system node (no SSH keys, no open port),
    without Systems Manager's parameter reads."""
    acknowledge(
        nodes,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AmazonEKSWorkerNodePolicy]",
        "EKS managed node groups require AmazonEKSWorkerNodePolicy on the node role.",
    )
    acknowledge(
        nodes,
        "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
        "AmazonEC2ContainerRegistryReadOnly]",
        "Nodes pull add-on and system images from ECR with the AWS-managed read-only "
        "policy EKS documents for node roles.",
    )
    remove_cni_policy(nodes.role)
    allow_session_manager(nodes.role)
    acknowledge(
        nodes,
        "AwsSolutions-IAM5[Resource::*]",
        "The SSM Agent's Session Manager actions take no resource (Session Manager user "
        "guide, custom instance profile).",
    )
