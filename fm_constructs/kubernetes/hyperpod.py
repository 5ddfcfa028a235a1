"""The HyperPod objects an EKS cluster runs (plain dicts, no aws_cdk import): the health
monitoring agent (namespace ``aws-hyperpod``, its RBAC, one DaemonSet per accelerator family on
AWS's regional image) and the access HyperPod's own controllers need, as the HyperPod
dependencies chart (aws/sagemaker-hyperpod-cli@011ca92, ``helm_chart/HyperPodHelmChart``)
grants them. :class:`~fm_constructs.orchestration.hyperpod.HyperPodEksDependencies` applies
them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fm_constructs import pins
from fm_constructs.catalog import EksAmiFamily, InstanceSpec
from fm_constructs.kubernetes.objects import (
    cluster_role,
    cluster_role_binding,
    plain_namespace,
    service_account,
)

HYPERPOD_NAMESPACE = "aws-hyperpod"
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


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict[str, Any]:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def hma_image(region: str) -> str:
    return (
        f"{HMA_IMAGE_ACCOUNTS[region]}.dkr.ecr.{region}.amazonaws.com/"
        "hyperpod-health-monitoring-agent:"
        f"{pins.image('hyperpod-health-monitoring-agent').tag_reference(HMA_IMAGE_TAG)}"
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
        plain_namespace(HYPERPOD_NAMESPACE),
        service_account(HMA_NAME, HYPERPOD_NAMESPACE),
        cluster_role(
            HMA_NAME,
            [
                _rule([""], ["nodes"], ["get"]),
                _rule([""], ["nodes", "nodes/status"], ["patch"]),
                _rule(["", "events.k8s.io"], ["events"], ["create", "patch", "update"]),
            ],
        ),
        cluster_role_binding(
            HMA_NAME,
            HMA_NAME,
            [{"kind": "ServiceAccount", "name": HMA_NAME, "namespace": HYPERPOD_NAMESPACE}],
        ),
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
        service_account(DEEP_HEALTH_CHECK_NAME, HYPERPOD_NAMESPACE),
        cluster_role(
            f"{DEEP_HEALTH_CHECK_NAME}-role",
            [
                _rule([""], ["nodes"], ["get", "list"]),
                _rule([""], ["pods"], ["get", "list", "patch"]),
            ],
        ),
        cluster_role_binding(
            f"{DEEP_HEALTH_CHECK_NAME}-role-binding",
            f"{DEEP_HEALTH_CHECK_NAME}-role",
            [
                {
                    "kind": "ServiceAccount",
                    "name": DEEP_HEALTH_CHECK_NAME,
                    "namespace": HYPERPOD_NAMESPACE,
                }
            ],
        ),
        service_account(JOB_AUTO_RESTART_NAME, HYPERPOD_NAMESPACE),
        cluster_role(
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
        cluster_role_binding(JOB_AUTO_RESTART_NAME, JOB_AUTO_RESTART_NAME, [service_user]),
        cluster_role(
            PATCHING_NAME,
            [_rule([""], ["pods"], ["list"]), _rule([""], ["pods/eviction"], ["create"])],
        ),
        cluster_role_binding(PATCHING_NAME, PATCHING_NAME, [service_user]),
    ]
