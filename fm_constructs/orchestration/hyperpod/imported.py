"""A SageMaker HyperPod cluster created outside this app, behind a small interface: see
:meth:`fm_constructs.orchestration.hyperpod.HyperPodCluster.from_hyperpod_cluster_attributes`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import jsii
from aws_cdk import Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import hyperpod as hyperpod_rules

#: HyperPod cluster names (SageMaker API model: ClusterName pattern, 1-63 characters).


@runtime_checkable
class IHyperPodCluster(Protocol):
    """What consumers need from a HyperPod cluster, created here or imported."""

    @property
    def cluster_name(self) -> str: ...

    @property
    def cluster_arn(self) -> str: ...

    @property
    def connections(self) -> ec2.Connections: ...


@jsii.implements(ec2.IConnectable)
class ImportedHyperPodCluster(Construct):
    """A cluster known by name; its ARN is formed in this stack's account and region."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster_name: str,
        security_group_ids: Sequence[str] = (),
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems(
            context=f"HyperPodCluster.from_hyperpod_cluster_attributes {self.node.path}",
            code=codes.HYPERPOD_CLUSTER,
        )
        problems.adopt(hyperpod_rules.imported_cluster_name(cluster_name))
        problems.raise_if_any()
        self.cluster_name = cluster_name
        self.cluster_arn = Stack.of(self).format_arn(
            service="sagemaker", resource="cluster", resource_name=cluster_name
        )
        groups = [
            ec2.SecurityGroup.from_security_group_id(self, f"SecurityGroup{index}", group_id)
            for index, group_id in enumerate(security_group_ids)
        ]
        self._connections = ec2.Connections(security_groups=groups)

    @property
    def connections(self) -> ec2.Connections:
        return self._connections
