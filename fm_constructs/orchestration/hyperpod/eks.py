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
  running AWS's regional image (:data:`HMA_IMAGE_ACCOUNTS`, :data:`HMA_IMAGE_TAG`);
- the access HyperPod's own controllers need (:func:`hyperpod_access_manifests`): the deep
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
from typing import Any

from aws_cdk import Stack, Token
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

from fm_constructs import pins
from fm_constructs.catalog import EksAmiFamily, InstanceSpec
from fm_constructs.errors import Problems
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.efa_node_group import node_labels
from fm_constructs.orchestration.eks_addons import VPC_CNI
from fm_constructs.orchestration.hyperpod.instance_groups import InstanceGroup
from fm_constructs.orchestration.pod_identity import pod_identity_role
from fm_constructs.policy import acknowledge

HYPERPOD_NAMESPACE = "aws-hyperpod"
TRAINING_OPERATOR_ADDON = "amazon-sagemaker-hyperpod-training-operator"
TASK_GOVERNANCE_ADDON = "amazon-sagemaker-hyperpod-taskgovernance"
CERT_MANAGER_ADDON = "cert-manager"
TRAINING_OPERATOR_SERVICE_ACCOUNT = "hp-training-operator-controller-manager"
TRAINING_OPERATOR_POLICY = "AmazonSageMakerHyperPodTrainingOperatorAccess"
#: Label HyperPod puts on its nodes in EKS.
HYPERPOD_COMPUTE_TYPE_LABEL = "sagemaker.amazonaws.com/compute-type"

#: ECR registry accounts of the health monitoring agent image, by region: every region of the
#: health-monitoring-agent chart's map (aws/sagemaker-hyperpod-cli@011ca92,
#: helm_chart/HyperPodHelmChart/charts/health-monitoring-agent/templates/_helpers.tpl).
HMA_IMAGE_ACCOUNTS: dict[str, str] = {
    "us-east-1": "767398015722",
    "us-east-2": "851725546812",
    "us-west-1": "011528288828",
    "us-west-2": "905418368575",
    "eu-central-1": "211125453373",
    "eu-north-1": "654654141839",
    "eu-west-1": "533267293120",
    "eu-west-2": "011528288831",
    "ap-northeast-1": "533267052152",
    "ap-south-1": "011528288864",
    "ap-southeast-1": "905418428165",
    "ap-southeast-2": "851725636348",
    "sa-east-1": "025066253954",
    "eu-south-2": "626887787726",
    "ap-southeast-3": "971422672635",
    "ap-southeast-4": "084375568333",
    "ca-central-1": "843976229209",
}
#: Pinned agent image tag (``hyperpod-health-monitoring-agent`` in :mod:`fm_constructs.pins`).
HMA_IMAGE_TAG = pins.image_tag("hyperpod-health-monitoring-agent")
HMA_NAME = "health-monitoring-agent"
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


def hma_image(region: str) -> str:
    return (
        f"{HMA_IMAGE_ACCOUNTS[region]}.dkr.ecr.{region}.amazonaws.com/"
        f"hyperpod-health-monitoring-agent:{HMA_IMAGE_TAG}"
    )


def _daemon_set(
    name: str, image: str, instance_types: Sequence[str], neuron: bool
) -> dict[str, Any]:
    env: list[dict[str, Any]] = [
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
        {"name": "NODE_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
    ]
    container: dict[str, Any] = {
        "name": name,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"cpu": "500m", "memory": "512Mi"},
        },
        "securityContext": {"runAsUser": 1000, "runAsGroup": 2000},
        "env": env,
        "volumeMounts": [
            {"name": "log", "mountPath": "/var/log"},
            {"name": "kmsg", "mountPath": "/dev/kmsg", "readOnly": True},
            {"name": "localtime", "mountPath": "/etc/localtime", "readOnly": True},
        ],
    }
    if neuron:
        # Neuron nodes: no NVIDIA runtime hooks, and the system-log monitor instead of the
        # Kubernetes exporter.
        container["args"] = [
            "--enable-k8s-exporter=false",
            "--config.system-log-monitor=/config/system-message-monitor.json",
        ]
        env += [
            {"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"},
            {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": HYPERPOD_NAMESPACE, "labels": {"app": name}},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "serviceAccountName": HMA_NAME,
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchExpressions": [
                                            {
                                                "key": "node.kubernetes.io/instance-type",
                                                "operator": "In",
                                                "values": sorted(instance_types),
                                            }
                                        ]
                                    }
                                ]
                            }
                        }
                    },
                    "containers": [container],
                    "volumes": [
                        {"name": "log", "hostPath": {"path": "/var/log/"}},
                        {"name": "kmsg", "hostPath": {"path": "/dev/kmsg"}},
                        {"name": "localtime", "hostPath": {"path": "/etc/localtime"}},
                    ],
                    "tolerations": [
                        {"operator": "Exists", "effect": "NoSchedule"},
                        {"operator": "Exists", "effect": "NoExecute"},
                    ],
                },
            },
        },
    }


def health_monitoring_agent_manifests(
    region: str, specs: Sequence[InstanceSpec]
) -> list[dict[str, Any]]:
    """Namespace, RBAC and DaemonSets of the HyperPod health monitoring agent for the
    accelerated HyperPod types in ``specs`` (NVIDIA and Neuron get separate DaemonSets)."""
    image = hma_image(region)
    manifests: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HYPERPOD_NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": HMA_NAME, "namespace": HYPERPOD_NAMESPACE},
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": HMA_NAME},
            "rules": [
                {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
                {"apiGroups": [""], "resources": ["nodes", "nodes/status"], "verbs": ["patch"]},
                {
                    "apiGroups": ["", "events.k8s.io"],
                    "resources": ["events"],
                    "verbs": ["create", "patch", "update"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": HMA_NAME},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": HMA_NAME,
            },
            "subjects": [
                {"kind": "ServiceAccount", "name": HMA_NAME, "namespace": HYPERPOD_NAMESPACE}
            ],
        },
    ]
    families: dict[EksAmiFamily, list[str]] = {}
    for spec in specs:
        if spec.hyperpod_name and spec.is_accelerated:
            families.setdefault(spec.eks_ami_family, []).append(spec.hyperpod_name)
    if "NVIDIA" in families:
        manifests.append(_daemon_set(HMA_NAME, image, sorted(set(families["NVIDIA"])), False))
    if "NEURON" in families:
        manifests.append(
            _daemon_set(f"{HMA_NAME}-neuron", image, sorted(set(families["NEURON"])), True)
        )
    return manifests


#: The Kubernetes user HyperPod's service-linked role is mapped to on the cluster.
HYPERPOD_SERVICE_USER = "hyperpod-service-linked-role"
DEEP_HEALTH_CHECK_NAME = "deep-health-check-service-account"
JOB_AUTO_RESTART_NAME = "job-auto-restart"
PATCHING_NAME = "hyperpod-patching"


def _cluster_role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }


def _binding(name: str, role: str, subject: dict[str, str]) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def hyperpod_access_manifests() -> list[dict[str, Any]]:
    """What HyperPod's own controllers need on the cluster, as the HyperPod dependencies chart
    (aws/sagemaker-hyperpod-cli@011ca92, sub-charts ``deep-health-check``,
    ``job-auto-restart`` and ``hyperpod-patching``, all enabled by default) grants it:

    - deep health checks (on by default for accelerated groups): the
      ``deep-health-check-service-account`` in ``aws-hyperpod``, reading nodes and reading
      and patching pods;
    - job auto-restart, for HyperPod's service-linked role: watch nodes and pods, delete pods,
      patch nodes, record events, manage PyTorchJobs and hold leases;
    - patching (UpdateClusterSoftware drains nodes first): list pods and create evictions.
    """
    service_user = {
        "kind": "User",
        "name": HYPERPOD_SERVICE_USER,
        "apiGroup": "rbac.authorization.k8s.io",
    }
    return [
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": DEEP_HEALTH_CHECK_NAME, "namespace": HYPERPOD_NAMESPACE},
        },
        _cluster_role(
            f"{DEEP_HEALTH_CHECK_NAME}-role",
            [
                _rule([""], ["nodes"], ["get", "list"]),
                _rule([""], ["pods"], ["get", "list", "patch"]),
            ],
        ),
        _binding(
            f"{DEEP_HEALTH_CHECK_NAME}-role-binding",
            f"{DEEP_HEALTH_CHECK_NAME}-role",
            {
                "kind": "ServiceAccount",
                "name": DEEP_HEALTH_CHECK_NAME,
                "namespace": HYPERPOD_NAMESPACE,
            },
        ),
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": JOB_AUTO_RESTART_NAME, "namespace": HYPERPOD_NAMESPACE},
        },
        _cluster_role(
            JOB_AUTO_RESTART_NAME,
            [
                _rule(
                    [""], ["nodes", "nodes/status", "pods", "pods/status"], ["get", "list", "watch"]
                ),
                _rule([""], ["pods"], ["delete", "deletecollection"]),
                _rule([""], ["nodes", "nodes/status"], ["patch"]),
                _rule(["", "events.k8s.io"], ["events"], ["create"]),
                _rule(
                    ["kubeflow.org"],
                    ["pytorchjobs", "pytorchjobs/status"],
                    ["get", "list", "watch", "delete", "patch", "update"],
                ),
                _rule(["coordination.k8s.io"], ["leases"], ["get", "create", "update", "delete"]),
            ],
        ),
        _binding(JOB_AUTO_RESTART_NAME, JOB_AUTO_RESTART_NAME, service_user),
        _cluster_role(
            PATCHING_NAME,
            [_rule([""], ["pods"], ["list"]), _rule([""], ["pods/eviction"], ["create"])],
        ),
        _binding(PATCHING_NAME, PATCHING_NAME, service_user),
    ]


class HyperPodEksDependencies(Construct):
    """Prepares ``eks_cluster`` for the accelerated types of ``instance_groups``.

    ``prerequisites`` lists what the HyperPod cluster must be created after; call
    :meth:`add_post_cluster_addons` once the ``CfnCluster`` exists. Children:
    ``HealthMonitoringAgent``, ``HyperPodAccess``, and after that call ``CertManager``,
    ``TrainingOperatorRole``, ``TrainingOperator``, ``TaskGovernance``.
    """

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
        if Token.is_unresolved(region) or region not in HMA_IMAGE_ACCOUNTS:
            problems.add(
                "region",
                region,
                "the HyperPod health monitoring agent image is published in "
                f"{', '.join(sorted(HMA_IMAGE_ACCOUNTS))}; deploy the stack with an explicit "
                "env region from that list",
            )
        if task_governance and "kueue" in eks_cluster.charts:
            problems.add(
                "task_governance",
                task_governance,
                "the task governance add-on installs its own Kueue; turn the cluster's Kueue "
                "chart off (GpuEksCluster(operators=WorkloadOperators(kueue=False)))",
            )
        problems.raise_if_any()
        self.eks_cluster = eks_cluster
        self.training_operator = training_operator
        self.task_governance = task_governance
        specs = [g.spec for g in instance_groups]
        accelerated = [s for s in specs if s is not None and s.is_accelerated]

        families = sorted({s.eks_ami_family for s in accelerated})
        for family in families:
            eks_cluster.enable_device_plugins(family)
        if any(s.efa_supported for s in accelerated):
            eks_cluster.enable_efa_device_plugin()
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
