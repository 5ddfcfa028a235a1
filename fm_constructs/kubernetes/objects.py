"""Plain core objects several components need: a namespace without labels, a service account,
and the cluster-wide RBAC role and binding (plain dicts, no aws_cdk import)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

RBAC_API_VERSION = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"


def plain_namespace(name: str) -> dict[str, Any]:
    """A namespace with no labels (components' own namespaces; workload namespaces carry Pod
    Security labels: :func:`fm_constructs.kubernetes.workload.namespace`)."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def service_account(
    name: str, namespace_name: str, *, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A service account; its AWS permissions come from an EKS Pod Identity association."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace_name}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}


def cluster_role(name: str, rules: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A ClusterRole granting ``rules``."""
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [dict(rule) for rule in rules],
    }


def cluster_role_binding(
    name: str, role: str, subjects: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    """A ClusterRoleBinding of ``subjects`` to the ClusterRole ``role``."""
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role},
        "subjects": [dict(subject) for subject in subjects],
    }
