"""Helm charts installed on GPU EKS clusters: releases of the pinned charts, and their values.

Every chart comes from its publisher's public repository (HTTPS Helm repository or OCI
registry) at a pinned version, so a redeploy never picks up a new release by surprise. The
versions and their sources live in :mod:`fm_constructs.pins`; bump them there and nowhere else.

The values builders put device plugins on accelerated nodes only (node selectors on the labels
that :class:`~fm_constructs.orchestration.efa_node_group.EfaNodeGroup` sets) and let them
tolerate the accelerator taints, so GPU/Trainium nodes stay reserved for training pods.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from fm_constructs import pins
from fm_constructs.domain.names import EFA_PRESENT_LABEL as EFA_PRESENT_LABEL
from fm_constructs.domain.names import EFA_TAINT_KEY as EFA_TAINT_KEY
from fm_constructs.domain.names import GPU_PRESENT_LABEL as GPU_PRESENT_LABEL
from fm_constructs.domain.names import GPU_TAINT_KEY as GPU_TAINT_KEY
from fm_constructs.domain.names import NEURON_PRESENT_LABEL as NEURON_PRESENT_LABEL
from fm_constructs.domain.names import NEURON_TAINT_KEY as NEURON_TAINT_KEY
from fm_constructs.domain.names import WORKLOAD_LABEL as WORKLOAD_LABEL
from fm_constructs.kubernetes import kueue


@dataclass(frozen=True)
class HelmChartSpec:
    """One Helm release: chart name, repository (``https://`` or ``oci://``), pinned version,
    release name and namespace, and the public page the version was checked against."""

    release: str
    chart: str
    repository: str
    version: str
    namespace: str
    source: str

    @property
    def construct_id(self) -> str:
        """Stable construct id derived from the release name (``nvidia-device-plugin`` ->
        ``NvidiaDevicePlugin``)."""
        return "".join(part.capitalize() for part in self.release.replace("_", "-").split("-"))


def pinned_chart(name: str, *, namespace: str, release: str | None = None) -> HelmChartSpec:
    """The release of chart pin ``name`` (see :mod:`fm_constructs.pins`) in ``namespace``;
    the release is named after the pin unless ``release`` is given."""
    pin = pins.chart(name)
    return HelmChartSpec(
        release=release or name,
        chart=pin.chart,
        repository=pin.repository,
        version=pin.version,
        namespace=namespace,
        source=pin.source,
    )


NVIDIA_DEVICE_PLUGIN = pinned_chart("nvidia-device-plugin", namespace="nvidia-device-plugin")
NEURON_DEVICE_PLUGIN = pinned_chart("neuron-helm-chart", namespace="kube-system")
EFA_DEVICE_PLUGIN = pinned_chart("aws-efa-k8s-device-plugin", namespace="kube-system")
DCGM_EXPORTER = pinned_chart("dcgm-exporter", namespace="dcgm-exporter")
KUEUE = pinned_chart("kueue", namespace="kueue-system")
KUBEFLOW_TRAINER = pinned_chart("kubeflow-trainer", namespace="kubeflow-system")
KUBERAY_OPERATOR = pinned_chart("kuberay-operator", namespace="kuberay-system")
LEADER_WORKER_SET = pinned_chart("lws", namespace="lws-system")
#: Kubernetes Cluster Autoscaler, official chart. The image tag is set from
#: :data:`CLUSTER_AUTOSCALER_IMAGE_TAGS` to match the cluster's Kubernetes minor, as upstream
#: asks (one autoscaler minor per Kubernetes minor).
CLUSTER_AUTOSCALER = pinned_chart("cluster-autoscaler", namespace="kube-system")

#: AWS Load Balancer Controller (network load balancers of Services, ip targets).
AWS_LOAD_BALANCER_CONTROLLER = pinned_chart("aws-load-balancer-controller", namespace="kube-system")

#: Cluster Autoscaler image tag per Kubernetes minor (``kubernetes.versions`` in the pins).
CLUSTER_AUTOSCALER_IMAGE_TAGS: dict[str, str] = {
    version: pin.cluster_autoscaler_image_tag for version, pin in pins.kubernetes().versions.items()
}

ALL_CHARTS: tuple[HelmChartSpec, ...] = (
    NVIDIA_DEVICE_PLUGIN,
    NEURON_DEVICE_PLUGIN,
    EFA_DEVICE_PLUGIN,
    DCGM_EXPORTER,
    KUEUE,
    KUBEFLOW_TRAINER,
    KUBERAY_OPERATOR,
    LEADER_WORKER_SET,
    CLUSTER_AUTOSCALER,
    AWS_LOAD_BALANCER_CONTROLLER,
)


CRITICAL_ADDONS_TOLERATION: dict[str, str] = {"key": "CriticalAddonsOnly", "operator": "Exists"}
#: HyperPod taints a node it found unhealthy with this; device plugins and GPU telemetry keep
#: running there so the node's health can be checked and it can recover (as the HyperPod
#: dependencies chart of aws/sagemaker-hyperpod-cli sets them).
HYPERPOD_HEALTH_TOLERATION: dict[str, str] = {
    "key": "sagemaker.amazonaws.com/node-health-status",
    "operator": "Equal",
    "value": "Unschedulable",
    "effect": "NoSchedule",
}
#: Tolerations of every per-node agent (device plugins, exporters): every taint, whatever key
#: a node group adds (the RL rollout group's ``workload-role``, a user's own). A DaemonSet only
#: tolerates ``node.kubernetes.io/*`` by itself, and an accelerated node without its device
#: plugin advertises no GPUs or EFA interfaces. Node selectors keep each agent on its nodes.
NODE_AGENT_TOLERATIONS: tuple[dict[str, str], ...] = ({"operator": "Exists"},)


def node_agent_tolerations() -> list[dict[str, str]]:
    return [dict(t) for t in NODE_AGENT_TOLERATIONS]


def nvidia_device_plugin_values() -> dict[str, Any]:
    """Run on NVIDIA nodes only (the chart's default affinity matches ``nvidia.com/gpu.present``)
    and tolerate every taint of their node groups."""
    return {
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": node_agent_tolerations(),
    }


def neuron_device_plugin_values(neuron_instance_types: Sequence[str]) -> dict[str, Any]:
    """Device plugin only (the node monitoring agent add-on covers Neuron health, so the chart's
    node problem detector stays off); ``neuronInstances`` lists the catalog's Neuron types
    because the chart's own default list predates Trainium2."""
    return {
        "neuronInstances": sorted(neuron_instance_types),
        "devicePlugin": {
            "nodeSelector": {NEURON_PRESENT_LABEL: "true"},
            "tolerations": node_agent_tolerations(),
        },
        "npd": {"enabled": False},
    }


def efa_device_plugin_values(efa_instance_types: Sequence[str]) -> dict[str, Any]:
    """The chart pins its DaemonSet to a list of instance types that lags new releases (p5en,
    p6): pass the catalog's EFA types instead, select EFA nodes by label and tolerate every
    taint."""
    return {
        "supportedInstanceLabels": {
            "keys": ["node.kubernetes.io/instance-type"],
            "values": sorted(efa_instance_types),
        },
        "nodeSelector": {EFA_PRESENT_LABEL: "true"},
        "tolerations": node_agent_tolerations(),
    }


#: Where the exporter container reads the counters list (the chart's metrics ConfigMap).
DCGM_COUNTERS_PATH = "/etc/dcgm-exporter/fm-counters.csv"


def dcgm_exporter_values() -> dict[str, Any]:
    """GPU telemetry on NVIDIA nodes only (port 9400), whatever their taints.

    The chart's default counters leave out fields the shipped rules and dashboards read (ECC
    totals, clock-event reasons, SM activity, NVLink bytes). ``customMetrics`` replaces the
    content of the chart's ``exporter-metrics-config-map`` with the package's list (the one the
    HyperPod Slurm nodes use), mounted at :data:`DCGM_COUNTERS_PATH` and passed with ``-f``.
    """
    # Imported here: the hyperpod package imports this module through the EKS cluster.
    from fm_constructs.orchestration.hyperpod.lifecycle_scripts import dcgm_counters

    return {
        # The chart renders a Prometheus Operator ServiceMonitor by default; the operator's
        # CRDs are not installed (the AMP managed scraper collects the metrics), so the
        # install would fail on the unknown kind.
        "serviceMonitor": {"enabled": False},
        # On the node's address, where the managed scraper's node discovery looks for it
        # (fm_constructs/observability/scrape/eks-gpu-cluster.yaml).
        "hostNetwork": True,
        "nodeSelector": {GPU_PRESENT_LABEL: "true"},
        "tolerations": node_agent_tolerations(),
        "customMetrics": dcgm_counters.csv_text(),
        "arguments": ["-f", DCGM_COUNTERS_PATH],
        "extraConfigMapVolumes": [
            {
                "name": "exporter-metrics-volume",
                "configMap": {
                    "name": "exporter-metrics-config-map",
                    "items": [{"key": "metrics", "path": "fm-counters.csv"}],
                },
            }
        ],
        "extraVolumeMounts": [
            {
                "name": "exporter-metrics-volume",
                "mountPath": DCGM_COUNTERS_PATH,
                "subPath": "fm-counters.csv",
            }
        ],
    }


#: Service account of the Cluster Autoscaler (the identity its Pod Identity association maps).
CLUSTER_AUTOSCALER_SERVICE_ACCOUNT = "cluster-autoscaler"


@dataclass(frozen=True)
class ClusterAutoscalerSettings:
    """Scaling behaviour of the Cluster Autoscaler.

    ``expander``: how a node group is chosen when several fit (``least-waste`` keeps the
    fewest idle CPUs/GPUs after the scale-up). ``scale_down_delay_after_add``: no scale-down
    for this long after any scale-up (a GPU node costs minutes to boot and load weights, so it
    is not given back right away). ``scale_down_unneeded_time``: how long a node stays
    unneeded before removal. ``max_node_provision_time``: how long a requested node may take
    to register before the request counts as failed (p5/p6 nodes with the NVIDIA AMI and EFA
    often need more than the upstream default of 15 minutes).
    """

    expander: str = "least-waste"
    scale_down_delay_after_add: str = "10m"
    scale_down_unneeded_time: str = "10m"
    max_node_provision_time: str = "25m"


def cluster_autoscaler_values(
    *, cluster_name: str, region: str, image_tag: str, settings: ClusterAutoscalerSettings
) -> dict[str, Any]:
    """Values of the Cluster Autoscaler chart: auto-discovery of this cluster's node groups
    (the ASG tags EKS puts on managed node groups), the pinned image, the system nodes only
    (never a GPU node, which it might scale away from under itself), and the flags GPU node
    groups need: balance groups split by zone, keep nodes with emptyDir (vLLM copies weights
    to the NVMe instance store through an emptyDir) eligible for scale-down."""
    return {
        "cloudProvider": "aws",
        "awsRegion": region,
        "autoDiscovery": {"clusterName": cluster_name},
        # The chart composes "<image.repository>:<image.tag>" (templates/deployment.yaml), so
        # a pinned digest rides in the tag: "v1.35.2@sha256:...".
        "image": {"tag": pins.image("cluster-autoscaler").tag_reference(image_tag)},
        "fullnameOverride": CLUSTER_AUTOSCALER.release,
        "rbac": {"serviceAccount": {"create": True, "name": CLUSTER_AUTOSCALER_SERVICE_ACCOUNT}},
        "priorityClassName": "system-cluster-critical",
        "nodeSelector": {WORKLOAD_LABEL: "system"},
        "tolerations": [CRITICAL_ADDONS_TOLERATION],
        "extraArgs": {
            "balance-similar-node-groups": True,
            "expander": settings.expander,
            "skip-nodes-with-local-storage": False,
            "scale-down-delay-after-add": settings.scale_down_delay_after_add,
            "scale-down-unneeded-time": settings.scale_down_unneeded_time,
            "max-node-provision-time": settings.max_node_provision_time,
        },
    }


#: Service account of the AWS Load Balancer Controller (mapped by its Pod Identity association).
AWS_LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT = "aws-load-balancer-controller"


def aws_load_balancer_controller_values(
    *, cluster_name: str, region: str, vpc_id: str
) -> dict[str, Any]:
    """Values of the AWS Load Balancer Controller chart: the cluster, Region and VPC given (the
    controller would otherwise read the last two from the instance metadata service, which
    pods on the system nodes cannot reach), on the system nodes, for Services only: the ALB
    add-ons (Shield, WAF, WAFv2) and the default IngressClass off, and no Service mutating
    webhook (it would make the controller the default for every LoadBalancer Service and,
    failing closed, hold their creation while it is down); a Service opts in with
    ``service.beta.kubernetes.io/aws-load-balancer-type: external``."""
    return {
        "clusterName": cluster_name,
        "region": region,
        "vpcId": vpc_id,
        "serviceAccount": {"create": True, "name": AWS_LOAD_BALANCER_CONTROLLER_SERVICE_ACCOUNT},
        "nodeSelector": {WORKLOAD_LABEL: "system"},
        "enableShield": False,
        "enableWaf": False,
        "enableWafv2": False,
        "createIngressClassResource": False,
        "enableServiceMutatorWebhook": False,
    }


def kueue_values() -> dict[str, Any]:
    """Kueue on the system nodes, with its controller configuration
    (:func:`fm_constructs.kubernetes.kueue.manager_config`)."""
    return {
        "controllerManager": {"nodeSelector": {WORKLOAD_LABEL: "system"}},
        "managerConfig": {
            "controllerManagerConfigYaml": yaml.safe_dump(kueue.manager_config(), sort_keys=False)
        },
    }
