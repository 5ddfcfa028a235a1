"""What the AMP managed scraper may read in a cluster (plain dicts, no aws_cdk import): the
ClusterRole and ClusterRoleBinding of its Kubernetes user, applied by hand on clusters whose
authentication mode is ``CONFIG_MAP`` (see :mod:`fm_constructs.observability.scraper`)."""

from __future__ import annotations

from typing import Any

#: Kubernetes user name the scraper's role is mapped to (the AMP user guide's name).
SCRAPER_KUBERNETES_USERNAME = "aps-collector-user"
SCRAPER_CLUSTER_ROLE = "aps-collector-role"
SCRAPER_CLUSTER_ROLE_BINDING = "aps-collector-user-role-binding"


def scraper_rbac_manifests() -> list[dict[str, Any]]:
    """ClusterRole and ClusterRoleBinding for the scraper user, least privilege for the
    shipped configuration: discovery of pods, nodes, services, endpoints and endpoint slices,
    and GET of ``/metrics`` (API server metrics) — no secrets, no write verbs."""
    return [
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": SCRAPER_CLUSTER_ROLE},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["nodes", "nodes/metrics", "services", "endpoints", "pods"],
                    "verbs": ["get", "list", "watch"],
                },
                {
                    "apiGroups": ["discovery.k8s.io"],
                    "resources": ["endpointslices"],
                    "verbs": ["get", "list", "watch"],
                },
                {"nonResourceURLs": ["/metrics"], "verbs": ["get"]},
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": SCRAPER_CLUSTER_ROLE_BINDING},
            "subjects": [
                {
                    "kind": "User",
                    "name": SCRAPER_KUBERNETES_USERNAME,
                    "apiGroup": "rbac.authorization.k8s.io",
                }
            ],
            "roleRef": {
                "kind": "ClusterRole",
                "name": SCRAPER_CLUSTER_ROLE,
                "apiGroup": "rbac.authorization.k8s.io",
            },
        },
    ]
