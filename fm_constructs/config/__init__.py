"""The profile model: TOML profiles validated into frozen dataclasses (no aws_cdk import)."""

from fm_constructs.config.loader import load_profile, parse_profile
from fm_constructs.config.model import (
    AutoscalingConfig,
    CapacityConfig,
    CapacityKind,
    LoadBalancer,
    ModelConfig,
    NatGateways,
    Orchestrator,
    PlatformConfig,
    Profile,
    RolloutConfig,
    ServingMetric,
    StorageConfig,
    TrainingGoalConfig,
    WorkloadConfig,
)

__all__ = [
    "AutoscalingConfig",
    "CapacityConfig",
    "CapacityKind",
    "LoadBalancer",
    "ModelConfig",
    "NatGateways",
    "Orchestrator",
    "PlatformConfig",
    "Profile",
    "RolloutConfig",
    "ServingMetric",
    "StorageConfig",
    "TrainingGoalConfig",
    "WorkloadConfig",
    "load_profile",
    "parse_profile",
]
