"""Rules of the AWS PCS blocks' arguments: a cluster's size and names, a compute node group's
counts, name, AMI and capacity, a queue's node groups and name, and imported ids.

Each rule takes the construct's plain arguments and returns findings under the PCS code,
which the construct adopts; CDK tokens are not checked.
"""

from __future__ import annotations

from collections.abc import Collection

from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.planning.pcs_limits import (
    CLUSTER_NAME_MAX,
    GROUP_NAME_MAX,
    MAX_NODES,
    PcsClusterSize,
    cluster_size_for,
    name_problem,
)
from fm_constructs.rules.constructs import PCS
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.pcs_ami import AMI_ID
from fm_constructs.rules.tokens import is_unresolved

#: The slurm.conf settings PCS takes at cluster level (API reference, SlurmCustomSetting).
CLUSTER_SLURM_SETTINGS = frozenset(
    {"Prolog", "Epilog", "SelectTypeParameters", "AccountingStorageEnforce"}
)


def _error(key: str, value: object, allowed: str, fix: str = "") -> Finding:
    return Finding(PCS, Severity.ERROR, key, value, allowed, fix)


def pcs_cluster(
    *,
    node_count: int,
    size: PcsClusterSize | None,
    cluster_name: str | None,
    slurm_settings: Collection[str],
    scale_down_idle_seconds: int,
) -> list[Finding]:
    """A :class:`~fm_constructs.orchestration.pcs.PcsCluster`'s node count against the PCS
    sizes, its name, the slurm.conf settings PCS takes at cluster level and the idle time."""
    out: list[Finding] = []
    if not is_unresolved(node_count):
        fitting = cluster_size_for(node_count)
        if node_count < 1:
            out.append(_error("node_count", node_count, "must be 1 or more"))
        elif fitting is None:
            out.append(
                _error(
                    "node_count",
                    node_count,
                    f"must be at most {MAX_NODES[PcsClusterSize.LARGE]} (a LARGE PCS cluster)",
                    fix="split the nodes over two clusters",
                )
            )
        elif size is not None and MAX_NODES[size] < node_count:
            out.append(
                _error(
                    "size",
                    size.value,
                    f"a {size.value} cluster runs at most {MAX_NODES[size]} nodes, not "
                    f"{node_count}",
                    fix=f"use {fitting.value} or leave size unset",
                )
            )
    if cluster_name is not None and not is_unresolved(cluster_name):
        why = name_problem(cluster_name, CLUSTER_NAME_MAX)
        if why:
            out.append(_error("cluster_name", cluster_name, why))
    for setting in sorted(set(slurm_settings) - CLUSTER_SLURM_SETTINGS):
        out.append(
            _error(
                "slurm_settings",
                setting,
                f"PCS takes only {', '.join(sorted(CLUSTER_SLURM_SETTINGS))} at cluster level",
            )
        )
    if not is_unresolved(scale_down_idle_seconds) and scale_down_idle_seconds < 1:
        out.append(_error("scale_down_idle_seconds", scale_down_idle_seconds, "must be 1 or more"))
    return out


def is_ami(value: str) -> bool:
    """An AMI id (``ami-`` and 8 or 17 hex digits)."""
    return AMI_ID.fullmatch(value) is not None


def compute_node_group(
    group_name: str,
    counts: tuple[int, int],
    ami_id: str,
    *,
    capacity_kind: CapacityKind,
    training_plan_arn: str | None,
    capacity_instance_count: int | None,
) -> list[Finding]:
    """A :class:`~fm_constructs.orchestration.pcs.PcsComputeNodeGroup`'s counts (0 or more,
    min within max, max within a Capacity Block), name, AMI and capacity (no training plan).
    ``counts`` is ``(min_count, max_count)``."""
    min_count, max_count = counts
    out: list[Finding] = []
    for name, value in (("min_count", min_count), ("max_count", max_count)):
        if not is_unresolved(value) and value < 0:
            out.append(_error(name, value, "must be 0 or more"))
    if not is_unresolved(min_count) and not is_unresolved(max_count) and min_count > max_count:
        out.append(_error("min_count", min_count, f"must not exceed max_count ({max_count})"))
    why = name_problem(group_name, GROUP_NAME_MAX)
    if why:
        out.append(_error("group_name", group_name, why))
    if not is_unresolved(ami_id) and not is_ami(ami_id):
        out.append(
            _error(
                "ami_id",
                ami_id,
                "must be an AMI id (ami- and 8 or 17 hex digits) of an image with the PCS "
                "agent and the cluster's Slurm version installed",
            )
        )
    if capacity_kind is CapacityKind.TRAINING_PLAN:
        out.append(
            _error(
                "capacity",
                training_plan_arn,
                "SageMaker training plans are for HyperPod; PCS takes On-Demand, an ODCR or "
                "a Capacity Block",
            )
        )
    if (
        capacity_kind is CapacityKind.CAPACITY_BLOCK
        and capacity_instance_count is not None
        and not is_unresolved(max_count)
        and max_count > capacity_instance_count
    ):
        out.append(
            _error(
                "max_count",
                max_count,
                f"must not exceed the Capacity Block's {capacity_instance_count} instances "
                "(PCS refuses a larger maximum)",
            )
        )
    return out


def queue(*, node_group_count: int, queue_name: str) -> list[Finding]:
    """A :class:`~fm_constructs.orchestration.pcs.PcsQueue` names node groups and a valid
    queue name."""
    out: list[Finding] = []
    if not node_group_count:
        out.append(_error("node_groups", [], "must name at least one compute node group"))
    why = name_problem(queue_name, GROUP_NAME_MAX)
    if why:
        out.append(_error("queue_name", queue_name, why))
    return out


def imported_id(key: str, value: str, allowed: str) -> list[Finding]:
    """An imported PCS resource's id is not empty (``allowed`` says what it is)."""
    if is_unresolved(value) or value:
        return []
    return [_error(key, value, allowed)]
