"""A workload's namespace and service account on a shared cluster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fm_constructs.domain import names


def namespace(name: str, *, kueue_managed: bool = True) -> dict[str, Any]:
    """The workload namespace. ``kueue_managed`` adds the label Kueue's webhooks select on, so
    jobs here are admitted through the workload's LocalQueue."""
    labels = {names.KUEUE_MANAGED_LABEL: "true"} if kueue_managed else {}
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = labels
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def service_account(
    name: str, namespace_name: str, *, labels: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """A service account; its AWS permissions come from an EKS Pod Identity association."""
    metadata: dict[str, Any] = {"name": name, "namespace": namespace_name}
    if labels:
        metadata["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": metadata}
