"""The EKS side of the Kubernetes version table: aws-cdk-lib's version object and the kubectl
layer of each supported version.

The table itself (versions, dates, default) is floor 1, in
:mod:`fm_constructs.planning.kubernetes_versions`, so the profile loader checks a version
without importing aws_cdk; this module adds what only a construct needs.
"""

from __future__ import annotations

import importlib
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.planning.kubernetes_versions import (
    DEFAULT_KUBERNETES_VERSION,
    SUPPORTED_VERSIONS,
    SupportedVersion,
)
from fm_constructs.rules.platform import kubernetes_version


def eks_version(entry: SupportedVersion) -> eks.KubernetesVersion:
    """aws-cdk-lib's ``KubernetesVersion`` member of ``entry`` (an attribute error if
    aws-cdk-lib does not know the version)."""
    member: eks.KubernetesVersion = getattr(
        eks.KubernetesVersion, "V" + entry.version.replace(".", "_")
    )
    return member


for _entry in SUPPORTED_VERSIONS.values():
    _ = eks_version(_entry)  # every pinned version must be one aws-cdk-lib knows


def resolve_version(version: str, problems: Problems) -> SupportedVersion | None:
    """The supported entry for ``version`` ("1.35"), or None after recording a problem."""
    found = kubernetes_version(version)
    problems.add_findings(found)
    return None if found else SUPPORTED_VERSIONS.get(version.strip())


def kubectl_layer(
    scope: Construct, construct_id: str, entry: SupportedVersion, problems: Problems
) -> lambda_.ILayerVersion | None:
    """A kubectl/helm layer matching ``entry`` from its PyPI package, or None after recording a
    problem that names the package to install."""
    try:
        module: Any = importlib.import_module(entry.layer_module)
    except ImportError:
        problems.add(
            "kubernetes_version",
            entry.version,
            f"needs the kubectl layer package: pip install '{entry.layer_package}' (or pass "
            f"kubectl_layer=, or use the default {DEFAULT_KUBERNETES_VERSION})",
        )
        return None
    layer: lambda_.ILayerVersion = getattr(module, entry.layer_class)(scope, construct_id)
    return layer
