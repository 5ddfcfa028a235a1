"""A simulation of /28 fragmentation at the limit of a pod subnet, against the IP budget.

With prefix delegation a node's pod ENI takes one address of its own (EC2 picks a free address
of the subnet) and then whole /28 prefixes, each a free, aligned /28 (EC2 User Guide, "Assign
prefixes to network interfaces"; the VPC CNI reports ``InsufficientCidrBlocks`` when none is
left). Single addresses scattered over the subnet spoil /28s for prefixes, so a subnet runs out
of prefixes before its addresses are used. The simulation places nodes in launch order, each
single address uniformly among the free addresses and each prefix uniformly among the free
/28s, until a prefix finds none: the first node count it cannot place. The IP budget counts
every node at its worst case (each single address in a /28 of its own), so it must refuse that
count, and every count it accepts must always place.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import pytest

from fm_constructs.config import load_profile
from fm_constructs.config.subnet_demand import demand_problems, subnet_demand
from fm_constructs.planning.pod_networking import PodNetworking

ROOT = Path(__file__).resolve().parents[2]
#: AWS reserves the first four addresses and the last of every subnet.
RESERVED_FIRST, RESERVED_LAST = 4, 1


class Subnet:
    """A /``prefix`` subnet: free single addresses and free whole /28s, O(1) random picks."""

    def __init__(self, prefix: int, rng: random.Random) -> None:
        size = 2 ** (32 - prefix)
        self.rng = rng
        self.free = list(range(RESERVED_FIRST, size - RESERVED_LAST))
        self.where = {a: i for i, a in enumerate(self.free)}
        self.used_in_block = [0] * (size // 16)
        self.used_in_block[0] += RESERVED_FIRST
        self.used_in_block[-1] += RESERVED_LAST
        self.blocks = [b for b, used in enumerate(self.used_in_block) if used == 0]
        self.block_at = {b: i for i, b in enumerate(self.blocks)}

    @staticmethod
    def _pop(items: list[int], index: dict[int, int], item: int) -> None:
        i = index.pop(item)
        last = items.pop()
        if last != item:
            items[i] = last
            index[last] = i

    def take_address(self) -> bool:
        if not self.free:
            return False
        address = self.free[self.rng.randrange(len(self.free))]
        self._pop(self.free, self.where, address)
        block = address // 16
        if self.used_in_block[block] == 0:
            self._pop(self.blocks, self.block_at, block)
        self.used_in_block[block] += 1
        return True

    def take_prefix(self) -> bool:
        if not self.blocks:
            return False
        block = self.blocks[self.rng.randrange(len(self.blocks))]
        self._pop(self.blocks, self.block_at, block)
        for address in range(block * 16, block * 16 + 16):
            self._pop(self.free, self.where, address)
        self.used_in_block[block] = 16
        return True


def first_unplaceable(prefix: int, singles: int, prefixes: int, seed: int) -> int:
    """The first node (1-based) whose addresses the simulated subnet cannot hold."""
    subnet = Subnet(prefix, random.Random(seed))
    node = 0
    while True:
        node += 1
        for _ in range(singles):
            if not subnet.take_address():
                return node
        for _ in range(prefixes):
            if not subnet.take_prefix():
                return node


def _pretraining_1024(nodes: int) -> object:
    """config/pretraining-1024.toml (p5en, custom networking) at ``nodes`` and 32 pods."""
    profile = load_profile(ROOT / "config" / "pretraining-1024.toml")
    pretraining = dataclasses.replace(
        profile.pretraining, instance_count=nodes, max_pods_per_node=32
    )
    return dataclasses.replace(profile, pretraining=pretraining)


def _pod_subnet_fits(nodes: int) -> bool:
    profile = _pretraining_1024(nodes)
    demand = subnet_demand(profile)
    assert demand.networking is PodNetworking.CUSTOM_NETWORKING
    return not demand_problems(demand, profile.platform.vpc_cidr)


def _largest_accepted() -> int:
    low, high = 1, 4096
    while low < high:  # the budget is monotone in the node count
        middle = (low + high + 1) // 2
        low, high = (middle, high) if _pod_subnet_fits(middle) else (low, middle - 1)
    return low


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_the_pod_subnet_check_refuses_the_first_count_the_simulation_cannot_place(
    seed: int,
) -> None:
    """p5en at 32 pods: 3 prefixes and the pod ENI's own address a node in 100.64.0.0/16. The
    address count said 65,531 / 49 = 1,337 nodes fit; the simulation runs out well before,
    the /28 count stops at 4,094 / 4 = 1,023, short of the first failure."""
    profile = _pretraining_1024(1024)
    (group,) = subnet_demand(profile).pod_subnet.node_groups  # type: ignore[union-attr]
    addressing = group.pod_addressing
    assert addressing is not None
    assert (addressing.attached_enis, addressing.prefixes, addressing.blocks) == (1, 3, 4)
    failed_at = first_unplaceable(16, addressing.attached_enis, addressing.prefixes, seed)
    assert failed_at < 65531 // addressing.addresses  # fragmentation is real
    accepted = _largest_accepted()
    assert accepted == 4094 // addressing.blocks == 1023
    assert accepted < failed_at and not _pod_subnet_fits(failed_at)


@pytest.mark.parametrize(("singles", "prefixes"), [(1, 3), (1, 2), (2, 5)])
def test_a_count_the_budget_accepts_always_places(singles: int, prefixes: int) -> None:
    """At the worst-case limit (each node at most singles + prefixes /28s) every seed places
    every node: a prefix always finds a free /28 while fewer than all are spoiled."""
    limit = (2 ** (28 - 20) - 2) // (singles + prefixes)  # a /20 keeps the runs short
    for seed in range(20):
        assert first_unplaceable(20, singles, prefixes, seed) > limit
