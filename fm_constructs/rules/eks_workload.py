"""Rules of an EKS workload's arguments (:class:`~fm_constructs.patterns.EksWorkload`): its
name, its nodes (node pools or HyperPod nodes, not both), the data prefixes it reads and
writes, and one subnet and one reservation per managed node group of a split pool.

The rule takes the workload's plain arguments (each pool as a :class:`PoolGroups`) and returns
findings under the workload's code, which the construct adopts; tokens are not checked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fm_constructs.domain import names
from fm_constructs.planning.aws_limits import node_groups_for
from fm_constructs.rules.constructs import EKS_WORKLOAD
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.tokens import is_unresolved

#: An S3 key prefix a workload's role is scoped to.
PREFIX = re.compile(r"^[A-Za-z0-9!_.*'()/-]+/$")


@dataclass(frozen=True)
class PoolGroups:
    """What the rule reads of one node pool: its name, its largest size and how many
    reservations its capacity lists (0: one capacity for every group)."""

    name: str
    max_nodes: int
    reservations: int = 0


def _error(key: str, value: object, allowed: str) -> Finding:
    return Finding(EKS_WORKLOAD, Severity.ERROR, key, value, allowed)


def _per_group(key: str, what: str, pool: PoolGroups, listed: int | None) -> list[Finding]:
    """``listed`` (when given) is one ``what`` per managed node group of ``pool``."""
    high = pool.max_nodes
    if listed is None or is_unresolved(high) or listed == node_groups_for(high):
        return []
    return [
        _error(
            key,
            listed,
            f"must list one {what} per managed node group of the pool "
            f"({node_groups_for(high)} for up to {high} nodes)",
        )
    ]


def eks_workload(
    *,
    name: str,
    hyperpod_instance_type: str | None,
    pools: Sequence[PoolGroups],
    subnet_given: bool,
    data_prefixes: Sequence[str],
    read_prefixes: Sequence[str],
    data_bucket_given: bool,
    node_group_subnets: Mapping[str, int],
) -> list[Finding]:
    """Every way an EKS workload's arguments break its requirements.

    ``hyperpod_instance_type`` is the instance type of the HyperPod nodes (None without
    them); ``node_group_subnets`` maps a pool's name to the number of subnets listed for it.
    """
    out: list[Finding] = []
    try:
        names.workload_namespace(name)
    except ValueError as error:
        out.append(_error("name", name, str(error)))
    if hyperpod_instance_type is not None and pools:
        out.append(
            _error("hyperpod_nodes", hyperpod_instance_type, "give it or node_pools, not both")
        )
    elif hyperpod_instance_type is None and not pools:
        out.append(_error("node_pools", [], "must hold at least one node pool"))
    elif pools and not subnet_given:
        out.append(_error("subnet", None, "is needed for the node pools' node groups"))
    pool_names = [p.name for p in pools]
    if len(set(pool_names)) != len(pool_names):
        out.append(_error("node_pools", pool_names, "names must be unique"))
    for key, prefixes in (("data_prefixes", data_prefixes), ("read_prefixes", read_prefixes)):
        for index, prefix in enumerate(prefixes):
            if not PREFIX.match(prefix):
                out.append(_error(f"{key}[{index}]", prefix, "must be a key prefix ending in '/'"))
    if (data_prefixes or read_prefixes) and not data_bucket_given:
        out.append(
            _error("data_bucket", None, "is needed when data_prefixes or read_prefixes are given")
        )
    overlapping = [
        r for r in read_prefixes for w in data_prefixes if r.startswith(w) or w.startswith(r)
    ]
    if overlapping:
        out.append(
            _error(
                "read_prefixes",
                overlapping,
                "must not overlap data_prefixes (a prefix is either read-only or written)",
            )
        )
    for pool in pools:
        out.extend(
            _per_group(
                f"node_group_subnets[{pool.name!r}]",
                "subnet",
                pool,
                node_group_subnets.get(pool.name),
            )
        )
    for pool_name in node_group_subnets:
        if pool_name not in set(pool_names):
            out.append(_error("node_group_subnets", pool_name, "must name a node pool"))
    for pool in pools:
        out.extend(
            _per_group(
                f"node_pools[{pool.name!r}].capacity.node_groups",
                "reservation",
                pool,
                pool.reservations or None,
            )
        )
    return out
