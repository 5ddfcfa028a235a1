"""A GPU EKS cluster created outside this app, behind the interface workloads and add-ons take
(:class:`~fm_constructs.orchestration.cluster_interface.IGpuCluster`): see
:meth:`fm_constructs.orchestration.GpuEksCluster.from_gpu_eks_cluster_attributes`."""

from __future__ import annotations

from typing import NotRequired, TypedDict, Unpack

import jsii
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_lambda as lambda_
from constructs import Construct, IConstruct

from fm_constructs.errors import Problems
from fm_constructs.orchestration.addon_registry import AddonRegistry
from fm_constructs.orchestration.cluster_features import GpuClusterFeatures
from fm_constructs.orchestration.eks_versions import kubectl_layer as make_kubectl_layer
from fm_constructs.orchestration.eks_versions import supported_version
from fm_constructs.planning.kubernetes_versions import DEFAULT_KUBERNETES_VERSION
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import eks as eks_rules
from fm_constructs.rules import platform as platform_rules

#: What the kubectl provider's role gets on an imported cluster (as on a created one).
ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
#: EKS cluster names (EKS API: 1-100 characters, a letter or digit first).
EKS_NAME = eks_rules.EKS_NAME


class GpuEksClusterAttributes(TypedDict):
    """What identifies an EKS cluster created outside this app (``aws eks
    describe-cluster``): its name, VPC and cluster security group; ``kubernetes_version``
    (the pinned chart and runtime choices follow it; default the library's);
    ``gpu_availability_zone`` (EFA node groups and HyperPod groups outside it are rejected;
    unset: no zone check). Manifests and charts are applied through ``kubectl_provider`` (one
    that exists already), else through a kubectl provider created here from
    ``kubectl_provider_options`` (default: the pinned kubectl layer of ``kubernetes_version``,
    in the VPC's private subnets behind the cluster security group, so a private endpoint is
    reachable); its handler role, when created here, gets a cluster-admin access entry."""

    cluster_name: str
    vpc: ec2.IVpc
    cluster_security_group_id: str
    kubernetes_version: NotRequired[str]
    gpu_availability_zone: NotRequired[str | None]
    kubectl_provider_options: NotRequired[eks.KubectlProviderOptions | None]
    kubectl_provider: NotRequired[eks.IKubectlProvider | None]


def cluster_admin_entry(
    scope: Construct, construct_id: str, cluster: eks.ICluster, principal: str
) -> eks.AccessEntry:
    """An access entry granting ``principal`` (an IAM role ARN) cluster admin on ``cluster``."""
    policy = eks.AccessPolicy.from_access_policy_name(
        ADMIN_POLICY, access_scope_type=eks.AccessScopeType.CLUSTER
    )
    return eks.AccessEntry(
        scope, construct_id, cluster=cluster, principal=principal, access_policies=[policy]
    )


@jsii.implements(ec2.IConnectable)
class ImportedGpuEksCluster(GpuClusterFeatures, Construct):
    """An existing cluster: the charts, operators, device plugins and Lustre volumes workloads
    ask for are added to it as to a cluster created here (through its kubectl provider), under
    this construct. The cluster must already run the managed add-ons a
    :class:`~fm_constructs.orchestration.GpuEksCluster` creates (vpc-cni, the EKS Pod Identity
    agent, the FSx CSI driver) and a node group for cluster services; a chart release of the
    same name already on the cluster makes its helm install fail (switch that operator off).

    Children: ``Resource`` (the imported ``eks.ICluster``), ``KubectlProvider`` with
    ``KubectlLayer`` and ``KubectlAccess`` (unless given), then the charts and manifests."""

    context_name = "GpuEksCluster.from_gpu_eks_cluster_attributes"

    def __init__(
        self, scope: Construct, construct_id: str, **attributes: Unpack[GpuEksClusterAttributes]
    ) -> None:
        super().__init__(scope, construct_id)
        cluster_name = attributes["cluster_name"]
        problems = Problems(context=f"{self.context_name} {self.node.path}", code=codes.EKS_CLUSTER)
        problems.adopt(eks_rules.imported_cluster_name(cluster_name))
        requested = attributes.get("kubernetes_version", DEFAULT_KUBERNETES_VERSION)
        options = attributes.get("kubectl_provider_options")
        layer = options.kubectl_layer if options is not None else None
        provider = attributes.get("kubectl_provider")
        builds_layer = provider is None and layer is None
        problems.add_findings(
            platform_rules.cluster_kubernetes_version(
                requested, layer_argument="kubectl_provider" if builds_layer else None
            )
        )
        problems.raise_if_any()
        version = supported_version(requested)
        assert version is not None
        if builds_layer:
            layer = make_kubectl_layer(self, "KubectlLayer", version)
        self.kubernetes_version = version.version
        self.gpu_availability_zone = attributes.get("gpu_availability_zone")
        vpc = attributes["vpc"]

        def imported(construct_id: str, provider: eks.IKubectlProvider | None) -> eks.ICluster:
            return eks.Cluster.from_cluster_attributes(
                self,
                construct_id,
                cluster_name=cluster_name,
                vpc=vpc,
                cluster_security_group_id=attributes["cluster_security_group_id"],
                kubectl_provider=provider,
            )

        if provider is None:
            assert layer is not None
            provider = self._kubectl_provider(imported("Identity", None), layer, options)
        self.icluster: eks.ICluster = imported("Resource", provider)
        self.addons_scope: Construct = self
        self.addon_registry = AddonRegistry(self)
        #: Charts install after the cluster (its node group for cluster services exists).
        self.system_nodes: IConstruct = self.icluster
        #: The FSx CSI driver already runs on the cluster: volumes wait for nothing.
        self.fsx_csi_driver: IConstruct | None = None
        self.pod_identity_agent: IConstruct | None = None
        self.kubectl_provider_parent: IConstruct = self
        self._init_features()
        self._acknowledge_kubectl_provider()

    def _kubectl_provider(
        self,
        identity: eks.ICluster,
        layer: lambda_.ILayerVersion,
        options: eks.KubectlProviderOptions | None,
    ) -> eks.KubectlProvider:
        """The kubectl provider of the imported cluster (``KubectlProvider``), in the VPC's
        private subnets; a handler role created here is made cluster admin (access entry
        ``KubectlAccess``), as aws-cdk-lib does for a cluster it creates."""
        given = options or eks.KubectlProviderOptions(kubectl_layer=layer)
        passed = ("awscli_layer", "environment", "memory", "role", "security_groups")
        provider = eks.KubectlProvider(
            self,
            "KubectlProvider",
            cluster=identity,
            kubectl_layer=layer,
            private_subnets=given.private_subnets or identity.vpc.private_subnets,
            security_group=given.security_group,
            **{name: getattr(given, name) for name in passed},
        )
        if given.role is None and provider.role is not None:
            cluster_admin_entry(self, "KubectlAccess", identity, provider.role.role_arn)
        return provider

    def managed_addon(self, name: str) -> IConstruct | None:
        """None: the cluster's managed add-ons are not this app's."""
        return None
