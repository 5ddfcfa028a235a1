"""Rules of SageMaker HyperPod instance groups: each group's own arguments (name, type, count,
threads, volume, schedule, health checks, capacity, what its orchestrator accepts) and the
group list as a whole (unique names, the Slurm controller and login groups, a worker group).

The instance-group construct calls them on its own arguments
(:class:`~fm_constructs.orchestration.hyperpod.InstanceGroup`), with every value a deploy-time
token left unknown (None), and reports the findings under its cluster's code (FM841).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from fm_constructs.catalog import InstanceSpec, all_instance_types
from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.domain.hyperpod import (
    CRON_PATTERN,
    EBS_VOLUME_SIZE_GIB,
    GROUP_NAME_MAX_LENGTH,
    GROUP_NAME_PATTERN,
    HYPERPOD_CPU_INSTANCE_TYPES,
    MAX_INSTANCE_COUNT,
    TAINT_EFFECTS,
    DeepHealthCheck,
    PatchingStrategy,
    SlurmNodeType,
    to_ml_name,
)
from fm_constructs.domain.kinds import CapacityKind, Orchestrator
from fm_constructs.domain.numbers import is_whole_number
from fm_constructs.domain.users import ClusterUser
from fm_constructs.planning.kubernetes_versions import (
    HYPERPOD_EKS_SOURCE,
    HYPERPOD_EKS_VERSIONS,
    SUPPORTED_VERSIONS,
)
from fm_constructs.rules.compute import Placement, capacity_fit
from fm_constructs.rules.constructs import HYPERPOD_CLUSTER
from fm_constructs.rules.tokens import is_unresolved
from fm_constructs.rules.users import check_users

_AMI_ID = re.compile(r"^ami-[0-9a-fA-F]{8,17}$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")


class Taint(Protocol):
    """A Kubernetes taint as the rules read it."""

    @property
    def key(self) -> str: ...

    @property
    def effect(self) -> str: ...


def _error(key: str, value: object, allowed: str, fix: str = "") -> Finding:
    return Finding(HYPERPOD_CLUSTER, Severity.ERROR, key, value, allowed, fix)


def _hyperpod_specs() -> dict[str, InstanceSpec]:
    return {spec.hyperpod_name: spec for spec in all_instance_types() if spec.hyperpod_name}


def hyperpod_spec(instance_type: str) -> InstanceSpec | None:
    """The catalog spec of an accelerated HyperPod type; None for a HyperPod CPU type or a
    type HyperPod does not offer (:func:`hyperpod_instance_type` tells which)."""
    return _hyperpod_specs().get(to_ml_name(instance_type))


def hyperpod_instance_type(instance_type: str, *, key: str = "instance_type") -> list[Finding]:
    """``instance_type`` (EC2 or ``ml.`` spelling) is one SageMaker HyperPod offers: an
    accelerated type of the catalog with a HyperPod name, or a listed CPU type."""
    ml_name = to_ml_name(instance_type)
    if ml_name in _hyperpod_specs() or ml_name in HYPERPOD_CPU_INSTANCE_TYPES:
        return []
    accelerated = sorted(_hyperpod_specs())
    return [
        _error(
            key,
            instance_type,
            f"must be an instance type SageMaker HyperPod offers (accelerated: "
            f"{', '.join(accelerated)}; CPU: {', '.join(sorted(HYPERPOD_CPU_INSTANCE_TYPES))})",
            "choose a listed type (HyperPod names carry the 'ml.' prefix)",
        )
    ]


def scheduled_update(
    cron: str | None, batch_percentage: int, wait_interval_seconds: int, *, prefix: str = ""
) -> list[Finding]:
    """A ``ScheduledUpdateConfig``: the schedule expression (None: a deploy-time token) and
    the batch size and wait of the CloudFormation schema."""
    found = []
    if cron is not None and not CRON_PATTERN.fullmatch(cron):
        found.append(
            _error(
                f"{prefix}scheduled_update.cron",
                cron,
                "must be cron(minutes hours day-of-month month day-of-week year), for example "
                "'cron(0 4 ? * SUN *)'",
            )
        )
    if not 1 <= batch_percentage <= 100:
        found.append(
            _error(f"{prefix}scheduled_update.batch_percentage", batch_percentage, "must be 1-100")
        )
    if not 0 <= wait_interval_seconds <= 3600:
        found.append(
            _error(
                f"{prefix}scheduled_update.wait_interval_seconds",
                wait_interval_seconds,
                "must be 0-3600",
            )
        )
    return found


@dataclass(frozen=True, kw_only=True)
class GroupArguments:
    """One instance group's arguments as the rules read them; a value that is a deploy-time
    token is None (unknown until deploy: not checked)."""

    name: str
    instance_type: str
    #: None: a token.
    instance_count: int | None
    slurm_node_type: SlurmNodeType = SlurmNodeType.WORKER
    threads_per_core: int | None = None
    #: An extra EBS volume is asked for (its size may be a token).
    ebs_volume: bool = False
    #: The size when known (None: no volume, or a token).
    ebs_volume_size_gib: int | None = None
    ebs_kms_key: bool = False
    #: The update schedule's own findings (:func:`scheduled_update`).
    scheduled_update: tuple[Finding, ...] = ()
    auto_patch: str | None = None
    deep_health_checks: Sequence[Any] | None = None
    capacity_kind: CapacityKind | None = None
    training_plan_arn: str | None = None
    #: What the capacity source reserves (count, zone, type; None: no source or unknown).
    capacity_placement: Placement | None = None
    kubernetes_labels: Mapping[str, str] = field(default_factory=dict)
    kubernetes_taints: Sequence[Taint] = ()
    partition_name: str | None = None
    #: None: no AMI, or a token.
    image_id: str | None = None


def instance_group(group: GroupArguments, *, slurm: bool) -> list[Finding]:
    """Every rule ``group`` breaks in a cluster orchestrated by Slurm (``slurm``) or EKS,
    under ``instance_groups['<name>'].<argument>``."""
    found: list[Finding] = []
    prefix = f"instance_groups[{group.name!r}]."

    def add(field_name: str, value: object, requirement: str) -> None:
        found.append(_error(f"{prefix}{field_name}", value, requirement))

    if not GROUP_NAME_PATTERN.match(group.name) or len(group.name) > GROUP_NAME_MAX_LENGTH:
        add(
            "name",
            group.name,
            "must be 1-63 letters, digits and hyphens, starting and ending with a letter or digit",
        )
    offered = hyperpod_instance_type(group.instance_type, key=f"{prefix}instance_type")
    found += offered
    known_type = not offered
    spec = hyperpod_spec(group.instance_type)
    accelerated = spec is not None and spec.is_accelerated
    count = group.instance_count
    if count is not None and not is_whole_number(count, 1, MAX_INSTANCE_COUNT):
        kind = "worker group" if group.slurm_node_type is SlurmNodeType.WORKER else "group"
        add(
            "instance_count",
            count,
            f"a {kind} needs between 1 and {MAX_INSTANCE_COUNT} instances (a whole number)",
        )
    if group.threads_per_core is not None and group.threads_per_core not in (1, 2):
        add("threads_per_core", group.threads_per_core, "must be 1 (multithreading off) or 2 (on)")
    if group.ebs_volume_size_gib is not None:
        low, high = EBS_VOLUME_SIZE_GIB
        if not low <= group.ebs_volume_size_gib <= high:
            add("ebs_volume_size_gib", group.ebs_volume_size_gib, f"must be {low}-{high}")
    if group.ebs_kms_key and not group.ebs_volume:
        add(
            "ebs_kms_key",
            "<key>",
            "encrypts the extra EBS volume, so ebs_volume_size_gib must be set too",
        )
    found += group.scheduled_update
    if group.auto_patch is not None and group.auto_patch not in list(PatchingStrategy):
        add(
            "auto_patch",
            group.auto_patch,
            f"must be one of {', '.join(p.value for p in PatchingStrategy)}",
        )
    if known_type:
        found += _health_checks(group, spec, prefix)
    found += _capacity(group, accelerated, known_type, prefix)
    found += _orchestrator(group, slurm, prefix)
    if group.image_id is not None and not _AMI_ID.match(group.image_id):
        add("image_id", group.image_id, "must be an AMI id such as ami-0123456789abcdef0")
    return found


def _health_checks(group: GroupArguments, spec: InstanceSpec | None, prefix: str) -> list[Finding]:
    if group.deep_health_checks is None:
        return []
    key = f"{prefix}deep_health_checks"
    found: list[Finding] = []
    checks = list(group.deep_health_checks)
    valid = [c.value for c in DeepHealthCheck]
    for check in checks:
        if check not in valid:
            found.append(_error(key, check, f"each must be one of {', '.join(valid)}"))
    if checks and (spec is None or not spec.is_accelerated):
        found.append(
            _error(
                key,
                checks,
                "deep health checks test accelerators and EFA; use them on GPU/Trainium "
                "groups only (pass () for CPU groups)",
            )
        )
    if DeepHealthCheck.INSTANCE_CONNECTIVITY in checks and spec is not None:
        if not spec.efa_supported:
            found.append(
                _error(
                    key,
                    checks,
                    f"InstanceConnectivity tests EFA between instances, and {spec.name} has "
                    f"no EFA; drop it",
                )
            )
        elif isinstance(group.instance_count, int) and group.instance_count < 2:
            found.append(
                _error(
                    key,
                    checks,
                    "InstanceConnectivity tests traffic between instances and needs at least "
                    "2 in the group; drop it or raise instance_count",
                )
            )
    return found


def _capacity(group: GroupArguments, accelerated: bool, known: bool, prefix: str) -> list[Finding]:
    kind = group.capacity_kind
    if kind is None:
        return []
    key = f"{prefix}capacity"
    found: list[Finding] = []
    if kind in (CapacityKind.ODCR, CapacityKind.CAPACITY_BLOCK):
        found.append(
            _error(
                key,
                kind.value,
                "HyperPod instances run in SageMaker's accounts and cannot use EC2 capacity "
                "reservations; reserve HyperPod capacity with a SageMaker training plan "
                "(CapacitySource.training_plan) or use on-demand",
            )
        )
    if kind is CapacityKind.TRAINING_PLAN and known and not accelerated:
        found.append(
            _error(
                key,
                group.training_plan_arn,
                f"a training plan reserves accelerated capacity; "
                f"{to_ml_name(group.instance_type)} is a CPU type, so leave capacity unset for "
                f"this group",
            )
        )
    if known and group.capacity_placement is not None:
        nodes = Placement(count=group.instance_count, instance_type=group.instance_type)
        found += [
            _message(f"{key}: {fit.message()}")
            for fit in capacity_fit(kind, group.capacity_placement, nodes)
        ]
    return found


def _orchestrator(group: GroupArguments, slurm: bool, prefix: str) -> list[Finding]:
    found: list[Finding] = []

    def add(field_name: str, value: object, requirement: str) -> None:
        found.append(_error(f"{prefix}{field_name}", value, requirement))

    if slurm:
        if group.kubernetes_labels or group.kubernetes_taints:
            add(
                "kubernetes_labels",
                dict(group.kubernetes_labels) or list(group.kubernetes_taints),
                "Kubernetes labels and taints apply to EKS-orchestrated clusters only; "
                "remove them for Slurm (use partitions instead)",
            )
        return found
    if group.slurm_node_type is not SlurmNodeType.WORKER:
        add(
            "slurm_node_type",
            group.slurm_node_type.value,
            "EKS-orchestrated clusters have worker groups only (the EKS control plane "
            "replaces the Slurm controller and login nodes)",
        )
    if group.partition_name is not None:
        add("partition_name", group.partition_name, "is a Slurm setting; remove it for EKS")
    for key, value in group.kubernetes_labels.items():
        if not _LABEL_KEY.match(key):
            add("kubernetes_labels", key, "keys must be Kubernetes label keys")
        if not _LABEL_VALUE.match(value):
            add("kubernetes_labels", value, "values must be Kubernetes label values")
    for taint in group.kubernetes_taints:
        if taint.effect not in TAINT_EFFECTS:
            add("kubernetes_taints", taint.effect, f"effect must be one of {TAINT_EFFECTS}")
        if not _LABEL_KEY.match(taint.key):
            add("kubernetes_taints", taint.key, "key must be a Kubernetes label key")
    return found


def group_layout(groups: Sequence[GroupArguments], *, slurm: bool) -> list[Finding]:
    """The group list as a whole (at least one group, unique names, at most 100; in a Slurm
    cluster exactly one controller, at most one login group, each of one instance; a worker
    group), then each group (:func:`instance_group`)."""
    found: list[Finding] = []
    key = "instance_groups"
    if not groups:
        found.append(_error(key, [], "a cluster needs at least one instance group"))
    names = [group.name for group in groups]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        found.append(_error(key, duplicates, "group names must be unique"))
    if len(groups) > 100:
        found.append(_error(key, len(groups), "at most 100 groups"))
    if slurm:
        by_type = {
            node_type: [g.name for g in groups if g.slurm_node_type is node_type]
            for node_type in SlurmNodeType
        }
        controllers = by_type[SlurmNodeType.CONTROLLER]
        if len(controllers) != 1:
            found.append(
                _error(
                    key,
                    controllers,
                    "a Slurm cluster needs exactly one controller group "
                    "(slurm_node_type=CONTROLLER)",
                )
            )
        if len(by_type[SlurmNodeType.LOGIN]) > 1:
            found.append(
                _error(
                    key,
                    by_type[SlurmNodeType.LOGIN],
                    "a Slurm cluster takes at most one login group",
                )
            )
        for group in groups:
            if (
                group.slurm_node_type is not SlurmNodeType.WORKER
                and group.instance_count is not None
                and group.instance_count != 1
            ):
                found.append(
                    _error(
                        f"instance_groups[{group.name!r}].instance_count",
                        group.instance_count,
                        f"the Slurm {group.slurm_node_type.value} group runs exactly one instance",
                    )
                )
    if not any(g.slurm_node_type is SlurmNodeType.WORKER for g in groups):
        found.append(
            Finding(
                HYPERPOD_CLUSTER,
                Severity.ERROR,
                "",
                None,
                "instance_groups: the cluster needs at least one worker group with instances; "
                f"got groups {names!r}",
            )
        )
    for group in groups:
        found += instance_group(group, slurm=slurm)
    return found


def hyperpod_cluster(
    *,
    orchestrator: Orchestrator,
    eks_cluster_given: bool,
    eks_kubernetes_version: str | None,
    eks_gpu_zone: str | None,
    subnet_zone: str | None,
    group_reservation_zones: Sequence[tuple[str, CapacityKind, str]] = (),
    cluster_name: str | None,
    lustre_mount_point: str,
    users: Sequence[ClusterUser] = (),
    lustre_given: bool,
) -> list[Finding]:
    """A :class:`~fm_constructs.orchestration.hyperpod.HyperPodCluster`'s arguments beyond its
    instance groups: the EKS cluster an EKS-orchestrated cluster needs (and a Slurm one does
    not), the subnet's zone against the EKS GPU zone and each group's reservation
    (``(group name, capacity kind, reservation zone)``), the cluster name, the mount point and
    the users (their own rules keep their codes; Slurm and a file system for the homes).

    Values unknown at synthesis (tokens) are passed as None: ``eks_kubernetes_version``,
    ``eks_gpu_zone``, ``subnet_zone``.
    """
    out: list[Finding] = []
    if orchestrator is Orchestrator.HYPERPOD_EKS and not eks_cluster_given:
        out.append(
            _error(
                "eks_cluster",
                None,
                "an EKS-orchestrated cluster needs the GpuEksCluster it attaches to",
            )
        )
    if eks_kubernetes_version is not None:
        out.extend(
            eks_version_for_hyperpod(
                eks_kubernetes_version, key="eks_cluster.kubernetes_version", code=HYPERPOD_CLUSTER
            )
        )
    if orchestrator is Orchestrator.HYPERPOD_SLURM and eks_cluster_given:
        out.append(
            _error(
                "eks_cluster",
                "<GpuEksCluster>",
                "is only used with orchestrator=Orchestrator.HYPERPOD_EKS; remove it or switch "
                "the orchestrator",
            )
        )
    if subnet_zone is not None:
        if eks_gpu_zone is not None and eks_gpu_zone != subnet_zone:
            out.append(
                _error(
                    "subnet", subnet_zone, f"must be in the EKS cluster's GPU zone {eks_gpu_zone}"
                )
            )
        for name, kind, reserved_zone in group_reservation_zones:
            for fit in capacity_fit(
                kind, Placement(zone=reserved_zone), Placement(zone=subnet_zone)
            ):
                out.append(_message(f"instance_groups[{name!r}].capacity: {fit.message()}"))
    if (
        cluster_name is not None
        and not is_unresolved(cluster_name)
        and (not GROUP_NAME_PATTERN.match(cluster_name) or len(cluster_name) > 63)
    ):
        out.append(
            _error(
                "cluster_name",
                cluster_name,
                "must be 1-63 letters, digits and hyphens, starting and ending with a "
                "letter or digit",
            )
        )
    if not lustre_mount_point.startswith("/"):
        out.append(_error("lustre_mount_point", lustre_mount_point, "must be an absolute path"))
    if users:
        out.extend(check_users(users))
        if orchestrator is not Orchestrator.HYPERPOD_SLURM:
            out.append(
                _error(
                    "users",
                    [u.name for u in users],
                    "are created by the Slurm lifecycle scripts only; remove them for EKS",
                )
            )
        elif not lustre_given:
            out.append(
                _error(
                    "users",
                    [u.name for u in users],
                    "need lustre: their homes and SSH keys live on the shared file system",
                )
            )
    return out


def eks_version_for_hyperpod(version: str, *, key: str, code: str) -> list[Finding]:
    """HyperPod attaches only to EKS clusters of its own, narrower list of Kubernetes versions
    (:data:`~fm_constructs.planning.kubernetes_versions.HYPERPOD_EKS_SOURCE`); the fix names
    the newest version both HyperPod and the library support. ``code``: the caller's (the
    profile's FM206, a construct's own)."""
    if is_unresolved(version) or version in HYPERPOD_EKS_VERSIONS:
        return []
    usable = [v for v in HYPERPOD_EKS_VERSIONS if v in SUPPORTED_VERSIONS]
    fix = (
        f"set it to {usable[-1]!r}, the newest version both HyperPod and this library support"
        if usable
        else "no version is supported by both HyperPod and this library yet"
    )
    allowed = (
        f"SageMaker HyperPod supports EKS clusters of Kubernetes "
        f"{', '.join(HYPERPOD_EKS_VERSIONS)} only ({HYPERPOD_EKS_SOURCE.split(' ')[0]})"
    )
    return [Finding(code, Severity.ERROR, key, version, allowed, fix)]


def _message(text: str) -> Finding:
    """A cluster finding phrased in full."""
    return Finding(HYPERPOD_CLUSTER, Severity.ERROR, "", None, text)


_IMPORTED_CLUSTER_NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")


def imported_cluster_name(cluster_name: str) -> list[Finding]:
    """An imported HyperPod cluster is named by a HyperPod cluster name."""
    if is_unresolved(cluster_name) or _IMPORTED_CLUSTER_NAME.match(cluster_name):
        return []
    return [
        _error(
            "cluster_name",
            cluster_name,
            "must be a HyperPod cluster name (letters, digits and '-', at most 63)",
        )
    ]
