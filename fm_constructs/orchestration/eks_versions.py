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

from fm_constructs.planning.kubernetes_versions import (
    SUPPORTED_VERSIONS,
    SupportedVersion,
)


def eks_version(entry: SupportedVersion) -> eks.KubernetesVersion:
    """aws-cdk-lib's ``KubernetesVersion`` member of ``entry`` (an attribute error if
    aws-cdk-lib does not know the version)."""
    member: eks.KubernetesVersion = getattr(
        eks.KubernetesVersion, "V" + entry.version.replace(".", "_")
    )
    return member


for _entry in SUPPORTED_VERSIONS.values():
    _ = eks_version(_entry)  # every pinned version must be one aws-cdk-lib knows


def supported_version(version: str) -> SupportedVersion | None:
    """The supported entry for ``version`` ("1.35"); None for one the library does not support
    (the rule :func:`fm_constructs.rules.platform.kubernetes_version` says why)."""
    return SUPPORTED_VERSIONS.get(version.strip())


def kubectl_layer(
    scope: Construct, construct_id: str, entry: SupportedVersion
) -> lambda_.ILayerVersion:
    """The kubectl/helm layer matching ``entry``, from its PyPI package (whether the package is
    installed is the rule :func:`fm_constructs.rules.platform.kubectl_layer_installed`, which
    a construct runs first)."""
    module: Any = importlib.import_module(entry.layer_module)
    layer: lambda_.ILayerVersion = getattr(module, entry.layer_class)(scope, construct_id)
    return layer
