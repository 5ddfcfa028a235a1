"""A workload's namespaces and service account on a shared cluster.

Pod Security Admission (Kubernetes "Pod Security Standards"), by namespace:

* the workload namespace enforces ``baseline``: no privileged containers, host namespaces
  (network, PID, IPC), hostPath volumes, host ports or capabilities beyond the default set.
  Training and serving pods need none of these: GPUs, EFA interfaces and hugepages are
  extended resources the device plugins and the kubelet hand out, ``/dev/shm`` is a memory
  ``emptyDir``, FSx comes through its CSI claim, and EKS AMIs run containers with an unlimited
  locked-memory limit, so EFA needs no ``IPC_LOCK``. ``restricted`` is not enforced: it requires
  non-root users, and the NGC, Deep Learning Containers and vLLM images run as root. ``warn``
  is ``baseline`` too (it also checks Jobs, Deployments and TrainJobs when applied, where
  ``enforce`` only rejects their pods later), and ``audit`` is ``restricted``, so the audit log
  shows what would have to change for it;
* the diagnostics namespace (:func:`diagnostics_namespace`) is ``privileged``: the DCGM level-2
  diagnostic needs SYS_ADMIN. It holds no AWS identity and no Kueue queue, and its network
  policy denies all traffic, so a privileged pod there reaches nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fm_constructs.domain import names
from fm_constructs.kubernetes.network_policy import deny_all, network_policies
from fm_constructs.kubernetes.objects import service_account

#: Pod Security Admission label prefix (``enforce``, ``audit``, ``warn`` and ``-version``).
POD_SECURITY_LABEL = "pod-security.kubernetes.io/"
#: The Pod Security Standards levels, least to most restrictive.
POD_SECURITY_LEVELS = ("privileged", "baseline", "restricted")
#: The level workload namespaces enforce (module docstring: why).
WORKLOAD_POD_SECURITY = "baseline"
#: The level recorded in the audit log for workload namespaces.
WORKLOAD_POD_SECURITY_AUDIT = "restricted"


def pod_security_labels(enforce: str, *, audit: str | None = None) -> dict[str, str]:
    """Labels that make Pod Security Admission enforce and warn at ``enforce`` and audit at
    ``audit`` (default ``enforce``), at the cluster's own version of the standards."""
    audit = audit or enforce
    for level in (enforce, audit):
        if level not in POD_SECURITY_LEVELS:
            raise ValueError(f"Pod Security level {level!r} is not one of {POD_SECURITY_LEVELS}")
    return {
        f"{POD_SECURITY_LABEL}enforce": enforce,
        f"{POD_SECURITY_LABEL}enforce-version": "latest",
        f"{POD_SECURITY_LABEL}warn": enforce,
        f"{POD_SECURITY_LABEL}warn-version": "latest",
        f"{POD_SECURITY_LABEL}audit": audit,
        f"{POD_SECURITY_LABEL}audit-version": "latest",
    }


def namespace(name: str, *, kueue_managed: bool = True) -> dict[str, Any]:
    """The workload namespace, enforcing Pod Security ``baseline``. ``kueue_managed`` adds the
    label Kueue's webhooks select on, so jobs here are admitted through the workload's
    LocalQueue."""
    labels = pod_security_labels(WORKLOAD_POD_SECURITY, audit=WORKLOAD_POD_SECURITY_AUDIT)
    if kueue_managed:
        labels[names.KUEUE_MANAGED_LABEL] = "true"
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def diagnostics_namespace(workload: str) -> dict[str, Any]:
    """The workload's privileged diagnostics namespace (not Kueue-managed: run diagnostics
    while the nodes are idle)."""
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": names.diagnostics_namespace(workload),
            "labels": pod_security_labels("privileged"),
        },
    }


def namespace_objects(workload: str, *, kueue_managed: bool) -> list[dict[str, Any]]:
    """The namespaces a workload owns, in apply order: its namespace (Pod Security
    ``baseline``) and service account, and its privileged diagnostics namespace."""
    name = names.workload_namespace(workload)
    return [
        namespace(name, kueue_managed=kueue_managed),
        service_account(names.service_account_name(workload), name),
        diagnostics_namespace(workload),
    ]


def namespace_network_policies(
    workload: str, *, vpc_cidrs: Sequence[str], kuberay_namespace: str | None = None
) -> list[dict[str, Any]]:
    """The network policies of a workload's namespaces: default deny and the flows of
    :mod:`fm_constructs.kubernetes.network_policy` in the workload namespace, deny-all in its
    diagnostics namespace."""
    return [
        *network_policies(
            names.workload_namespace(workload),
            workload,
            vpc_cidrs=vpc_cidrs,
            kuberay_namespace=kuberay_namespace,
        ),
        deny_all(names.diagnostics_namespace(workload)),
    ]
