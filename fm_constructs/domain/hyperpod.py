"""SageMaker HyperPod's vocabulary and bounds: the parts a group plays in a Slurm cluster, the
deep health checks and patching strategies, the CPU types offered, and the limits of the
CloudFormation schema of AWS::SageMaker::Cluster (group names, counts, volume sizes, taint
effects, the update schedule). The instance-group construct and its rules
(:mod:`fm_constructs.rules.hyperpod`) read them here."""

from __future__ import annotations

import re
from enum import StrEnum

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


def to_ml_name(instance_type: str) -> str:
    """``p5.48xlarge`` or ``ml.p5.48xlarge`` -> ``ml.p5.48xlarge``."""
    name = instance_type.strip().lower()
    return name if name.startswith("ml.") else f"ml.{name}"
