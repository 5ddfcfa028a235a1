"""EKS managed add-ons for GPU clusters: networking, DNS, Pod Identity, FSx CSI and node health.

Managed add-ons replace hand-written manifests wherever AWS ships one: EKS patches them, checks
their compatibility on cluster upgrades, and shows their health in the console. Versions are
left to EKS (the default version for the cluster's Kubernetes version) unless pinned through
``addon_versions``; a pinned vpc-cni must be new enough for ``efa-only`` interfaces and
HyperPod.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from fm_constructs.errors import Problems
from fm_constructs.orchestration.eks_charts import node_agent_tolerations
from fm_constructs.orchestration.node_role import CNI_POLICY
from fm_constructs.orchestration.pod_identity import pod_identity_role, restrict_trust
from fm_constructs.policy import acknowledge
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import eks as eks_rules
from fm_constructs.rules.findings import Finding

VPC_CNI = "vpc-cni"
COREDNS = "coredns"
KUBE_PROXY = "kube-proxy"
POD_IDENTITY_AGENT = "eks-pod-identity-agent"
FSX_CSI_DRIVER = "aws-fsx-csi-driver"
NODE_MONITORING_AGENT = "eks-node-monitoring-agent"
MANAGED_ADDONS: tuple[str, ...] = (
    VPC_CNI,
    COREDNS,
    KUBE_PROXY,
    POD_IDENTITY_AGENT,
    FSX_CSI_DRIVER,
    NODE_MONITORING_AGENT,
)
#: Oldest vpc-cni accepted when pinned: EKS asks for 1.18.5 or later on nodes with ``efa-only``
#: interfaces (https://docs.aws.amazon.com/eks/latest/userguide/node-efa.html; the fix for
#: IP-less interfaces, aws/amazon-vpc-cni-k8s#3047, first shipped in v1.18.5), above the
#: 1.18.3 SageMaker HyperPod on EKS requires.
MIN_VPC_CNI_VERSION = (1, 18, 5)
#: Service account of the FSx CSI controller, created by the add-on in kube-system.
FSX_CSI_CONTROLLER_SERVICE_ACCOUNT = "fsx-csi-controller-sa"
#: Service account of the VPC CNI's aws-node DaemonSet.
VPC_CNI_SERVICE_ACCOUNT = "aws-node"


def node_monitoring_agent_configuration() -> dict[str, object]:
    """Configuration values of the node monitoring agent (its ``configuration.schema.json``):
    both DaemonSets, the agent and its DCGM hostengine, tolerate every taint. The chart's
    default gives the DCGM server no tolerations at all, and an agent without its hostengine
    on a GPU node detects no GPU faults.

    Affinity is left at the chart's default on purpose: it keeps both DaemonSets off nodes
    labelled ``sagemaker.amazonaws.com/compute-type: hyperpod`` ("Don't schedule on hyperpod
    nodes", aws/eks-node-monitoring-agent ``charts/eks-node-monitoring-agent/values.yaml`` at
    0040fd7), where HyperPod's own health-monitoring agent watches the node and HyperPod, not
    EKS node auto repair, replaces it. A custom affinity would replace that list whole and put
    two agents on HyperPod nodes."""
    return {
        "nodeAgent": {"tolerations": node_agent_tolerations()},
        "dcgmAgent": {"tolerations": node_agent_tolerations()},
    }


def addon_version_findings(addon_versions: Mapping[str, str]) -> list[Finding]:
    """The rule's findings on pinned add-on versions of this cluster's managed add-ons: unknown
    add-on names, malformed versions, a vpc-cni older than :data:`MIN_VPC_CNI_VERSION`."""
    return eks_rules.addon_versions(
        addon_versions, managed=MANAGED_ADDONS, vpc_cni=VPC_CNI, min_vpc_cni=MIN_VPC_CNI_VERSION
    )


class ClusterAddons(Construct):
    """The managed add-ons of a GPU cluster.

    vpc-cni, kube-proxy and the Pod Identity agent are created with the cluster (nodes need
    them to become Ready). coredns, the FSx CSI driver and the node monitoring agent run pods,
    so they wait for ``system_nodes``: an add-on whose pods cannot schedule stays DEGRADED and
    would hold the stack. Every add-on overwrites the self-managed copy EKS bootstraps
    (``ResolveConflicts: OVERWRITE``) so the managed one is the single source of truth.

    The VPC CNI runs its network policy agent (``enableNetworkPolicy``), so the NetworkPolicy
    objects of the workload namespaces are enforced.

    The VPC CNI (``aws-node``) and the FSx CSI controller get their IAM roles through EKS Pod
    Identity (the add-on's
    ``PodIdentityAssociations``), not IRSA: no OIDC provider to manage.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.ADDONS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: eks.Cluster,
        system_nodes: IConstruct,
        addon_versions: Mapping[str, str] | None = None,
        vpc_cni_environment: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        versions = dict(addon_versions or {})
        configurations: dict[str, str] = {
            NODE_MONITORING_AGENT: json.dumps(node_monitoring_agent_configuration(), sort_keys=True)
        }
        # The network policy agent enforces the workload namespaces' NetworkPolicies (the
        # add-on's documented string value, EKS user guide "Restrict Pod network traffic with
        # Kubernetes network policies"); the add-on's configuration values take the aws-node
        # container's environment as ``env`` (custom networking, prefix delegation).
        vpc_cni: dict[str, object] = {"enableNetworkPolicy": "true"}
        if vpc_cni_environment:
            vpc_cni["env"] = dict(vpc_cni_environment)
        configurations[VPC_CNI] = json.dumps(vpc_cni, sort_keys=True)
        problems = Problems.of(self)
        problems.adopt(addon_version_findings(versions))
        problems.raise_if_any()

        self.addons: dict[str, eks.CfnAddon] = {}
        self.pod_identity_agent = cluster.eks_pod_identity_agent
        # aws-cdk-lib owns this add-on (ServiceAccount with Pod Identity reuses it); align it
        # with the others through its L1.
        agent = self.pod_identity_agent.node.default_child if self.pod_identity_agent else None
        if isinstance(agent, eks.CfnAddon):
            agent.resolve_conflicts = "OVERWRITE"
            if POD_IDENTITY_AGENT in versions:
                agent.addon_version = versions[POD_IDENTITY_AGENT]

        self.fsx_csi_role = pod_identity_role(
            self,
            "FsxCsiRole",
            description="FSx CSI controller (EKS Pod Identity): describe FSx file systems",
        )
        # Static provisioning only reads file system descriptions; fsx:Describe* has no
        # resource-level permissions.
        self.fsx_csi_role.add_to_policy(
            iam.PolicyStatement(
                actions=["fsx:DescribeFileSystems", "fsx:DescribeVolumes"],
                resources=["*"],
            )
        )
        acknowledge(
            self.fsx_csi_role,
            "AwsSolutions-IAM5[Resource::*]",
            "fsx:DescribeFileSystems and fsx:DescribeVolumes do not support resource-level "
            "permissions; the FSx CSI controller only reads descriptions for static volumes.",
        )

        # The VPC CNI's own role (EKS user guide: the CNI policy on a role of aws-node rather
        # than the node role, which every host-network pod shares).
        self.vpc_cni_role = pod_identity_role(
            self,
            "VpcCniRole",
            description="VPC CNI (aws-node, EKS Pod Identity): assign pod addresses",
            managed_policies=[iam.ManagedPolicy.from_aws_managed_policy_name(CNI_POLICY)],
        )
        acknowledge(
            self.vpc_cni_role,
            f"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/{CNI_POLICY}]",
            "The VPC CNI assigns pod addresses with the AWS-managed policy EKS documents for it.",
        )
        associations = {
            FSX_CSI_DRIVER: (FSX_CSI_CONTROLLER_SERVICE_ACCOUNT, self.fsx_csi_role),
            VPC_CNI: (VPC_CNI_SERVICE_ACCOUNT, self.vpc_cni_role),
        }
        for service_account, role in associations.values():
            # Both add-ons create their service accounts in kube-system.
            restrict_trust(
                role,
                namespace="kube-system",
                service_account=service_account,
                cluster_name=cluster.cluster_name,
            )

        for construct_id_, name, waits_for_nodes in (
            ("VpcCni", VPC_CNI, False),
            ("KubeProxy", KUBE_PROXY, False),
            ("CoreDns", COREDNS, True),
            ("FsxCsiDriver", FSX_CSI_DRIVER, True),
            ("NodeMonitoringAgent", NODE_MONITORING_AGENT, True),
        ):
            addon = eks.CfnAddon(
                self,
                construct_id_,
                addon_name=name,
                cluster_name=cluster.cluster_name,
                addon_version=versions.get(name),
                resolve_conflicts="OVERWRITE",
                configuration_values=configurations.get(name),
                pod_identity_associations=(
                    [
                        eks.CfnAddon.PodIdentityAssociationProperty(
                            service_account=associations[name][0],
                            role_arn=associations[name][1].role_arn,
                        )
                    ]
                    if name in associations
                    else None
                ),
            )
            if waits_for_nodes:
                addon.node.add_dependency(system_nodes)
            self.addons[name] = addon
        if self.pod_identity_agent is not None:
            for name in associations:
                self.addons[name].node.add_dependency(self.pod_identity_agent)

    @property
    def vpc_cni(self) -> eks.CfnAddon:
        return self.addons[VPC_CNI]

    @property
    def fsx_csi_driver(self) -> eks.CfnAddon:
        return self.addons[FSX_CSI_DRIVER]

    @property
    def node_monitoring_agent(self) -> eks.CfnAddon:
        return self.addons[NODE_MONITORING_AGENT]
