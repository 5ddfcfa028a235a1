"""Typed SageMaker HyperPod instance groups and the Slurm defaults (controller, login, workers).

An :class:`InstanceGroup` is a plain value: it names the group, its instance type (validated
against the catalog for accelerated types and against :data:`HYPERPOD_CPU_INSTANCE_TYPES` for
CPU-only types, always rendered with HyperPod's ``ml.`` prefix), count, threads per core, extra
EBS volume, on-start deep health checks, capacity (training plan), Kubernetes labels and taints
(EKS only) and an optional AMI. :meth:`InstanceGroup.problems` reports every rule it breaks so
the cluster can raise them all at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from aws_cdk import Token
from aws_cdk import aws_kms as kms

from fm_constructs.catalog import InstanceSpec, all_instance_types
from fm_constructs.compute import CapacityKind, CapacitySource
from fm_constructs.domain.defaults import HYPERPOD_EBS_VOLUME_GIB
from fm_constructs.domain.kinds import HYPERPOD, Orchestrator
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.rules import constructs as codes

#: CPU-only HyperPod instance types offered for Slurm controller and login groups and for EKS
#: system work (a subset of the ``ClusterInstanceType`` enum of the SageMaker API model; the
#: unit tests check every entry against botocore's copy of that model).
HYPERPOD_CPU_INSTANCE_TYPES: frozenset[str] = frozenset(
    f"ml.{family}.{size}"
    for family, sizes in {
        "t3": ("medium", "large", "xlarge", "2xlarge"),
        "c5": ("large", "xlarge", "2xlarge", "4xlarge", "9xlarge", "12xlarge", "18xlarge"),
        "m5": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "c6i": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "m6i": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "r6i": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "m7i": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
        "r7i": ("large", "xlarge", "2xlarge", "4xlarge", "8xlarge", "12xlarge", "16xlarge"),
    }.items()
    for size in sizes
)

#: Instance group names: the API's pattern (letters, digits and single or repeated hyphens).
GROUP_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9])*$")
GROUP_NAME_MAX_LENGTH = 63
#: InstanceCount bounds of the CloudFormation schema.
MAX_INSTANCE_COUNT = 6758
#: ClusterEbsVolumeConfig.VolumeSizeInGB bounds of the CloudFormation schema.
EBS_VOLUME_SIZE_GIB = (1, 16384)
#: Taint effects the schema accepts.
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_AMI_ID = re.compile(r"^ami-[0-9a-fA-F]{8,17}$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$")
#: Records one problem: field, bad value, requirement.
_Add = Callable[[str, object, str], None]


def hyperpod_orchestrator(orchestrator: Orchestrator | str) -> Orchestrator:
    """The HyperPod orchestrator ``orchestrator`` names: ``HYPERPOD_SLURM`` (also spelled
    ``SLURM``) or ``HYPERPOD_EKS`` (``EKS`` too: a HyperPod cluster orchestrated by EKS)."""
    value = Orchestrator(orchestrator)
    if value is Orchestrator.EKS:
        return Orchestrator.HYPERPOD_EKS
    if value not in HYPERPOD:
        raise FmValidationError(
            [
                f"orchestrator: a HyperPod cluster is orchestrated by Slurm or EKS "
                f"(Orchestrator.HYPERPOD_SLURM or Orchestrator.HYPERPOD_EKS), got {value.value!r}"
            ],
            code=codes.HYPERPOD_CLUSTER,
        )
    return value


class SlurmNodeType(StrEnum):
    """The part a group plays in a Slurm cluster (EKS groups are always ``WORKER``)."""

    CONTROLLER = "controller"
    LOGIN = "login"
    WORKER = "worker"


class DeepHealthCheck(StrEnum):
    """On-start deep health checks HyperPod runs before a node joins the cluster.

    ``INSTANCE_STRESS``: accelerator and CPU stress tests on each instance.
    ``INSTANCE_CONNECTIVITY``: EFA/NCCL connectivity between the group's instances (needs EFA
    and at least two instances).
    """

    INSTANCE_STRESS = "InstanceStress"
    INSTANCE_CONNECTIVITY = "InstanceConnectivity"


class PatchingStrategy(StrEnum):
    """When HyperPod applies an OS security patch of the AMI (``AutoPatchConfig``): to each
    instance once it is idle, or to all at once when all are idle (the instances are cordoned
    until patched)."""

    WHEN_IDLE = "WhenIdle"
    WHEN_ALL_IDLE = "WhenAllIdle"


#: ``ScheduleExpression`` of ``ScheduledUpdateConfig`` (the pattern of the CloudFormation schema
#: of AWS::SageMaker::Cluster in cfn-lint): minutes, hours, day of month, month, day of week,
#: year.
CRON_PATTERN = re.compile(
    r"cron\((?:[0-5][0-9]|[0-9]|) (?:[01][0-9]|2[0-3]|[0-9]) (?:[1-9]|0[1-9]|[12][0-9]|3[01]|\?) "
    r"(?:[1-9]|0[1-9]|1[0-2]|\*|\*/(?:[1-9]|1[0-2])|) "
    r"(?:MON|TUE|WED|THU|FRI|SAT|SUN|[1-7]|\?|L|(?:[1-7]#[1-5])|(?:[1-7]L)) (?:20[2-9][0-9]|\*|)\)"
)


@dataclass(frozen=True)
class ScheduledUpdate:
    """HyperPod updates the group's AMI to the latest release on ``cron`` (for example
    ``cron(0 4 ? * SUN *)``: Sundays 04:00 UTC), ``batch_percentage`` of the instances at a
    time with ``wait_interval_seconds`` between batches (``ScheduledUpdateConfig``)."""

    cron: str
    batch_percentage: int = 20
    wait_interval_seconds: int = 300

    def problems(self, prefix: str) -> list[str]:
        found = []
        if not Token.is_unresolved(self.cron) and not CRON_PATTERN.fullmatch(self.cron):
            found.append(
                f"{prefix}scheduled_update.cron: must be cron(minutes hours day-of-month month "
                f"day-of-week year), for example 'cron(0 4 ? * SUN *)', got {self.cron!r}"
            )
        if not 1 <= self.batch_percentage <= 100:
            found.append(
                f"{prefix}scheduled_update.batch_percentage: must be 1-100, got "
                f"{self.batch_percentage!r}"
            )
        if not 0 <= self.wait_interval_seconds <= 3600:
            found.append(
                f"{prefix}scheduled_update.wait_interval_seconds: must be 0-3600, got "
                f"{self.wait_interval_seconds!r}"
            )
        return found


@dataclass(frozen=True)
class KubernetesTaint:
    """A taint HyperPod puts on every node of an EKS-orchestrated group."""

    key: str
    effect: str = "NoSchedule"
    value: str | None = None


def _hyperpod_specs() -> dict[str, InstanceSpec]:
    return {spec.hyperpod_name: spec for spec in all_instance_types() if spec.hyperpod_name}


def to_ml_name(instance_type: str) -> str:
    """``p5.48xlarge`` or ``ml.p5.48xlarge`` -> ``ml.p5.48xlarge``."""
    name = instance_type.strip().lower()
    return name if name.startswith("ml.") else f"ml.{name}"


def lookup_instance_type(instance_type: str) -> InstanceSpec | None:
    """The catalog spec of an accelerated HyperPod type, None for a HyperPod CPU type.

    Raises FmValidationError for a type HyperPod does not offer (an accelerated type whose
    catalog ``hyperpod_name`` is None, or an unknown CPU type).
    """
    ml_name = to_ml_name(instance_type)
    spec = _hyperpod_specs().get(ml_name)
    if spec is not None:
        return spec
    if ml_name in HYPERPOD_CPU_INSTANCE_TYPES:
        return None
    accelerated = sorted(_hyperpod_specs())
    raise FmValidationError(
        [
            f"instance_type: must be an instance type SageMaker HyperPod offers (accelerated: "
            f"{', '.join(accelerated)}; CPU: {', '.join(sorted(HYPERPOD_CPU_INSTANCE_TYPES))}), "
            f"got {instance_type!r}; choose a listed type (HyperPod names carry the 'ml.' "
            f"prefix)"
        ],
        code=codes.HYPERPOD_CLUSTER,
    )


@dataclass(frozen=True)
class InstanceGroup:
    """One HyperPod instance group.

    - ``instance_type``: EC2 or ``ml.`` spelling; rendered as the ``ml.`` name.
    - ``instance_count``: at least 1 (HyperPod allows 0, but a group with no instances is
      almost always a mistake in a profile).
    - ``threads_per_core``: 1 or 2; None means 1 for accelerated groups (one training process
      per physical core, the HyperPod and EFA recommendation) and the HyperPod default for CPU
      groups.
    - ``ebs_volume_size_gib``/``ebs_kms_key``: an extra EBS volume mounted at /opt/sagemaker
      (container images, local scratch), encrypted with the key when given.
    - ``deep_health_checks``: None means InstanceStress on accelerated groups, plus
      InstanceConnectivity when the type has EFA and the group has two or more instances;
      ``()`` turns them off.
    - ``capacity``: on-demand (default) or ``CapacitySource.training_plan(...)``; EC2
      reservations (ODCR, Capacity Blocks) cannot feed HyperPod.
    - ``kubernetes_labels``/``kubernetes_taints``: EKS only.
    - ``slurm_node_type``/``partition_name``: Slurm only (the partition defaults to the group
      name).
    - ``efa_layout``: the network interfaces HyperPod requests for EFA types
      (``NetworkInterface.InterfaceType``): ``EFA_ONLY`` (default) asks for ``efa-only``
      interfaces, which carry no IP, where every EFA card of the type supports them, so a node
      uses the addresses the IP budget counts for that layout; ``LEGACY`` asks for ``efa``.
    - ``scheduled_update``: AMI updates on a schedule, in batches (:class:`ScheduledUpdate`);
      ``auto_patch``: OS security patches as instances become idle (:class:`PatchingStrategy`).
      Both are off by default: a training group changes AMI only when you ask.
    """

    name: str
    instance_type: str
    instance_count: int = 1
    slurm_node_type: SlurmNodeType = SlurmNodeType.WORKER
    threads_per_core: int | None = None
    ebs_volume_size_gib: int | None = None
    ebs_kms_key: kms.IKey | None = None
    deep_health_checks: Sequence[DeepHealthCheck] | None = None
    capacity: CapacitySource | None = None
    kubernetes_labels: Mapping[str, str] = field(default_factory=dict)
    kubernetes_taints: Sequence[KubernetesTaint] = ()
    image_id: str | None = None
    partition_name: str | None = None
    efa_layout: EfaLayout = EfaLayout.EFA_ONLY
    scheduled_update: ScheduledUpdate | None = None
    auto_patch: PatchingStrategy | None = None

    # ---- derived values ---------------------------------------------------------------------

    @property
    def hyperpod_instance_type(self) -> str:
        return to_ml_name(self.instance_type)

    @property
    def spec(self) -> InstanceSpec | None:
        """Catalog spec for accelerated types; None for CPU types (raises for unknown types)."""
        return lookup_instance_type(self.instance_type)

    @property
    def is_accelerated(self) -> bool:
        spec = self.spec
        return spec is not None and spec.is_accelerated

    @property
    def resolved_threads_per_core(self) -> int | None:
        if self.threads_per_core is not None:
            return self.threads_per_core
        return 1 if self.is_accelerated else None

    @property
    def resolved_deep_health_checks(self) -> tuple[DeepHealthCheck, ...]:
        if self.deep_health_checks is not None:
            return tuple(DeepHealthCheck(check) for check in self.deep_health_checks)
        spec = self.spec
        if spec is None or not spec.is_accelerated:
            return ()
        checks = [DeepHealthCheck.INSTANCE_STRESS]
        if spec.efa_supported and _count(self.instance_count) >= 2:
            checks.append(DeepHealthCheck.INSTANCE_CONNECTIVITY)
        return tuple(checks)

    @property
    def network_interface_type(self) -> str | None:
        """``efa-only``, ``efa`` or None (no EFA): see ``efa_layout``."""
        spec = self.spec
        if spec is None or not spec.efa_supported:
            return None
        if EfaLayout(self.efa_layout) is EfaLayout.EFA_ONLY and spec.efa_only_supported:
            return "efa-only"
        return "efa"

    @property
    def training_plan_arn(self) -> str | None:
        return self.capacity.hyperpod_training_plan_arn if self.capacity else None

    @property
    def resolved_partition_name(self) -> str:
        return self.partition_name or self.name

    # ---- validation -------------------------------------------------------------------------

    def problems(self, orchestrator: Orchestrator) -> list[str]:
        """Every rule this group breaks when used with ``orchestrator``."""
        found: list[str] = []
        prefix = f"instance_groups[{self.name!r}]."

        def add(field_name: str, value: object, requirement: str) -> None:
            found.append(f"{prefix}{field_name}: {requirement}, got {value!r}")

        if not GROUP_NAME_PATTERN.match(self.name) or len(self.name) > GROUP_NAME_MAX_LENGTH:
            add(
                "name",
                self.name,
                "must be 1-63 letters, digits and hyphens, starting and ending with a letter "
                "or digit",
            )
        spec: InstanceSpec | None = None
        known_type = True
        try:
            spec = self.spec
        except FmValidationError as error:
            known_type = False
            found.extend(f"{prefix}{problem}" for problem in error.problems)
        accelerated = spec is not None and spec.is_accelerated
        count = self.instance_count
        if not Token.is_unresolved(count) and not 1 <= count <= MAX_INSTANCE_COUNT:
            kind = "worker group" if self.slurm_node_type is SlurmNodeType.WORKER else "group"
            add(
                "instance_count",
                count,
                f"a {kind} needs between 1 and {MAX_INSTANCE_COUNT} instances",
            )
        if self.threads_per_core is not None and self.threads_per_core not in (1, 2):
            add(
                "threads_per_core",
                self.threads_per_core,
                "must be 1 (multithreading off) or 2 (on)",
            )
        if self.ebs_volume_size_gib is not None and not Token.is_unresolved(
            self.ebs_volume_size_gib
        ):
            low, high = EBS_VOLUME_SIZE_GIB
            if not low <= self.ebs_volume_size_gib <= high:
                add("ebs_volume_size_gib", self.ebs_volume_size_gib, f"must be {low}-{high}")
        if self.ebs_kms_key is not None and self.ebs_volume_size_gib is None:
            add(
                "ebs_kms_key",
                "<key>",
                "encrypts the extra EBS volume, so ebs_volume_size_gib must be set too",
            )
        if self.scheduled_update is not None:
            found.extend(self.scheduled_update.problems(prefix))
        if self.auto_patch is not None and self.auto_patch not in list(PatchingStrategy):
            add(
                "auto_patch",
                self.auto_patch,
                f"must be one of {', '.join(p.value for p in PatchingStrategy)}",
            )
        self._check_health_checks(add, spec, known_type)
        self._check_capacity(add, accelerated, known_type)
        self._check_orchestrator(add, orchestrator)
        if (
            self.image_id is not None
            and not Token.is_unresolved(self.image_id)
            and not _AMI_ID.match(self.image_id)
        ):
            add("image_id", self.image_id, "must be an AMI id such as ami-0123456789abcdef0")
        return found

    def _check_health_checks(self, add: _Add, spec: InstanceSpec | None, known: bool) -> None:
        if self.deep_health_checks is None or not known:
            return
        checks = list(self.deep_health_checks)
        valid = [c.value for c in DeepHealthCheck]
        for check in checks:
            if check not in valid:
                add("deep_health_checks", check, f"each must be one of {', '.join(valid)}")
        if checks and (spec is None or not spec.is_accelerated):
            add(
                "deep_health_checks",
                checks,
                "deep health checks test accelerators and EFA; use them on GPU/Trainium "
                "groups only (pass () for CPU groups)",
            )
        if DeepHealthCheck.INSTANCE_CONNECTIVITY in checks and spec is not None:
            if not spec.efa_supported:
                add(
                    "deep_health_checks",
                    checks,
                    f"InstanceConnectivity tests EFA between instances, and {spec.name} has "
                    f"no EFA; drop it",
                )
            elif not Token.is_unresolved(self.instance_count) and self.instance_count < 2:
                add(
                    "deep_health_checks",
                    checks,
                    "InstanceConnectivity tests traffic between instances and needs at least "
                    "2 in the group; drop it or raise instance_count",
                )

    def _check_capacity(self, add: _Add, accelerated: bool, known: bool) -> None:
        capacity = self.capacity
        if capacity is None:
            return
        if capacity.kind in (CapacityKind.ODCR, CapacityKind.CAPACITY_BLOCK):
            add(
                "capacity",
                capacity.kind.value,
                "HyperPod instances run in SageMaker's accounts and cannot use EC2 capacity "
                "reservations; reserve HyperPod capacity with a SageMaker training plan "
                "(CapacitySource.training_plan) or use on-demand",
            )
        if capacity.kind is CapacityKind.TRAINING_PLAN and known and not accelerated:
            add(
                "capacity",
                capacity.training_plan_arn,
                f"a training plan reserves accelerated capacity; {self.hyperpod_instance_type} "
                f"is a CPU type, so leave capacity unset for this group",
            )
        if known:
            found = capacity.problems_with(
                node_count=self.instance_count, instance_type=self.instance_type
            )
            for problem in found:
                add("capacity", capacity.kind.value, problem)

    def _check_orchestrator(self, add: _Add, orchestrator: Orchestrator) -> None:
        if orchestrator is Orchestrator.HYPERPOD_SLURM:
            if self.kubernetes_labels or self.kubernetes_taints:
                add(
                    "kubernetes_labels",
                    dict(self.kubernetes_labels) or list(self.kubernetes_taints),
                    "Kubernetes labels and taints apply to EKS-orchestrated clusters only; "
                    "remove them for Slurm (use partitions instead)",
                )
            return
        if self.slurm_node_type is not SlurmNodeType.WORKER:
            add(
                "slurm_node_type",
                self.slurm_node_type.value,
                "EKS-orchestrated clusters have worker groups only (the EKS control plane "
                "replaces the Slurm controller and login nodes)",
            )
        if self.partition_name is not None:
            add("partition_name", self.partition_name, "is a Slurm setting; remove it for EKS")
        for key, value in self.kubernetes_labels.items():
            if not _LABEL_KEY.match(key):
                add("kubernetes_labels", key, "keys must be Kubernetes label keys")
            if not _LABEL_VALUE.match(value):
                add("kubernetes_labels", value, "values must be Kubernetes label values")
        for taint in self.kubernetes_taints:
            if taint.effect not in TAINT_EFFECTS:
                add("kubernetes_taints", taint.effect, f"effect must be one of {TAINT_EFFECTS}")
            if not _LABEL_KEY.match(taint.key):
                add("kubernetes_taints", taint.key, "key must be a Kubernetes label key")


def _count(value: int) -> int:
    return 0 if Token.is_unresolved(value) else value


#: EBS volume of the controller and the login node (GiB).
CPU_GROUP_EBS_VOLUME_GIB = 100


def _cpu_group(
    node_type: SlurmNodeType, instance_type: str, ebs_kms_key: kms.IKey | None
) -> InstanceGroup:
    """The single-node CPU group of ``node_type`` (controller or login), named after it."""
    return InstanceGroup(
        name=node_type.value,
        instance_type=instance_type,
        instance_count=1,
        slurm_node_type=node_type,
        ebs_volume_size_gib=CPU_GROUP_EBS_VOLUME_GIB,
        ebs_kms_key=ebs_kms_key,
    )


def slurm_instance_groups(
    *,
    worker_instance_type: str,
    worker_count: int,
    worker_capacity: CapacitySource | None = None,
    worker_group_name: str = "workers",
    controller_instance_type: str = "ml.m5.2xlarge",
    login_instance_type: str | None = "ml.m5.4xlarge",
    worker_ebs_volume_size_gib: int | None = HYPERPOD_EBS_VOLUME_GIB,
    ebs_kms_key: kms.IKey | None = None,
    efa_layout: EfaLayout = EfaLayout.EFA_ONLY,
) -> list[InstanceGroup]:
    """The usual Slurm layout: one controller (slurmctld, and slurmdbd with its database), one login
    node (users submit and build there, so compute nodes stay clean; None to skip it) and one
    accelerated worker group in a partition named after it.

    Controller and login stay on CPU types with multithreading left at the HyperPod default; the
    workers get one thread per core, the deep health checks and the capacity source.
    """
    groups = [_cpu_group(SlurmNodeType.CONTROLLER, controller_instance_type, ebs_kms_key)]
    if login_instance_type is not None:
        groups.append(_cpu_group(SlurmNodeType.LOGIN, login_instance_type, ebs_kms_key))
    groups.append(
        InstanceGroup(
            name=worker_group_name,
            instance_type=worker_instance_type,
            instance_count=worker_count,
            slurm_node_type=SlurmNodeType.WORKER,
            ebs_volume_size_gib=worker_ebs_volume_size_gib,
            ebs_kms_key=ebs_kms_key if worker_ebs_volume_size_gib is not None else None,
            capacity=worker_capacity,
            efa_layout=efa_layout,
        )
    )
    return groups


def check_layout(groups: Sequence[InstanceGroup], orchestrator: Orchestrator) -> list[str]:
    """Problems of the group list as a whole (names, Slurm roles), then of each group."""
    found: list[str] = []
    if not groups:
        found.append("instance_groups: a cluster needs at least one instance group, got []")
    names = [group.name for group in groups]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        found.append(f"instance_groups: group names must be unique, got {duplicates!r}")
    if len(groups) > 100:
        found.append(f"instance_groups: at most 100 groups, got {len(groups)!r}")
    if orchestrator is Orchestrator.HYPERPOD_SLURM:
        by_type = {
            node_type: [g.name for g in groups if g.slurm_node_type is node_type]
            for node_type in SlurmNodeType
        }
        if len(by_type[SlurmNodeType.CONTROLLER]) != 1:
            found.append(
                "instance_groups: a Slurm cluster needs exactly one controller group "
                f"(slurm_node_type=CONTROLLER), got {by_type[SlurmNodeType.CONTROLLER]!r}"
            )
        if len(by_type[SlurmNodeType.LOGIN]) > 1:
            found.append(
                "instance_groups: a Slurm cluster takes at most one login group, got "
                f"{by_type[SlurmNodeType.LOGIN]!r}"
            )
        for group in groups:
            if (
                group.slurm_node_type is not SlurmNodeType.WORKER
                and not Token.is_unresolved(group.instance_count)
                and group.instance_count != 1
            ):
                found.append(
                    f"instance_groups[{group.name!r}].instance_count: the Slurm "
                    f"{group.slurm_node_type.value} group runs exactly one instance, got "
                    f"{group.instance_count!r}"
                )
    if not any(g.slurm_node_type is SlurmNodeType.WORKER for g in groups):
        found.append(
            "instance_groups: the cluster needs at least one worker group with instances; "
            f"got groups {names!r}"
        )
    for group in groups:
        found.extend(group.problems(orchestrator))
    return found
