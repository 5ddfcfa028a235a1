"""Online rule: EKS offers the profile's Kubernetes version in the region, in standard support
(eks:DescribeClusterVersions)."""

from __future__ import annotations

from typing import Any

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.rules.findings import define
from fm_constructs.rules.online.aws import ask_required

EKS_VERSION = define(
    "FM709",
    "EKS does not offer the Kubernetes version in this region, or it is past standard "
    "support (extended support costs more per cluster hour).",
    "Choose a version EKS supports (platform.kubernetes_version).",
    severity=None,
)


def _found(severity: Severity, detail: str, fix: str = "") -> list[Finding]:
    return [Finding(EKS_VERSION.code, severity, "", None, detail, fix)]


def kubernetes_version_supported(eks: Any, version: str, region: str) -> list[Finding]:
    """``version`` is in standard support (an info), extended support (a warning: it is billed
    higher) or neither (an error). A botocore without the operation cannot tell: no finding."""
    if not hasattr(eks, "describe_cluster_versions"):
        return []
    answer = ask_required(
        eks, "describe_cluster_versions", "eks:DescribeClusterVersions", clusterVersions=[version]
    )
    versions = answer.get("clusterVersions", [])
    if not versions:
        return _found(
            Severity.ERROR,
            f"EKS does not offer Kubernetes {version} in {region}",
            "choose a version listed by aws eks describe-cluster-versions",
        )
    v = versions[0]
    status = str(v.get("versionStatus") or v.get("status") or "unknown").upper()
    end = v.get("endOfStandardSupportDate")
    end_text = f", standard support until {end:%Y-%m-%d}" if end else ""
    detail = f"Kubernetes {version}: {status}{end_text}"
    if status == "STANDARD_SUPPORT":
        return _found(Severity.INFO, detail)
    if status == "EXTENDED_SUPPORT":
        return _found(
            Severity.WARNING,
            detail,
            "extended support is billed at a higher cluster-hour rate; move to a version in "
            "standard support",
        )
    return _found(Severity.ERROR, detail, "choose a supported Kubernetes version")
