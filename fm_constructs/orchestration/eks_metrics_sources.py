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

from fm_constructs.kubernetes.efa_exporter import (
    COUNTERS_SCRIPT,
    KUBE_STATE_METRICS_PORT,
    NAMESPACE,
    NODE_EXPORTER_PORT,
    TOLERATE_EVERYTHING,
    efa_exporter_manifests,
)
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster

if TYPE_CHECKING:
    from fm_constructs.orchestration.cluster_interface import IGpuCluster

NODE_EXPORTER = charts.pinned_chart("prometheus-node-exporter", namespace=NAMESPACE)
KUBE_STATE_METRICS = charts.pinned_chart("kube-state-metrics", namespace=NAMESPACE)


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


#: The nodes the EFA exporter runs on.
EFA_NODES: dict[str, str] = {charts.EFA_PRESENT_LABEL: "true"}


def counters_script() -> str:
    """The packaged counters script (POSIX sh, run by the image's busybox)."""
    package = resources.files("fm_constructs.orchestration") / "metrics_scripts"
    return (package / COUNTERS_SCRIPT).read_text(encoding="utf-8")


class EksMetricsSources(Construct):
    """The node exporter, kube-state-metrics and the EFA exporter of one cluster.

    Use :meth:`enable`: one instance per cluster, a child ``MetricsSources`` of the cluster
    construct. Its child ``Manifest`` holds the namespace, script and EFA exporter DaemonSet;
    the two charts join the cluster's pinned charts (:meth:`GpuEksCluster.add_pinned_chart`)
    and install after the manifest that creates their namespace.
    """

    ID = "MetricsSources"

    def __init__(self, scope: Construct, construct_id: str, *, cluster: IGpuCluster) -> None:
        super().__init__(scope, construct_id)
        self.manifest = eks.KubernetesManifest(
            self,
            "Manifest",
            cluster=cluster.icluster,
            manifest=efa_exporter_manifests(script=counters_script(), node_selector=EFA_NODES),
        )
        self.manifest.node.add_dependency(cluster.system_nodes)
        self.node_exporter = cluster.add_pinned_chart(NODE_EXPORTER, node_exporter_values())
        self.kube_state_metrics = cluster.add_pinned_chart(
            KUBE_STATE_METRICS, kube_state_metrics_values()
        )
        for chart in (self.node_exporter, self.kube_state_metrics):
            chart.node.add_dependency(self.manifest)

    @classmethod
    def enable(cls, cluster: IGpuCluster) -> EksMetricsSources:
        """The metrics sources of ``cluster``, installed on first use."""
        return cluster.addon_registry.install(
            cls.ID, lambda scope, construct_id: cls(scope, construct_id, cluster=cluster)
        )
