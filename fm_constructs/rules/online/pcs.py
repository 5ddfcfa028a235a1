"""Online rule: no other AWS PCS cluster is being created in the region (pcs:ListClusters):
PCS creates one cluster per account and region at a time (``CreateCluster`` fails with
``ServiceQuotaExceededException`` otherwise)."""

from __future__ import annotations

from typing import Any

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.planning.pcs_limits import CLUSTERS_CREATING_PER_REGION
from fm_constructs.rules.findings import define
from fm_constructs.rules.online.aws import ask_pages

PCS_CREATING = define(
    "FM711",
    "Another AWS PCS cluster is being created in the region: PCS creates one cluster per "
    "account and region at a time, so this deployment's cluster would fail to create.",
    "Wait until that cluster is ACTIVE (aws pcs list-clusters), then deploy.",
    severity=None,
)


def no_cluster_creating(pcs: Any, region: str) -> list[Finding]:
    """A warning naming the clusters in ``CREATING``; an info when there are none."""
    pages = ask_pages(pcs, "list_clusters", "pcs:ListClusters", token="nextToken")
    creating = [
        str(c.get("name"))
        for page in pages
        for c in page.get("clusters", [])
        if str(c.get("status", "")).upper() == "CREATING"
    ]
    if creating:
        detail = (
            f"PCS is creating {', '.join(creating)} in {region}; it creates one cluster per "
            f"account and region at a time (at most {CLUSTERS_CREATING_PER_REGION})"
        )
        fix = "wait until it is ACTIVE (aws pcs list-clusters), then deploy"
        return [Finding(PCS_CREATING.code, Severity.WARNING, "", None, detail, fix)]
    detail = f"no PCS cluster is being created in {region}"
    return [Finding(PCS_CREATING.code, Severity.INFO, "", None, detail)]
