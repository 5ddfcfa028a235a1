"""Network isolation of a workload namespace: default deny, and the flows the library needs.

PyTorch's c10d TCPStore and RPC accept pickled data from whoever connects (PyTorch
SECURITY.md: run distributed jobs on trusted networks only), and Ray's and NCCL's bootstrap
ports are no safer, so the pods of one workload must not be reachable from another workload's
pods. Every workload namespace gets a ``default-deny`` NetworkPolicy over all its pods, ingress
and egress, and one policy per flow in :data:`FLOWS` (the table docs/operations/network-policy.md
shows; tests check every rendered policy against it).

What is not pod traffic is not filtered: EFA (not IP), the Lustre client (in the node's
kernel), host-network exporters (DCGM, node, EFA) and the kubelet's image pulls.

The VPC CNI enforces these objects once its network policy agent is on (the add-on's
``enableNetworkPolicy``, which :class:`~fm_constructs.orchestration.eks_addons.ClusterAddons`
sets); pods that no policy selects are not affected.

Floor 2 renderer: plain dicts, no aws_cdk import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fm_constructs.domain import job_metrics

API_VERSION = "networking.k8s.io/v1"
#: The EKS Pod Identity agent's link-local address (EKS user guide, "EKS Pod Identity"): pods
#: fetch their credentials from it over HTTP.
POD_IDENTITY_AGENT = "169.254.170.23/32"
POD_IDENTITY_AGENT_PORT = 80
#: CoreDNS as EKS deploys it: kube-system pods labelled k8s-app=kube-dns.
DNS_NAMESPACE = "kube-system"
DNS_POD_LABELS = {"k8s-app": "kube-dns"}
DNS_PORT = 53
HTTPS_PORT = 443
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True)
class Flow:
    """One allowed flow of a workload namespace (a row of the documented table).

    ``name``: the NetworkPolicy's name; ``direction``: ``Ingress`` or ``Egress``; ``peer``:
    who is on the other side (``namespace``: the namespace's own pods; ``kube-dns``; ``vpc``:
    the VPC's addresses; ``anywhere``; ``pod-identity-agent``; ``operator``: the pods of an
    operator's namespace); ``ports``: (protocol, port) pairs, empty for every port;
    ``workloads``: the workload kinds that get it (empty: all); ``why``: the reason.
    """

    name: str
    direction: str
    peer: str
    ports: tuple[tuple[str, int | str], ...]
    workloads: tuple[str, ...]
    why: str


#: The named port of the model server's container (inference_manifests renders it).
MODEL_SERVER_PORT_NAME = "http"

FLOWS: tuple[Flow, ...] = (
    Flow(
        "allow-same-namespace",
        "Ingress",
        "namespace",
        (),
        (),
        "the workload's own pods talk to each other on any port: torchrun/c10d rendezvous, "
        "NCCL bootstrap, Ray (post-training rollouts, multi-node model servers)",
    ),
    Flow(
        "allow-same-namespace",
        "Egress",
        "namespace",
        (),
        (),
        "the other side of the same flows",
    ),
    Flow(
        "allow-dns",
        "Egress",
        "kube-dns",
        (("UDP", DNS_PORT), ("TCP", DNS_PORT)),
        (),
        "name resolution through CoreDNS in kube-system",
    ),
    Flow(
        "allow-aws-apis",
        "Egress",
        "anywhere",
        (("TCP", HTTPS_PORT),),
        (),
        "HTTPS to AWS APIs (S3, STS, the Kubernetes API server) and registries; other "
        "workloads' pods stay closed by their own ingress policies",
    ),
    Flow(
        "allow-pod-identity-agent",
        "Egress",
        "pod-identity-agent",
        (("TCP", POD_IDENTITY_AGENT_PORT),),
        (),
        "credentials from the EKS Pod Identity agent on the node",
    ),
    Flow(
        "allow-metrics-scraper",
        "Ingress",
        "vpc",
        (("TCP", job_metrics.METRICS_PORT),),
        ("pretraining", "post_training"),
        "the managed Prometheus collector (its interfaces are in the cluster's subnets) "
        "scrapes the job-metrics port",
    ),
    Flow(
        "allow-model-server",
        "Ingress",
        "vpc",
        (("TCP", MODEL_SERVER_PORT_NAME),),
        ("inference",),
        "the model server's Network Load Balancer (IP targets: it connects from its own "
        "addresses in the VPC) and the managed collector scraping the server's metrics, on "
        "the server port only",
    ),
    Flow(
        "allow-kuberay-operator",
        "Ingress",
        "operator",
        (),
        ("post_training",),
        "the KubeRay operator calls the Ray head's dashboard to submit and follow RayJobs",
    ),
)


def flows_for(workload: str) -> tuple[Flow, ...]:
    """The flows of workload kind ``workload`` (a custom workload gets the common ones)."""
    return tuple(f for f in FLOWS if not f.workloads or workload in f.workloads)


def _ports(flow: Flow) -> list[dict[str, Any]]:
    return [{"protocol": protocol, "port": port} for protocol, port in flow.ports]


def _peers(
    flow: Flow, *, vpc_cidrs: Sequence[str], operator_namespace: str | None
) -> list[dict[str, Any]]:
    if flow.peer == "namespace":
        return [{"podSelector": {}}]
    if flow.peer == "kube-dns":
        return [
            {
                "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: DNS_NAMESPACE}},
                "podSelector": {"matchLabels": dict(DNS_POD_LABELS)},
            }
        ]
    if flow.peer == "anywhere":
        return [{"ipBlock": {"cidr": "0.0.0.0/0"}}]
    if flow.peer == "pod-identity-agent":
        return [{"ipBlock": {"cidr": POD_IDENTITY_AGENT}}]
    if flow.peer == "vpc":
        return [{"ipBlock": {"cidr": cidr}} for cidr in vpc_cidrs]
    if flow.peer == "operator":
        if operator_namespace is None:
            return []
        return [{"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: operator_namespace}}}]
    raise ValueError(f"unknown peer {flow.peer!r}")


def network_policies(
    namespace: str,
    workload: str,
    *,
    vpc_cidrs: Sequence[str],
    kuberay_namespace: str | None = None,
) -> list[dict[str, Any]]:
    """``default-deny`` and one NetworkPolicy per flow of ``workload`` in ``namespace``.

    ``vpc_cidrs``: the cluster VPC's CIDR blocks (may be deploy-time tokens); with none, the
    flows from the VPC are not rendered (nothing outside the namespace reaches its pods).
    ``kuberay_namespace``: where the KubeRay operator runs, when it does."""
    policies: list[dict[str, Any]] = [deny_all(namespace)]
    merged: dict[str, dict[str, Any]] = {}
    for flow in flows_for(workload):
        peers = _peers(flow, vpc_cidrs=vpc_cidrs, operator_namespace=kuberay_namespace)
        if not peers:
            continue
        rule: dict[str, Any] = {("from" if flow.direction == "Ingress" else "to"): peers}
        if flow.ports:
            rule["ports"] = _ports(flow)
        policy = merged.setdefault(
            flow.name,
            {
                "apiVersion": API_VERSION,
                "kind": "NetworkPolicy",
                "metadata": {"name": flow.name, "namespace": namespace},
                "spec": {"podSelector": {}, "policyTypes": []},
            },
        )
        spec = policy["spec"]
        spec["policyTypes"].append(flow.direction)
        spec.setdefault(flow.direction.lower(), []).append(rule)
    policies.extend(merged.values())
    return policies


def deny_all(namespace: str) -> dict[str, Any]:
    """The ``default-deny`` policy alone: a namespace whose pods need no network (the
    privileged diagnostics namespace)."""
    return {
        "apiVersion": API_VERSION,
        "kind": "NetworkPolicy",
        "metadata": {"name": "default-deny", "namespace": namespace},
        "spec": {"podSelector": {}, "policyTypes": ["Ingress", "Egress"]},
    }


__all__ = [
    "FLOWS",
    "Flow",
    "deny_all",
    "flows_for",
    "network_policies",
]
