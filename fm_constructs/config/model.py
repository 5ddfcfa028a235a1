"""The validated profile (re-exported): the frozen dataclasses live in
:mod:`fm_constructs.profile.model`, below the rules that check them; every name stays
importable from here."""

from fm_constructs.profile.model import SHARED_CLUSTER as SHARED_CLUSTER
from fm_constructs.profile.model import AutoscalingConfig as AutoscalingConfig
from fm_constructs.profile.model import CapacityConfig as CapacityConfig
from fm_constructs.profile.model import CapacityKind as CapacityKind
from fm_constructs.profile.model import InferenceConfig as InferenceConfig
from fm_constructs.profile.model import LoadBalancer as LoadBalancer
from fm_constructs.profile.model import ModelConfig as ModelConfig
from fm_constructs.profile.model import NatGateways as NatGateways
from fm_constructs.profile.model import Orchestrator as Orchestrator
from fm_constructs.profile.model import PcsAmiConfig as PcsAmiConfig
from fm_constructs.profile.model import PlatformConfig as PlatformConfig
from fm_constructs.profile.model import PostTrainingConfig as PostTrainingConfig
from fm_constructs.profile.model import PostTrainingStorageConfig as PostTrainingStorageConfig
from fm_constructs.profile.model import PretrainingConfig as PretrainingConfig
from fm_constructs.profile.model import Profile as Profile
from fm_constructs.profile.model import ReservationConfig as ReservationConfig
from fm_constructs.profile.model import RolloutConfig as RolloutConfig
from fm_constructs.profile.model import ServingMetric as ServingMetric
from fm_constructs.profile.model import StorageConfig as StorageConfig
from fm_constructs.profile.model import TrainingGoalConfig as TrainingGoalConfig
from fm_constructs.profile.model import TrainingWorkloadConfig as TrainingWorkloadConfig
from fm_constructs.profile.model import WorkloadConfig as WorkloadConfig
