"""The narrow view of a GPU EKS cluster that add-ons and workloads depend on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from constructs import IConstruct

from fm_constructs.orchestration.addon_registry import AddonRegistry
from fm_constructs.orchestration.eks_charts import HelmChartSpec


class IGpuCluster(Protocol):
    """What an add-on needs from a cluster: names, the kubectl-capable ``icluster``, its VPC,
    the system nodes to run on, the Pod Identity agent, the add-on registry, pinned charts."""

    @property
    def node(self) -> Any: ...

    @property
    def cluster_name(self) -> str: ...

    @property
    def cluster_arn(self) -> str: ...

    @property
    def kubernetes_version(self) -> str: ...

    @property
    def icluster(self) -> eks.ICluster: ...

    @property
    def system_nodes(self) -> IConstruct: ...

    @property
    def pod_identity_agent(self) -> IConstruct | None: ...

    @property
    def addon_registry(self) -> AddonRegistry: ...

    @property
    def cluster_security_group(self) -> ec2.ISecurityGroup: ...

    @property
    def vpc(self) -> ec2.IVpc: ...

    def add_pinned_chart(
        self, spec: HelmChartSpec, values: Mapping[str, Any], *, wait: bool = False
    ) -> eks.HelmChart: ...
