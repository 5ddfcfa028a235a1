"""The validated profile: frozen dataclasses that stacks and the CLI are built from.

A profile file (TOML) is parsed by :mod:`fm_constructs.config.loader` into these types; nothing
downstream ever reads raw TOML, so every key is checked exactly once, in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class Orchestrator(StrEnum):
    """Who schedules work on the accelerated nodes."""

    EKS = "eks"
    HYPERPOD_EKS = "hyperpod-eks"
    HYPERPOD_SLURM = "hyperpod-slurm"


class CapacityKind(StrEnum):
    """Where the accelerated instances come from."""

    ON_DEMAND = "on-demand"
    ODCR = "odcr"
    CAPACITY_BLOCK = "capacity-block"
    TRAINING_PLAN = "training-plan"


class NatGateways(StrEnum):
    """One NAT gateway per availability zone (resilient) or a single one (cheaper)."""

    PER_AZ = "per-az"
    SINGLE = "single"


class EfaLayoutName(StrEnum):
    """Launch-template interface layout: ``efa-only`` saves VPC addresses (current AWS
    guidance); ``legacy`` puts an IP-carrying ``efa`` interface on every card."""

    EFA_ONLY = "efa-only"
    LEGACY = "legacy"


@dataclass(frozen=True)
class CapacityConfig:
    """``[<workload>.capacity]``: on-demand, an ODCR, a Capacity Block or a training plan."""

    kind: CapacityKind = CapacityKind.ON_DEMAND
    reservation_id: str | None = None
    resource_group_arn: str | None = None
    training_plan_arn: str | None = None
    reserved_instance_count: int | None = None


@dataclass(frozen=True)
class StorageConfig:
    """``[<workload>.storage]``: the FSx for Lustre file system linked to the data bucket.

    Either explicit ``storage_capacity_gib`` + ``throughput_mb_s_per_tib`` or a sizing
    request (``checkpoint_size_gib`` or ``model_parameters_billion``, with
    ``checkpoint_write_seconds``, ``dataset_size_gib`` and ``checkpoints_to_keep``).
    """

    enabled: bool = True
    storage_capacity_gib: int | None = None
    throughput_mb_s_per_tib: int | None = None
    checkpoint_size_gib: float | None = None
    model_parameters_billion: float | None = None
    bytes_per_parameter: float | None = None
    checkpoint_write_seconds: int | None = None
    dataset_size_gib: float | None = None
    checkpoints_to_keep: int | None = None
    efa_enabled: bool = False
    metadata_iops: int | None = None
    backup_retention_days: int = 7

    @property
    def is_sized(self) -> bool:
        """True when the profile asks for a sizing calculation instead of explicit numbers."""
        return self.checkpoint_size_gib is not None or self.model_parameters_billion is not None


@dataclass(frozen=True)
class WorkloadConfig:
    """``[pretraining]``, ``[post_training]`` or ``[inference]``: one accelerated workload."""

    name: str
    enabled: bool
    orchestrator: Orchestrator
    instance_type: str
    instance_count: int
    capacity: CapacityConfig = field(default_factory=CapacityConfig)
    efa_layout: EfaLayoutName = EfaLayoutName.EFA_ONLY
    root_volume_size_gib: int = 200
    storage: StorageConfig = field(default_factory=StorageConfig)


@dataclass(frozen=True)
class PlatformConfig:
    """``[platform]``: what every workload shares (account, region, network)."""

    name: str
    region: str
    availability_zone: str
    availability_zones: tuple[str, ...]
    account: str | None = None
    vpc_cidr: str = "10.0.0.0/16"
    nat_gateways: NatGateways = NatGateways.PER_AZ
    termination_protection: bool = True


@dataclass(frozen=True)
class Profile:
    """A whole deployment: the shared platform and the three workloads."""

    platform: PlatformConfig
    pretraining: WorkloadConfig
    post_training: WorkloadConfig
    inference: WorkloadConfig
    source: str = "<memory>"

    @property
    def workloads(self) -> tuple[WorkloadConfig, ...]:
        """All three workloads, enabled or not, in a stable order."""
        return (self.pretraining, self.post_training, self.inference)

    @property
    def enabled_workloads(self) -> tuple[WorkloadConfig, ...]:
        return tuple(w for w in self.workloads if w.enabled)
