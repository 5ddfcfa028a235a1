"""The EFA exporter of an EKS GPU cluster (plain dicts, no aws_cdk import): a DaemonSet on EFA
nodes (tolerating every taint) on the host network at :data:`EFA_EXPORTER_PORT`, the pinned
node-exporter image with only its textfile collector, fed by the counters script, which turns
each EFA device's ``hw_counters`` into the ``node_amazonefa_*`` series the HyperPod EFA exporter
publishes, and the Lustre client's llite statistics into ``fm_lustre_client_*``.

Privilege of the counters container: the FSx client (Lustre 2.15) keeps the llite statistics
in debugfs only, which the kernel mounts with mode 0700, owner root; reading it takes uid 0 and
nothing more, so the container runs as uid 0 with every capability dropped, no privilege
escalation and a read-only root file system, and sees only the host paths of
:data:`HOST_PATHS`, read-only (sources in
:mod:`fm_constructs.orchestration.eks_metrics_sources`, which installs it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fm_constructs import pins
from fm_constructs.domain import ports

#: Namespace of the metrics sources this module installs.
NAMESPACE = "monitoring"
NODE_EXPORTER_PORT = ports.NODE_EXPORTER_PORT
KUBE_STATE_METRICS_PORT = ports.KUBE_STATE_METRICS_PORT
EFA_EXPORTER_PORT = ports.EFA_EXPORTER_PORT
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

#: Tolerates every taint: node-level exporters belong on every node their selector matches,
#: whatever taints a node group adds (GPU, Neuron, EFA, rollout or user taints).
TOLERATE_EVERYTHING: dict[str, str] = {"operator": "Exists"}


def efa_exporter_manifests(
    *, script: str, node_selector: Mapping[str, str]
) -> list[dict[str, Any]]:
    """Namespace, the ConfigMap of the counters ``script`` and the EFA exporter DaemonSet on
    the nodes ``node_selector`` selects (see the module docstring)."""
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
            "data": {COUNTERS_SCRIPT: script},
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
                        "nodeSelector": dict(node_selector),
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
