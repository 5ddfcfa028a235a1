"""Kubernetes versions this library deploys on EKS, each with its kubectl Lambda layer package.

A version is supported when EKS offers it in standard support (14 months from its EKS release),
aws-cdk-lib's ``KubernetesVersion`` knows it, and a ``aws-cdk.lambda-layer-kubectl-v1XX``
package exists on PyPI for the kubectl/helm custom resources. Only the default version's
layer package is a dependency of the library; other versions need their package installed.
The versions and dates come from :mod:`fm_constructs.pins`. Pure (floor 1): the profile loader,
``fmc plan``/``preflight`` and the EKS cluster construct all read this one table.
"""

from __future__ import annotations

from dataclasses import dataclass

from fm_constructs import pins


@dataclass(frozen=True)
class SupportedVersion:
    """A Kubernetes minor version with its EKS end of standard support (ISO date, None when
    not yet published) and the PyPI package and module that bundle the matching kubectl."""

    version: str
    end_of_standard_support: str | None

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


SUPPORTED_VERSIONS: dict[str, SupportedVersion] = {
    version: SupportedVersion(version, pin.end_of_standard_support)
    for version, pin in pins.kubernetes().versions.items()
}
DEFAULT_KUBERNETES_VERSION = pins.kubernetes().default
#: Versions whose standard support ends within a few months of this release of the library.
ENDING_SOON = pins.kubernetes().ending_soon
#: Where the versions and dates were checked.
SOURCE = pins.kubernetes().source


def supported_versions_text() -> str:
    """``1.34, 1.35, 1.36 (default 1.35)``, for messages."""
    return f"{', '.join(SUPPORTED_VERSIONS)} (default {DEFAULT_KUBERNETES_VERSION})"


#: Kubernetes versions SageMaker HyperPod supports on an EKS orchestrator (its own, narrower
#: list than EKS's; see :data:`HYPERPOD_EKS_SOURCE`).
HYPERPOD_EKS_VERSIONS: tuple[str, ...] = pins.kubernetes().hyperpod_eks
HYPERPOD_EKS_SOURCE = pins.kubernetes().hyperpod_eks_source
