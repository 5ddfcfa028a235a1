"""An AWS PCS queue (a Slurm partition) over compute node groups."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from aws_cdk import aws_pcs as pcs
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.orchestration.pcs.cluster import IPcsCluster
from fm_constructs.orchestration.pcs.node_group import IPcsComputeNodeGroup
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import pcs as pcs_rules


@runtime_checkable
class IPcsQueue(Protocol):
    """A PCS queue, created here or imported."""

    @property
    def queue_id(self) -> str: ...

    @property
    def queue_name(self) -> str: ...


class PcsQueue(Construct):
    """Queue ``queue_name`` (the Slurm partition jobs name with ``sbatch -p``) scheduling onto
    ``node_groups``."""

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.PCS

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IPcsCluster,
        node_groups: Sequence[IPcsComputeNodeGroup],
        queue_name: str,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        problems.adopt(pcs_rules.queue(node_group_count=len(node_groups), queue_name=queue_name))
        problems.raise_if_any()
        self.queue_name = queue_name
        self.resource = pcs.CfnQueue(
            self,
            "Resource",
            cluster_id=cluster.cluster_id,
            name=queue_name,
            compute_node_group_configurations=[
                pcs.CfnQueue.ComputeNodeGroupConfigurationProperty(
                    compute_node_group_id=group.compute_node_group_id
                )
                for group in node_groups
            ],
        )

    @property
    def queue_id(self) -> str:
        return self.resource.attr_id

    @staticmethod
    def from_queue_attributes(
        scope: Construct, construct_id: str, *, queue_id: str, queue_name: str
    ) -> IPcsQueue:
        """A queue created elsewhere."""
        return _ImportedQueue(scope, construct_id, queue_id, queue_name)


class _ImportedQueue(Construct):
    def __init__(self, scope: Construct, construct_id: str, queue_id: str, name: str) -> None:
        super().__init__(scope, construct_id)
        self.queue_id = queue_id
        self.queue_name = name
