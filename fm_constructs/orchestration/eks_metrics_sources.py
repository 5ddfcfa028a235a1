"""Metrics sources on an EKS GPU cluster: what the managed scraper scrapes besides DCGM.

- **node exporter** (prometheus-community chart, pinned): CPU, memory, network and the Lustre
  mounts' capacity, on every node (it tolerates every taint), on the host network at 9100;
- **kube-state-metrics** (prometheus-community chart, pinned) on the system nodes, port 8080:
  node readiness, GPU capacity and allocatable, and the nodes' ``fm-constructs/workload``
  label (``kube_node_labels``) that the rules use to name a node's workload;
- **EFA exporter**: a DaemonSet on EFA nodes (tolerating every taint) on the host network at
  9109: the pinned node-exporter image with only its textfile collector, fed by
  ``metrics_scripts/node_counters.sh``, which turns each EFA device's ``hw_counters`` into the
  ``node_amazonefa_*`` series the HyperPod EFA exporter publishes, and the Lustre client's llite
  statistics into ``fm_lustre_client_*``.

Privilege of the counters container: the FSx client (Lustre 2.15) keeps the llite statistics
in debugfs only (lustre-release v2_15_8 ``lustre/llite/lproc_llite.c``,
``ll_debugfs_register_super``: ``debugfs_create_file("stats", 0644, ...)`` under
``<debugfs>/lustre/llite/<fs>-<sb>/``), and the kernel mounts debugfs with mode 0700, owner root
(``fs/debugfs/inode.c``, ``DEBUGFS_DEFAULT_MODE``). Reading it takes uid 0 and nothing more: the
owner's permission bits admit root without any capability. So the container runs as uid 0 with
every capability dropped, no privilege escalation and a read-only root file system, and sees
only what it reads, read-only: ``/sys/class`` and ``/sys/devices`` (the EFA ``hw_counters``,
world-readable, reached through ``/sys/class/infiniband`` symlinks) and ``/sys/kernel/debug``
(recursively read-only where the runtime supports it, so tracefs below it stays read-only too).
The exporter container stays uid 65534. ``/proc/fs/lustre`` (older clients) is not
per-namespace, so the container's own ``/proc`` shows it.

The DCGM exporter is installed with the NVIDIA device plugin by the cluster itself (its values
put it on the host network at 9400, with the library's counters list). Ports and discovery are
those of ``fm_constructs/observability/scrape/eks-gpu-cluster.yaml``.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_eks_v2 as eks
from constructs import Construct

from fm_constructs import pins
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster

if TYPE_CHECKING:
    pass

#: Namespace of the metrics sources this module installs.
NAMESPACE = "monitoring"
NODE_EXPORTER_PORT = 9100
KUBE_STATE_METRICS_PORT = 8080
EFA_EXPORTER_PORT = 9109
EFA_EXPORTER_NAME = "efa-exporter"
#: Where the counters script writes and the textfile collector reads.
TEXTFILE_DIRECTORY = "/run/fm-metrics"
COUNTERS_SCRIPT = "node_counters.sh"
#: Where the counters container sees the host's sysfs, and the host paths it mounts there
#: (volume name, host path): EFA hw_counters and their device directories, and debugfs.
HOST_SYSFS = "/host/sys"
HOST_PATHS: tuple[tuple[str, str], ...] = (
    ("sys-class", "/sys/class"),
    ("sys-devices", "/sys/devices"),
    ("debugfs", "/sys/kernel/debug"),
)

NODE_EXPORTER = charts.pinned_chart("prometheus-node-exporter", namespace=NAMESPACE)
KUBE_STATE_METRICS = charts.pinned_chart("kube-state-metrics", namespace=NAMESPACE)

#: Tolerates every taint: node-level exporters belong on every node their selector matches,
#: whatever taints a node group adds (GPU, Neuron, EFA, rollout or user taints).
TOLERATE_EVERYTHING: dict[str, str] = {"operator": "Exists"}


def node_exporter_values() -> dict[str, Any]:
    """Every node, host network on :data:`NODE_EXPORTER_PORT`, node-critical priority."""
    return {
        "hostNetwork": True,
        "service": {"port": NODE_EXPORTER_PORT, "targetPort": NODE_EXPORTER_PORT},
        "tolerations": [TOLERATE_EVERYTHING],
        "priorityClassName": "system-node-critical",
    }


def kube_state_metrics_values() -> dict[str, Any]:
    """On the system nodes; exports the nodes' workload label as ``label_fm_constructs_workload``
    of ``kube_node_labels`` (kube-state-metrics exports no Kubernetes label unless allowed)."""
    return {
        "service": {"port": KUBE_STATE_METRICS_PORT},
        "metricLabelsAllowlist": [f"nodes=[{charts.WORKLOAD_LABEL}]"],
        "nodeSelector": {charts.WORKLOAD_LABEL: "system"},
        "tolerations": [charts.CRITICAL_ADDONS_TOLERATION],
        "priorityClassName": "system-cluster-critical",
    }


def counters_script() -> str:
    """The packaged counters script (POSIX sh, run by the image's busybox)."""
    package = resources.files("fm_constructs.orchestration") / "metrics_scripts"
    return (package / COUNTERS_SCRIPT).read_text(encoding="utf-8")


def efa_exporter_manifests() -> list[dict[str, Any]]:
    """Namespace, script ConfigMap and the EFA exporter DaemonSet (see the module docstring)."""
    image = pins.image("node-exporter").reference
    labels = {"app.kubernetes.io/name": EFA_EXPORTER_NAME}
    read_only = {"runAsNonRoot": True, "runAsUser": 65534, "readOnlyRootFilesystem": True}
    exporter = {
        "name": "node-exporter",
        "image": image,
        "args": [
            f"--web.listen-address=:{EFA_EXPORTER_PORT}",
            "--collector.disable-defaults",
            "--collector.textfile",
            f"--collector.textfile.directory={TEXTFILE_DIRECTORY}",
        ],
        "ports": [{"name": "metrics", "containerPort": EFA_EXPORTER_PORT, "protocol": "TCP"}],
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "64Mi"}},
        "securityContext": {
            **read_only,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [{"name": "textfile", "mountPath": TEXTFILE_DIRECTORY}],
    }
    counters = {
        "name": "counters",
        "image": image,
        "command": ["/bin/sh", f"/opt/fm/{COUNTERS_SCRIPT}"],
        "env": [
            {"name": "SYSFS", "value": HOST_SYSFS},
            {"name": "PROCFS", "value": "/proc"},
            {"name": "OUT", "value": TEXTFILE_DIRECTORY},
            {"name": "INTERVAL", "value": "15"},
        ],
        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
        # uid 0 without capabilities: the debugfs root is 0700 root (module docstring).
        "securityContext": {
            "runAsUser": 0,
            "runAsNonRoot": False,
            "readOnlyRootFilesystem": True,
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "textfile", "mountPath": TEXTFILE_DIRECTORY},
            {"name": "script", "mountPath": "/opt/fm", "readOnly": True},
            *(
                {
                    "name": volume,
                    "mountPath": f"{HOST_SYSFS}{path.removeprefix('/sys')}",
                    "readOnly": True,
                    **({"recursiveReadOnly": "IfPossible"} if volume == "debugfs" else {}),
                }
                for volume, path in HOST_PATHS
            ),
        ],
    }
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{EFA_EXPORTER_NAME}-script", "namespace": NAMESPACE},
            "data": {COUNTERS_SCRIPT: counters_script()},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": EFA_EXPORTER_NAME, "namespace": NAMESPACE, "labels": labels},
            "spec": {
                "selector": {"matchLabels": labels},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "hostNetwork": True,
                        "dnsPolicy": "ClusterFirstWithHostNet",
                        "priorityClassName": "system-node-critical",
                        "nodeSelector": {charts.EFA_PRESENT_LABEL: "true"},
                        "tolerations": [TOLERATE_EVERYTHING],
                        "automountServiceAccountToken": False,
                        "containers": [exporter, counters],
                        "volumes": [
                            {"name": "textfile", "emptyDir": {"medium": "Memory"}},
                            {
                                "name": "script",
                                "configMap": {"name": f"{EFA_EXPORTER_NAME}-script"},
                            },
                            *(
                                {"name": volume, "hostPath": {"path": path, "type": "Directory"}}
                                for volume, path in HOST_PATHS
                            ),
                        ],
                    },
                },
            },
        },
    ]


class EksMetricsSources(Construct):
    """The node exporter, kube-state-metrics and the EFA exporter of one cluster.

    Use :meth:`of`: one instance per cluster, a child ``MetricsSources`` of the cluster
    construct. Its child ``Manifest`` holds the namespace, script and EFA exporter DaemonSet;
    the two charts join the cluster's pinned charts (:meth:`GpuEksCluster.add_pinned_chart`)
    and install after the manifest that creates their namespace.
    """

    ID = "MetricsSources"

    def __init__(self, scope: Construct, construct_id: str, *, cluster: IGpuCluster) -> None:
        super().__init__(scope, construct_id)
        self.manifest = eks.KubernetesManifest(
            self, "Manifest", cluster=cluster.icluster, manifest=efa_exporter_manifests()
        )
        self.manifest.node.add_dependency(cluster.system_nodes)
        self.node_exporter = cluster.add_pinned_chart(NODE_EXPORTER, node_exporter_values())
        self.kube_state_metrics = cluster.add_pinned_chart(
            KUBE_STATE_METRICS, kube_state_metrics_values()
        )
        for chart in (self.node_exporter, self.kube_state_metrics):
            chart.node.add_dependency(self.manifest)

    @classmethod
    def of(cls, cluster: IGpuCluster) -> EksMetricsSources:
        """The metrics sources of ``cluster``, installed on first use."""
        return cluster.addon_registry.install(
            cls.ID, lambda scope, construct_id: cls(scope, construct_id, cluster=cluster)
        )
