"""A cluster placement group: nodes packed close together for low-latency EFA traffic."""

from __future__ import annotations

from aws_cdk import aws_ec2 as ec2
from constructs import Construct


class ClusterPlacementGroup(Construct):
    """An EC2 placement group with the ``cluster`` strategy.

    Do not combine it with a Capacity Block or a reservation that already has its own
    placement: the two constraints together fail with insufficient capacity
    (``CapacitySource.allows_placement_group`` says when).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        placement_group_name: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        self.placement_group: ec2.PlacementGroup = ec2.PlacementGroup(
            self,
            "Resource",
            strategy=ec2.PlacementGroupStrategy.CLUSTER,
            placement_group_name=placement_group_name,
        )

    @property
    def placement_group_name(self) -> str:
        """The group's name (a token until deployment when CloudFormation names it)."""
        return self.placement_group.placement_group_name
