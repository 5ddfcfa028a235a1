"""Forms of the identifiers that name reserved capacity, checked the same way by the profile
loader and by :class:`fm_constructs.compute.CapacitySource` (no aws_cdk import)."""

from __future__ import annotations

import re

from fm_constructs.errors import Problems

#: EC2 capacity reservation ids: ``cr-`` and 17 lowercase hex digits (e.g. cr-02168da1478b509e0,
#: the example in the EKS Capacity Blocks guide).
RESERVATION_ID_PATTERN = re.compile(r"^cr-[0-9a-f]{17}$")
#: Capacity-reservation resource group ARN (AWS Resource Groups group ARN).
RESOURCE_GROUP_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z-]*:resource-groups:[a-z0-9-]+:\d{12}:group/[A-Za-z0-9_.-]{1,300}$"
)
#: SageMaker ``TrainingPlanArn`` pattern and length bounds from the SageMaker API model.
TRAINING_PLAN_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.*$"
)
TRAINING_PLAN_ARN_LENGTH = (50, 2048)


def check_reservation_id(problems: Problems, value: str) -> None:
    if not RESERVATION_ID_PATTERN.match(value):
        problems.add(
            "reservation_id",
            value,
            "must be a capacity reservation id: cr- followed by 17 lowercase hex digits "
            "(e.g. cr-0123456789abcdef0)",
        )


def check_resource_group_arn(problems: Problems, value: str) -> None:
    if not RESOURCE_GROUP_ARN_PATTERN.match(value):
        problems.add(
            "resource_group_arn",
            value,
            "must be a resource group ARN "
            "(arn:aws:resource-groups:<region>:<account>:group/<name>)",
        )


def check_training_plan_arn(problems: Problems, value: str) -> None:
    low, high = TRAINING_PLAN_ARN_LENGTH
    if not TRAINING_PLAN_ARN_PATTERN.match(value) or not low <= len(value) <= high:
        problems.add(
            "training_plan_arn",
            value,
            f"must be a SageMaker training plan ARN "
            f"(arn:aws:sagemaker:<region>:<account>:training-plan/<name>, {low}-{high} characters)",
        )


#: EC2 placement group ARN (``PlacementGroupArn`` of CreateCapacityReservation).
PLACEMENT_GROUP_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z-]*:ec2:[a-z0-9-]+:\d{12}:placement-group/[A-Za-z0-9_.+=@-]{1,255}$"
)


def check_placement_group_arn(problems: Problems, value: str) -> None:
    if not PLACEMENT_GROUP_ARN_PATTERN.match(value):
        problems.add(
            "placement_group_arn",
            value,
            "must be a placement group ARN (arn:aws:ec2:<region>:<account>:placement-group/<name>)",
        )
