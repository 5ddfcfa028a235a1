"""How EKS managed node groups replace their nodes on a launch-template or AMI change, and how
long a roll takes.

EKS offers two update strategies (EKS API ``NodegroupUpdateConfig.updateStrategy``): ``DEFAULT``
"launches the new instances first, before terminating the old instances"; ``MINIMAL``
"terminates the old instances before launching the new instances ... useful in scenarios where
you are constrained to resources or costs (for example, with hardware accelerators such as
GPUs)". A reservation that is fully in use (an ODCR with ``capacity-reservations-only``, a
Capacity Block) has no instance to launch first, so the default strategy's update fails and the
stack rolls back: every reserved node group uses ``MINIMAL``. On-demand groups keep the
default (new capacity first, one node at a time).

Parallelism is ``maxUnavailablePercentage`` for reserved groups: "this percentage of nodes are
updated in parallel, up to 100 nodes at once" (same API). With one node at a time, a pool of
1,024 nodes in three groups of 342 would take 342 batches, days; at 20 % it takes 6.

A batch is estimated as the drain and termination of the old nodes plus the launch and join of
their replacements (:data:`ROLL_BATCH_MINUTES`, a planning figure like those of
:mod:`fm_constructs.planning.deploy_time`). Node groups of one stack roll side by side (they do
not depend on each other), so a pool takes as long as its largest group. A PodDisruptionBudget
that protects a running job blocks its node's drain (EKS fails the update after 15 minutes of
failed evictions), so stop or checkpoint the job before a roll. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from fm_constructs.planning.deploy_time import GPU_NODE_GROUP_MINUTES


class UpdateStrategy(StrEnum):
    """EKS ``UpdateConfig.UpdateStrategy`` (CloudFormation ``AWS::EKS::Nodegroup``)."""

    DEFAULT = "DEFAULT"
    MINIMAL = "MINIMAL"


#: EKS replaces at most this many nodes of one group at once, whatever the percentage.
EKS_MAX_PARALLEL_NODES = 100
#: Share of a reserved group's nodes replaced at once.
RESERVED_MAX_UNAVAILABLE_PERCENTAGE = 20
#: Nodes of an on-demand group replaced at once (new capacity is launched first).
ON_DEMAND_MAX_UNAVAILABLE = 1
#: Minutes to cordon and drain the old nodes of a batch (a stopped job leaves at once; EKS
#: gives up on evictions after 15) and terminate them.
DRAIN_AND_TERMINATE_MINUTES = 5.0
#: Minutes per batch: drain and terminate, then launch and join (a GPU node group's creation).
ROLL_BATCH_MINUTES = DRAIN_AND_TERMINATE_MINUTES + GPU_NODE_GROUP_MINUTES


@dataclass(frozen=True)
class UpdatePolicy:
    """How one node group is updated: ``strategy`` and either ``max_unavailable`` nodes or
    ``max_unavailable_percentage`` of them at once."""

    strategy: UpdateStrategy
    max_unavailable: int | None = None
    max_unavailable_percentage: int | None = None

    def parallel_nodes(self, nodes: int) -> int:
        """Nodes replaced at once in a group of ``nodes`` (EKS's cap of 100 applied; a
        percentage is rounded down, at least one node)."""
        if self.max_unavailable_percentage is not None:
            wanted = nodes * self.max_unavailable_percentage // 100
        else:
            wanted = self.max_unavailable or 1
        return max(1, min(wanted, EKS_MAX_PARALLEL_NODES, max(nodes, 1)))


def update_policy(*, reserved: bool) -> UpdatePolicy:
    """The update policy of a node group: terminate first and 20 % at once on any reservation
    (ODCR, Capacity Block, training plan), the EKS default one node at a time on-demand."""
    if not reserved:
        return UpdatePolicy(UpdateStrategy.DEFAULT, max_unavailable=ON_DEMAND_MAX_UNAVAILABLE)
    return UpdatePolicy(
        UpdateStrategy.MINIMAL, max_unavailable_percentage=RESERVED_MAX_UNAVAILABLE_PERCENTAGE
    )


@dataclass(frozen=True)
class NodeRoll:
    """A roll of a pool of node groups of ``group_sizes`` nodes under ``policy``."""

    policy: UpdatePolicy
    group_sizes: tuple[int, ...]
    #: A Capacity Block pool: the EKS guide asks for desired size 0 before an update.
    capacity_block: bool = False

    @property
    def parallel(self) -> tuple[int, ...]:
        """Nodes replaced at once in each group."""
        return tuple(self.policy.parallel_nodes(n) for n in self.group_sizes)

    @property
    def batches(self) -> int:
        """Batches of the slowest group (groups roll side by side)."""
        return max(
            (math.ceil(n / p) for n, p in zip(self.group_sizes, self.parallel, strict=True) if n),
            default=0,
        )

    @property
    def minutes(self) -> float:
        return self.batches * ROLL_BATCH_MINUTES

    def describe(self) -> str:
        """``3 groups of 342 nodes, MINIMAL, 68 at once: 6 batches x 13 min = about 1.3 h``."""
        sizes = sorted(set(self.group_sizes), reverse=True)
        groups = (
            f"{len(self.group_sizes)} group{'s' if len(self.group_sizes) > 1 else ''} of "
            + "/".join(str(n) for n in sizes)
            + " nodes"
        )
        at_once = "/".join(str(p) for p in sorted(set(self.parallel), reverse=True))
        share = (
            f" ({self.policy.max_unavailable_percentage} %)"
            if self.policy.max_unavailable_percentage is not None
            else ""
        )
        hours = self.minutes / 60
        return (
            f"{groups}, {self.policy.strategy.value} (terminate first)"
            if self.policy.strategy is UpdateStrategy.MINIMAL
            else f"{groups}, {self.policy.strategy.value} (launch first)"
        ) + (
            f", {at_once} at once{share}: {self.batches} batches x "
            f"{ROLL_BATCH_MINUTES:.0f} min = about {hours:.1f} h"
            + (
                "; a Capacity Block group is scaled to 0 before an update (EKS guide), then "
                "back: one launch of the block"
                if self.capacity_block
                else ""
            )
        )


def node_roll(
    group_sizes: Sequence[int], *, reserved: bool, capacity_block: bool = False
) -> NodeRoll:
    """The roll of a pool split into managed node groups of ``group_sizes`` (reserved or
    on-demand capacity; a Capacity Block's)."""
    return NodeRoll(update_policy(reserved=reserved), tuple(group_sizes), capacity_block)
