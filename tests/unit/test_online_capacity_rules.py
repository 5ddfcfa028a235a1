"""The reserved-capacity online rules (rules/online/capacity.py) on real botocore clients
answered by botocore's Stubber: an ODCR resource group (FM702), a capacity reservation or
Capacity Block (FM703) and a SageMaker training plan (FM704), each against the workload that
launches into it; an info when it matches, a warning or an error naming the fix otherwise."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from fm_constructs.config import load_profile
from fm_constructs.config.model import CapacityConfig, CapacityKind, WorkloadConfig
from fm_constructs.rules.findings import Severity
from fm_constructs.rules.online import capacity
from fm_constructs.rules.online.aws import AwsCallError

REPO = Path(__file__).resolve().parents[2]
ZONE, REGION = "us-east-1a", "us-east-1"
NOW = datetime(2026, 6, 1, tzinfo=UTC)
WHERE = capacity.Where(ZONE, REGION, NOW, expiry_warning_hours=48)
RESERVATION_ID = "cr-0123456789abcdef0"
GROUP_ARN = "arn:aws:resource-groups:us-east-1:111122223333:group/gpus"
PLAN_ARN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/plan-a"


def _client(service: str) -> Any:
    return boto3.client(
        service, region_name=REGION, aws_access_key_id="x", aws_secret_access_key="x"
    )


@pytest.fixture
def ec2() -> Iterator[tuple[Any, Stubber]]:
    made = _client("ec2")
    with Stubber(made) as stubber:
        yield made, stubber
        stubber.assert_no_pending_responses()


def _workload(cap: CapacityConfig, count: int = 2) -> WorkloadConfig:
    profile = load_profile(REPO / "config" / "default.toml")
    return dataclasses.replace(profile.pretraining, instance_count=count, capacity=cap)


def _block(**overrides: object) -> dict[str, Any]:
    r: dict[str, Any] = {
        "CapacityReservationId": RESERVATION_ID,
        "InstanceType": "p5.48xlarge",
        "AvailabilityZone": ZONE,
        "TotalInstanceCount": 2,
        "State": "active",
        "ReservationType": "capacity-block",
        "EndDate": NOW + timedelta(days=5),
    }
    r.update(overrides)
    return {"CapacityReservations": [r]}


def _reservation(ec2: Any, w: WorkloadConfig) -> list[Any]:
    (target,) = capacity.reservation_targets(w)
    return capacity.reservation(ec2, w, target, WHERE)


BLOCK = CapacityConfig(kind=CapacityKind.CAPACITY_BLOCK, reservation_id=RESERVATION_ID)


@pytest.mark.parametrize(
    ("overrides", "severity", "text"),
    [
        ({}, Severity.INFO, f"{RESERVATION_ID}: active, 2 x p5.48xlarge in {ZONE}"),
        ({"EndDate": NOW + timedelta(hours=5)}, Severity.WARNING, "it ends in 5 h"),
        ({"TotalInstanceCount": 1}, Severity.ERROR, "it holds 1 instances, the profile wants 2"),
        ({"AvailabilityZone": "us-east-1b"}, Severity.ERROR, "it is in us-east-1b"),
        ({"ReservationType": "default"}, Severity.ERROR, "it is not a Capacity Block"),
        ({"State": "expired"}, Severity.ERROR, "state is 'expired'"),
    ],
    ids=["matches", "ends-soon", "too-small", "other-zone", "not-a-block", "expired"],
)
def test_reservation_outcomes(
    ec2: tuple[Any, Stubber], overrides: dict[str, Any], severity: Severity, text: str
) -> None:
    made, stubber = ec2
    stubber.add_response(
        "describe_capacity_reservations",
        _block(**overrides),
        {"CapacityReservationIds": [RESERVATION_ID]},
    )
    (finding,) = _reservation(made, _workload(BLOCK))
    assert (finding.code, finding.severity) == ("FM703", severity)
    assert text in finding.allowed
    assert bool(finding.fix) is (severity is not Severity.INFO)


def test_a_missing_reservation_names_the_key_to_fix(ec2: tuple[Any, Stubber]) -> None:
    made, stubber = ec2
    stubber.add_client_error(
        "describe_capacity_reservations",
        service_error_code="InvalidCapacityReservationId.NotFound",
        expected_params={"CapacityReservationIds": [RESERVATION_ID]},
    )
    (finding,) = _reservation(made, _workload(BLOCK))
    assert finding.is_error and finding.code == "FM703"
    assert finding.allowed == f"{RESERVATION_ID} does not exist in {REGION} for this account"
    assert finding.fix.startswith("fix pretraining.capacity.reservation_id")


def test_an_unanswered_reservation_call_names_its_action(ec2: tuple[Any, Stubber]) -> None:
    made, stubber = ec2
    stubber.add_client_error("describe_capacity_reservations", "UnauthorizedOperation")
    with pytest.raises(AwsCallError) as raised:
        _reservation(made, _workload(BLOCK))
    assert raised.value.action == "ec2:DescribeCapacityReservations"


@pytest.mark.parametrize(("held", "severity"), [(2, Severity.INFO), (1, Severity.ERROR)])
def test_reservation_group_holds_the_nodes(
    ec2: tuple[Any, Stubber], held: int, severity: Severity
) -> None:
    made, ec2_stubber = ec2
    groups = _client("resource-groups")
    reservation_arn = f"arn:aws:ec2:us-east-1:111122223333:capacity-reservation/{RESERVATION_ID}"
    w = _workload(CapacityConfig(kind=CapacityKind.ODCR, resource_group_arn=GROUP_ARN))
    with Stubber(groups) as group_stubber:
        group_stubber.add_response(
            "list_group_resources",
            {
                "Resources": [
                    {
                        "Identifier": {
                            "ResourceArn": reservation_arn,
                            "ResourceType": "AWS::EC2::CapacityReservation",
                        }
                    }
                ]
            },
            {"Group": GROUP_ARN},
        )
        ec2_stubber.add_response(
            "describe_capacity_reservations",
            _block(TotalInstanceCount=held, ReservationType="default"),
            {"CapacityReservationIds": [RESERVATION_ID]},
        )
        (target,) = capacity.reservation_targets(w)
        (finding,) = capacity.reservation_group(groups, made, w, target, WHERE)
        group_stubber.assert_no_pending_responses()
    assert (finding.code, finding.severity) == ("FM702", severity)
    assert f"1 usable for p5.48xlarge in {ZONE} holding {held} instances" in finding.allowed


def test_an_empty_reservation_group_fails() -> None:
    groups = _client("resource-groups")
    w = _workload(CapacityConfig(kind=CapacityKind.ODCR, resource_group_arn=GROUP_ARN))
    with Stubber(groups) as stubber:
        stubber.add_response("list_group_resources", {"Resources": []}, {"Group": GROUP_ARN})
        (target,) = capacity.reservation_targets(w)
        (finding,) = capacity.reservation_group(groups, _client("ec2"), w, target, WHERE)
    assert finding.is_error and finding.code == "FM702"
    assert finding.allowed == f"resource group {GROUP_ARN} holds no capacity reservations"


def _plan(**overrides: object) -> dict[str, Any]:
    """A DescribeTrainingPlan answer: 2 ml.p5.48xlarge in the GPU zone, active, for HyperPod."""
    segment = dict(
        ReservedCapacityArn="arn:aws:sagemaker:us-east-1:111122223333:reserved-capacity/rc-1",
        InstanceType="ml.p5.48xlarge",
        TotalInstanceCount=2,
        Status="Active",
        AvailabilityZone=ZONE,
    )
    answer = dict(
        TrainingPlanArn=PLAN_ARN,
        TrainingPlanName="plan-a",
        Status="Active",
        TotalInstanceCount=2,
        TargetResources=["hyperpod-cluster"],
        ReservedCapacitySummaries=[segment],
    )
    return {**answer, **overrides}


@pytest.mark.parametrize(
    ("overrides", "severity", "text"),
    [
        ({}, Severity.INFO, f"plan-a: Active, 2 instances in {ZONE}"),
        ({"Status": "Pending"}, Severity.WARNING, "status is 'Pending'"),
        ({"TotalInstanceCount": 1}, Severity.ERROR, "it holds 1 instances, the profile wants 2"),
        ({"TargetResources": ["training-job"]}, Severity.ERROR, "not hyperpod-cluster"),
    ],
    ids=["matches", "pending", "too-small", "other-target"],
)
def test_training_plan_outcomes(overrides: dict[str, Any], severity: Severity, text: str) -> None:
    sagemaker = _client("sagemaker")
    w = _workload(CapacityConfig(kind=CapacityKind.TRAINING_PLAN, training_plan_arn=PLAN_ARN))
    with Stubber(sagemaker) as stubber:
        stubber.add_response(
            "describe_training_plan", _plan(**overrides), {"TrainingPlanName": PLAN_ARN}
        )
        (finding,) = capacity.training_plan(sagemaker, w, WHERE)
        stubber.assert_no_pending_responses()
    assert (finding.code, finding.severity) == ("FM704", severity)
    assert text in finding.allowed


def test_a_missing_training_plan_fails() -> None:
    sagemaker = _client("sagemaker")
    w = _workload(CapacityConfig(kind=CapacityKind.TRAINING_PLAN, training_plan_arn=PLAN_ARN))
    with Stubber(sagemaker) as stubber:
        stubber.add_client_error("describe_training_plan", service_error_code="ResourceNotFound")
        (finding,) = capacity.training_plan(sagemaker, w, WHERE)
    assert finding.is_error and finding.code == "FM704"
    assert finding.fix.startswith("fix pretraining.capacity.training_plan_arn")
