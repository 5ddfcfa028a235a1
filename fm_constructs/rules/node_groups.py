"""Rules of an EKS GPU node group's arguments (:class:`~fm_constructs.orchestration.EfaNodeGroup`):
its size, its subnet against the cluster's GPU zone and the reservation's zone, the capacity
kinds EKS takes, the labels it leaves to the group and its rolling-update settings.

Each rule takes the construct's plain arguments and returns findings under the node group's
code, which the construct adopts; CDK tokens are not checked.
"""

from __future__ import annotations

from collections.abc import Mapping

from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.domain.numbers import is_whole_number
from fm_constructs.planning.node_updates import EKS_MAX_PARALLEL_NODES
from fm_constructs.rules.constructs import NODE_GROUP
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.tokens import is_unresolved

#: Label prefixes the node group sets itself (a user label under one of them is refused).
RESERVED_LABEL_PREFIXES = ("fm-constructs/", "nvidia.com/", "aws.amazon.com/", "vpc.amazonaws.com/")


def _error(key: str, value: object, allowed: str) -> Finding:
    return Finding(NODE_GROUP, Severity.ERROR, key, value, allowed)


def node_count_given(node_count: int | None) -> list[Finding]:
    """A node group states the number of nodes it starts with."""
    if node_count is None:
        return [
            _error("node_count", None, "is required: the number of nodes the group starts with")
        ]
    return []


def efa_node_group(
    *,
    subnet_zone: str | None,
    subnet_path: str,
    subnet_is_public: bool,
    gpu_zone: str | None,
    capacity_kind: CapacityKind,
    reserved_zone: str | None,
    training_plan_arn: str | None,
    sizes: tuple[int, int, int],
    labels: Mapping[str, str],
    max_parallel_repairs: int,
) -> list[Finding]:
    """The subnet (in the cluster's GPU zone and the reservation's zone, private), the
    capacity (no training plan), the sizes (``min <= desired <= max``, ``max >= 1``), the
    labels (none under :data:`RESERVED_LABEL_PREFIXES`) and the repair parallelism.

    ``subnet_zone`` is None when unknown at synthesis (a token).
    """
    out: list[Finding] = []
    zone = subnet_zone
    if gpu_zone is not None and zone is not None and zone != gpu_zone:
        out.append(
            _error(
                "subnet",
                f"{zone} ({subnet_path})",
                f"must be in the cluster's GPU zone {gpu_zone} (where its capacity and FSx for "
                f"Lustre live); pick the private subnet of {gpu_zone}",
            )
        )
    if (
        zone is not None
        and reserved_zone is not None
        and not is_unresolved(reserved_zone)
        and zone != reserved_zone
    ):
        out.append(
            _error(
                "subnet",
                f"{zone} ({subnet_path})",
                f"must be in the {capacity_kind.value} reservation's zone {reserved_zone}",
            )
        )
    if subnet_is_public:
        out.append(
            _error("subnet", subnet_path, "must be a private subnet (EFA nodes get no public IP)")
        )
    if capacity_kind is CapacityKind.TRAINING_PLAN:
        out.append(
            _error(
                "capacity",
                training_plan_arn,
                "a SageMaker training plan feeds HyperPod instance groups, not EKS node "
                "groups; use CapacitySource.capacity_block() or .odcr()",
            )
        )
    min_nodes, desired, max_nodes = sizes
    wrong = [
        (name, n)
        for name, n in zip(("min_node_count", "node_count", "max_node_count"), sizes, strict=True)
        # A number token is left to deploy time; a string, token or not, is never a count.
        if isinstance(n, str) or (not is_unresolved(n) and not is_whole_number(n))
    ]
    for name, n in wrong:
        out.append(_error(name, n, "must be a whole number (an int, not a string)"))
    if (
        not wrong
        and not any(is_unresolved(n) for n in sizes)
        and not (0 <= min_nodes <= desired <= max_nodes and max_nodes >= 1)
    ):
        out.append(
            _error(
                "min_node_count/node_count/max_node_count",
                sizes,
                "must satisfy 0 <= min_node_count <= node_count <= max_node_count and "
                "max_node_count >= 1",
            )
        )
    for key in labels:
        if key.startswith(RESERVED_LABEL_PREFIXES):
            out.append(
                _error(
                    f"labels[{key!r}]",
                    labels[key],
                    "is set by the node group; use keys outside "
                    + ", ".join(RESERVED_LABEL_PREFIXES),
                )
            )
    if max_parallel_repairs < 1:
        out.append(_error("max_parallel_repairs", max_parallel_repairs, "must be 1 or more"))
    return out


def rolling_update(
    max_unavailable: int | None, max_unavailable_percentage: int | None
) -> list[Finding]:
    """EKS's rolling-update settings: a node count or a percentage, each in its range."""
    out: list[Finding] = []
    if max_unavailable is not None and max_unavailable_percentage is not None:
        out.append(
            _error(
                "max_unavailable / max_unavailable_percentage",
                (max_unavailable, max_unavailable_percentage),
                "give one of them (EKS takes a node count or a percentage)",
            )
        )
    if max_unavailable is not None and not 1 <= max_unavailable <= EKS_MAX_PARALLEL_NODES:
        out.append(
            _error(
                "max_unavailable",
                max_unavailable,
                f"must be 1 to {EKS_MAX_PARALLEL_NODES} (EKS replaces at most "
                f"{EKS_MAX_PARALLEL_NODES} nodes at once)",
            )
        )
    if max_unavailable_percentage is not None and not 1 <= max_unavailable_percentage <= 100:
        out.append(
            _error("max_unavailable_percentage", max_unavailable_percentage, "must be 1 to 100")
        )
    return out
