"""Typed SageMaker HyperPod instance groups and the Slurm defaults (controller, login, workers).

An :class:`InstanceGroup` is a plain value: it names the group, its instance type (validated
against the catalog for accelerated types and against :data:`HYPERPOD_CPU_INSTANCE_TYPES` for
CPU-only types, always rendered with HyperPod's ``ml.`` prefix), count, threads per core, extra
EBS volume, on-start deep health checks, capacity (training plan), Kubernetes labels and taints
(EKS only) and an optional AMI. :meth:`InstanceGroup.problems` reports every rule it breaks so
the cluster can raise them all at once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from aws_cdk import Token
from aws_cdk import aws_kms as kms

from fm_constructs.catalog import InstanceSpec
from fm_constructs.compute import CapacitySource
from fm_constructs.domain.defaults import HYPERPOD_EBS_VOLUME_GIB
from fm_constructs.domain.findings import Finding
from fm_constructs.domain.hyperpod import CRON_PATTERN as CRON_PATTERN
from fm_constructs.domain.hyperpod import EBS_VOLUME_SIZE_GIB as EBS_VOLUME_SIZE_GIB
from fm_constructs.domain.hyperpod import GROUP_NAME_MAX_LENGTH as GROUP_NAME_MAX_LENGTH
from fm_constructs.domain.hyperpod import GROUP_NAME_PATTERN as GROUP_NAME_PATTERN
from fm_constructs.domain.hyperpod import HYPERPOD_CPU_INSTANCE_TYPES as HYPERPOD_CPU_INSTANCE_TYPES
from fm_constructs.domain.hyperpod import MAX_INSTANCE_COUNT as MAX_INSTANCE_COUNT
from fm_constructs.domain.hyperpod import TAINT_EFFECTS as TAINT_EFFECTS
from fm_constructs.domain.hyperpod import DeepHealthCheck as DeepHealthCheck
from fm_constructs.domain.hyperpod import PatchingStrategy as PatchingStrategy
from fm_constructs.domain.hyperpod import SlurmNodeType as SlurmNodeType
from fm_constructs.domain.hyperpod import to_ml_name as to_ml_name
from fm_constructs.domain.kinds import HYPERPOD, Orchestrator
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import hyperpod as hyperpod_rules


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


@dataclass(frozen=True)
class ScheduledUpdate:
    """HyperPod updates the group's AMI to the latest release on ``cron`` (for example
    ``cron(0 4 ? * SUN *)``: Sundays 04:00 UTC), ``batch_percentage`` of the instances at a
    time with ``wait_interval_seconds`` between batches (``ScheduledUpdateConfig``)."""

    cron: str
    batch_percentage: int = 20
    wait_interval_seconds: int = 300

    def findings(self, prefix: str) -> list[Finding]:
        cron = None if Token.is_unresolved(self.cron) else self.cron
        return hyperpod_rules.scheduled_update(
            cron, self.batch_percentage, self.wait_interval_seconds, prefix=prefix
        )


@dataclass(frozen=True)
class KubernetesTaint:
    """A taint HyperPod puts on every node of an EKS-orchestrated group."""

    key: str
    effect: str = "NoSchedule"
    value: str | None = None


def lookup_instance_type(instance_type: str) -> InstanceSpec | None:
    """The catalog spec of an accelerated HyperPod type, None for a HyperPod CPU type.

    Raises FmValidationError for a type HyperPod does not offer (an accelerated type whose
    catalog ``hyperpod_name`` is None, or an unknown CPU type:
    :func:`fm_constructs.rules.hyperpod.hyperpod_instance_type`).
    """
    found = hyperpod_rules.hyperpod_instance_type(instance_type)
    if found:
        raise FmValidationError(found)
    return hyperpod_rules.hyperpod_spec(instance_type)


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

    def rule_arguments(self) -> hyperpod_rules.GroupArguments:
        """The group as :mod:`fm_constructs.rules.hyperpod` reads it (tokens unknown)."""
        capacity = self.capacity
        known_type = not hyperpod_rules.hyperpod_instance_type(self.instance_type)
        return hyperpod_rules.GroupArguments(
            name=self.name,
            instance_type=self.instance_type,
            instance_count=_known(self.instance_count),
            slurm_node_type=self.slurm_node_type,
            threads_per_core=self.threads_per_core,
            ebs_volume=self.ebs_volume_size_gib is not None,
            ebs_volume_size_gib=_known(self.ebs_volume_size_gib),
            ebs_kms_key=self.ebs_kms_key is not None,
            scheduled_update=tuple(
                self.scheduled_update.findings(f"instance_groups[{self.name!r}].")
                if self.scheduled_update is not None
                else ()
            ),
            auto_patch=self.auto_patch,
            deep_health_checks=self.deep_health_checks,
            capacity_kind=capacity.kind if capacity is not None else None,
            training_plan_arn=capacity.training_plan_arn if capacity is not None else None,
            capacity_placement=capacity.placement if capacity is not None and known_type else None,
            kubernetes_labels=self.kubernetes_labels,
            kubernetes_taints=tuple(self.kubernetes_taints),
            partition_name=self.partition_name,
            image_id=_known(self.image_id),
        )


def _known(value: Any) -> Any:
    """``value``, or None when it is a deploy-time token (the rules leave it unchecked)."""
    return None if value is None or Token.is_unresolved(value) else value


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


def check_layout(groups: Sequence[InstanceGroup], orchestrator: Orchestrator) -> list[Finding]:
    """Problems of the group list as a whole (names, Slurm roles), then of each group
    (:func:`fm_constructs.rules.hyperpod.group_layout`)."""
    slurm = orchestrator is Orchestrator.HYPERPOD_SLURM
    return hyperpod_rules.group_layout([g.rule_arguments() for g in groups], slurm=slurm)
