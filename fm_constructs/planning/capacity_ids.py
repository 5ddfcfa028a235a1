"""Forms of the identifiers that name reserved capacity (the rules that check them are
:mod:`fm_constructs.rules.capacity`; no aws_cdk import)."""

from __future__ import annotations

import re

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


#: EC2 placement group ARN (``PlacementGroupArn`` of CreateCapacityReservation).
PLACEMENT_GROUP_ARN_PATTERN = re.compile(
    r"^arn:aws[a-z-]*:ec2:[a-z0-9-]+:\d{12}:placement-group/[A-Za-z0-9_.+=@-]{1,255}$"
)
