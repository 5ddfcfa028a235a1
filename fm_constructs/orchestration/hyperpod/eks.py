"""What an EKS cluster needs before HyperPod nodes join it, and the HyperPod add-ons after.

Before the HyperPod cluster (its ``CfnCluster`` depends on these):

- the device plugins of the accelerators in the instance groups (NVIDIA or Neuron) and the
  EFA device plugin, installed through :class:`~fm_constructs.orchestration.GpuEksCluster`;
  HyperPod nodes get the library's node labels (see :func:`hyperpod_node_labels`) so those
  charts select them;
- the HyperPod health monitoring agent (HMA), the DaemonSet that reports accelerator and EFA
  faults for node recovery. AWS ships it inside the HyperPod dependencies Helm chart, which is
  published as a Git directory rather than a chart repository, so it is deployed here as a
  manifest: namespace ``aws-hyperpod``, its RBAC, and one DaemonSet per accelerator family,
  running AWS's regional image (:mod:`fm_constructs.kubernetes.hyperpod` renders them);
- the access HyperPod's own controllers need (``hyperpod_access_manifests``): the deep
  health check service account, job auto-restart and patching RBAC for HyperPod's
  service-linked role;
- device plugins and the DCGM exporter tolerate HyperPod's node-health taint
  (``sagemaker.amazonaws.com/node-health-status=Unschedulable``), so a node under repair keeps
  them;
- the managed VPC CNI add-on (HyperPod requires vpc-cni 1.18.3 or newer).

This reproduces, pinned and reviewed in constructs, every part of the HyperPod dependencies
chart (aws/sagemaker-hyperpod-cli@011ca92, ``helm_chart/HyperPodHelmChart``) that is enabled by
default, except its own copies of the Kubeflow training operator v1 and MPI operator: the chart
is published as a Git directory, not a chart repository, so it cannot be installed pinned as a
Helm release, and training runs through the HyperPod training operator add-on (below) and the
platform's Kubeflow Trainer (whose MPI runtime covers MPI jobs).

After the HyperPod cluster (its controller runs on HyperPod nodes):

- ``cert-manager`` and the AWS add-on ``amazon-sagemaker-hyperpod-training-operator`` with its
  EKS Pod Identity role (``AmazonSageMakerHyperPodTrainingOperatorAccess``);
- optionally ``amazon-sagemaker-hyperpod-taskgovernance`` (it brings its own Kueue, so the
  cluster's Kueue chart must be off).

HyperPod creates the ``HYPERPOD_LINUX`` access entry of the execution role itself during
CreateCluster (the resource handler holds ``eks:CreateAccessEntry`` and
``eks:AssociateAccessPolicy``), so no access entry is declared here: a second one for the same
principal would make the creation fail.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Stack
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from fm_constructs.errors import Problems
from fm_constructs.kubernetes.hyperpod import (
    HMA_IMAGE_ACCOUNTS,
    health_monitoring_agent_manifests,
    hyperpod_access_manifests,
)
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_features import DevicePlugins
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.efa_node_group import node_labels
from fm_constructs.orchestration.eks_addons import VPC_CNI
from fm_constructs.orchestration.hyperpod.instance_groups import InstanceGroup
from fm_constructs.orchestration.pod_identity import pod_identity_role, restrict_trust
from fm_constructs.policy import acknowledge
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import eks as eks_rules

TRAINING_OPERATOR_ADDON = "amazon-sagemaker-hyperpod-training-operator"
TASK_GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
CERT_MANAGER_ADDON = "cert-manager"
TRAINING_OPERATOR_SERVICE_ACCOUNT = "hp-training-operator-controller-manager"
#: The namespace the training operator add-on runs in: its role trusts only its service
#: account there. Installations of the add-on published beside AWS's HyperPod samples make its
#: association with ``aws eks create-pod-identity-association --namespace aws-hyperpod
#: --service-account hp-training-operator-controller-manager``.
TRAINING_OPERATOR_NAMESPACE = "aws-hyperpod"
TRAINING_OPERATOR_POLICY = "AmazonSageMakerHyperPodTrainingOperatorAccess"
#: Label HyperPod puts on its nodes in EKS.
HYPERPOD_COMPUTE_TYPE_LABEL = "sagemaker.amazonaws.com/compute-type"

#: Charts HyperPod nodes need before they join (accelerator, EFA and GPU telemetry plugins).
DEVICE_CHARTS = (
    charts.NVIDIA_DEVICE_PLUGIN,
    charts.NEURON_DEVICE_PLUGIN,
    charts.EFA_DEVICE_PLUGIN,
    charts.DCGM_EXPORTER,
)


def hyperpod_node_labels(group: InstanceGroup) -> dict[str, str]:
    """Labels for the nodes of an EKS-orchestrated group: the library's accelerator labels
    (so the device plugin and DCGM charts of :class:`GpuEksCluster` schedule on HyperPod
    nodes) under the user's own labels, which win. No default taints: the HyperPod training
    operator runs its controller on HyperPod nodes and must be able to schedule there."""
    spec = group.spec
    labels: dict[str, str] = {}
    if spec is not None and spec.is_accelerated:
        labels = node_labels(spec)
        if not spec.efa_supported:
            labels.pop(charts.EFA_PRESENT_LABEL, None)
    labels.update(group.kubernetes_labels)
    return labels


class HyperPodEksDependencies(Construct):
    """Prepares ``eks_cluster`` for the accelerated types of ``instance_groups``.

    ``prerequisites`` lists what the HyperPod cluster must be created after; call
    :meth:`add_post_cluster_addons` once the ``CfnCluster`` exists. Children:
    ``HealthMonitoringAgent``, ``HyperPodAccess``, and after that call ``CertManager``,
    ``TrainingOperatorRole``, ``TrainingOperator``, ``TaskGovernance``.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.HYPERPOD_EKS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        eks_cluster: IGpuCluster,
        instance_groups: Sequence[InstanceGroup],
        training_operator: bool = True,
        task_governance: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        region = Stack.of(self).region
        problems.adopt(
            eks_rules.hyperpod_eks(
                region=region,
                agent_regions=HMA_IMAGE_ACCOUNTS,
                task_governance=task_governance,
                cluster_has_kueue="kueue" in eks_cluster.charts,
            )
        )
        problems.raise_if_any()
        self.eks_cluster = eks_cluster
        self.training_operator = training_operator
        self.task_governance = task_governance
        specs = [g.spec for g in instance_groups]
        accelerated = [s for s in specs if s is not None and s.is_accelerated]

        families = sorted({s.eks_ami_family for s in accelerated})
        for family in families:
            DevicePlugins.for_family(family, efa=False).enable(eks_cluster)
        if any(s.efa_supported for s in accelerated):
            DevicePlugins(nvidia=False, efa=True).enable(eks_cluster)
        self.health_monitoring_agent = eks.KubernetesManifest(
            self,
            "HealthMonitoringAgent",
            cluster=eks_cluster.icluster,
            manifest=health_monitoring_agent_manifests(region, accelerated),
            overwrite=True,
        )
        self.access = eks.KubernetesManifest(
            self,
            "HyperPodAccess",
            cluster=eks_cluster.icluster,
            manifest=hyperpod_access_manifests(),
            overwrite=True,
        )
        # The service accounts live in the agent's namespace.
        self.access.node.add_dependency(self.health_monitoring_agent)
        self.prerequisites: list[IConstruct] = [
            self.health_monitoring_agent,
            self.access,
            *(
                eks_cluster.charts[spec.release]
                for spec in DEVICE_CHARTS
                if spec.release in eks_cluster.charts
            ),
        ]
        vpc_cni = eks_cluster.managed_addon(VPC_CNI)
        if vpc_cni is not None:
            self.prerequisites.append(vpc_cni)
        self.addons: dict[str, eks.CfnAddon] = {}
        self.training_operator_role: iam.Role | None = None

    def add_post_cluster_addons(self, hyperpod_cluster: IConstruct) -> None:
        """Create the HyperPod add-ons that need HyperPod nodes (after ``hyperpod_cluster``)."""
        cluster_name = self.eks_cluster.cluster_name
        if self.training_operator:
            cert_manager = eks.CfnAddon(
                self,
                "CertManager",
                addon_name=CERT_MANAGER_ADDON,
                cluster_name=cluster_name,
                resolve_conflicts="OVERWRITE",
            )
            cert_manager.node.add_dependency(self.eks_cluster.system_nodes)
            role = pod_identity_role(
                self,
                "TrainingOperatorRole",
                description="HyperPod training operator (EKS Pod Identity)",
                managed_policies=[
                    iam.ManagedPolicy.from_aws_managed_policy_name(TRAINING_OPERATOR_POLICY)
                ],
            )
            acknowledge(
                role,
                "AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/"
                f"{TRAINING_OPERATOR_POLICY}]",
                "AmazonSageMakerHyperPodTrainingOperatorAccess is the policy AWS documents for "
                "the training operator add-on's Pod Identity role.",
            )
            restrict_trust(
                role,
                namespace=TRAINING_OPERATOR_NAMESPACE,
                service_account=TRAINING_OPERATOR_SERVICE_ACCOUNT,
                cluster_name=cluster_name,
            )
            self.training_operator_role = role
            operator = eks.CfnAddon(
                self,
                "TrainingOperator",
                addon_name=TRAINING_OPERATOR_ADDON,
                cluster_name=cluster_name,
                resolve_conflicts="OVERWRITE",
                pod_identity_associations=[
                    eks.CfnAddon.PodIdentityAssociationProperty(
                        service_account=TRAINING_OPERATOR_SERVICE_ACCOUNT, role_arn=role.role_arn
                    )
                ],
            )
            operator.node.add_dependency(cert_manager, hyperpod_cluster)
            if self.eks_cluster.pod_identity_agent is not None:
                operator.node.add_dependency(self.eks_cluster.pod_identity_agent)
            self.addons[CERT_MANAGER_ADDON] = cert_manager
            self.addons[TRAINING_OPERATOR_ADDON] = operator
        if self.task_governance:
            governance = eks.CfnAddon(
                self,
                "TaskGovernance",
                addon_name=TASK_GOVERNANCE_ADDON,
                cluster_name=cluster_name,
                resolve_conflicts="OVERWRITE",
            )
            governance.node.add_dependency(hyperpod_cluster)
            self.addons[TASK_GOVERNANCE_ADDON] = governance
