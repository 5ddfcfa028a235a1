"""Kubernetes versions this library deploys on EKS, each with its kubectl Lambda layer package.

A version is supported when EKS offers it in standard support (14 months from its EKS release),
aws-cdk-lib's ``KubernetesVersion`` knows it, and a ``aws-cdk.lambda-layer-kubectl-v1XX``
package exists on PyPI for the kubectl/helm custom resources. Only the default version's
layer package is a dependency of the library; other versions need their package installed
(the error says which).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from fm_constructs.errors import Problems


@dataclass(frozen=True)
class SupportedVersion:
    """A Kubernetes minor version with its EKS end of standard support (ISO date, None when
    not yet published) and the PyPI package and module that bundle the matching kubectl."""

    version: str
    end_of_standard_support: str | None
    eks_version: eks.KubernetesVersion

    @property
    def _suffix(self) -> str:
        return self.version.replace("1.", "", 1)

    @property
    def layer_package(self) -> str:
        return f"aws-cdk.lambda-layer-kubectl-v{self._suffix}"

    @property
    def layer_module(self) -> str:
        return f"aws_cdk.lambda_layer_kubectl_v{self._suffix}"

    @property
    def layer_class(self) -> str:
        return f"KubectlV{self._suffix}Layer"


#: Standard-support end dates from the EKS Kubernetes release calendar
#: (https://docs.aws.amazon.com/eks/latest/userguide/kubernetes-versions.html). 1.36's EKS
#: release is confirmed by aws-cdk-lib's enum only, so its end date is left open.
SUPPORTED_VERSIONS: dict[str, SupportedVersion] = {
    "1.34": SupportedVersion("1.34", "2026-12-02", eks.KubernetesVersion.V1_34),
    "1.35": SupportedVersion("1.35", "2027-03-27", eks.KubernetesVersion.V1_35),
    "1.36": SupportedVersion("1.36", None, eks.KubernetesVersion.V1_36),
}
DEFAULT_KUBERNETES_VERSION = "1.35"
#: Versions whose standard support ends within a few months of this release of the library.
ENDING_SOON = frozenset({"1.34"})


def resolve_version(version: str, problems: Problems) -> SupportedVersion | None:
    """The supported entry for ``version`` ("1.35"), or None after recording a problem."""
    entry = SUPPORTED_VERSIONS.get(version.strip())
    if entry is None:
        problems.add(
            "kubernetes_version",
            version,
            f"must be a Kubernetes version in EKS standard support: "
            f"{', '.join(SUPPORTED_VERSIONS)} (default {DEFAULT_KUBERNETES_VERSION})",
        )
    return entry


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
