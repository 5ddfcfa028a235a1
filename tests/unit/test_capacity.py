"""CapacitySource: forms, validation and mappings (no synthesis needed)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from fm_constructs.compute import CapacityKind, CapacitySource
from fm_constructs.errors import FmValidationError

CR = "cr-0123456789abcdef0"
RG = "arn:aws:resource-groups:us-east-1:111122223333:group/p5-reservations"
PLAN = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/llama-pretrain-64"


def test_on_demand_maps_to_nothing() -> None:
    source = CapacitySource.on_demand()
    assert source.launch_template_capacity_reservation_specification() is None
    assert source.launch_template_instance_market_options() is None
    assert source.eks_capacity_type() == "ON_DEMAND"
    assert source.allows_placement_group and not source.is_reserved
    assert source.hyperpod_training_plan_arn is None


def test_odcr_by_id_and_by_group() -> None:
    by_id = CapacitySource.odcr(CR)
    spec = by_id.launch_template_capacity_reservation_specification()
    assert spec is not None
    target = spec.capacity_reservation_target
    assert target.capacity_reservation_id == CR  # type: ignore[union-attr]
    assert by_id.launch_template_instance_market_options() is None
    assert by_id.eks_capacity_type() == "ON_DEMAND"
    assert by_id.allows_placement_group
    by_group = CapacitySource.odcr(resource_group_arn=RG)
    group_spec = by_group.launch_template_capacity_reservation_specification()
    assert group_spec is not None
    group_target = group_spec.capacity_reservation_target
    assert group_target.capacity_reservation_resource_group_arn == RG  # type: ignore[union-attr]
    assert not CapacitySource.odcr(CR, managed_placement=True).allows_placement_group


def test_capacity_block_maps_to_market_type_and_eks_type() -> None:
    block = CapacitySource.capacity_block(CR, availability_zone="us-east-1a", instance_count=8)
    options = block.launch_template_instance_market_options()
    assert options is not None and options.market_type == "capacity-block"
    assert block.eks_capacity_type() == "CAPACITY_BLOCK"
    assert not block.allows_placement_group


def test_training_plan_is_for_hyperpod_only() -> None:
    plan = CapacitySource.training_plan(PLAN)
    assert plan.kind is CapacityKind.TRAINING_PLAN
    assert plan.hyperpod_training_plan_arn == PLAN
    with pytest.raises(FmValidationError, match="HyperPod"):
        plan.launch_template_capacity_reservation_specification()
    with pytest.raises(FmValidationError, match="EKS managed node groups"):
        plan.eks_capacity_type()


@pytest.mark.parametrize(
    "reservation_id", ["cr-123", "CR-0123456789ABCDEF0", "cr-0123456789abcdef0x", "r-0123"]
)
def test_malformed_reservation_ids(reservation_id: str) -> None:
    with pytest.raises(FmValidationError, match="cr- followed by 17 lowercase hex digits"):
        CapacitySource.odcr(reservation_id)


def test_capacity_block_without_id() -> None:
    with pytest.raises(FmValidationError, match="a Capacity Block needs its reservation id"):
        CapacitySource.capacity_block("")


def test_odcr_needs_exactly_one_target() -> None:
    with pytest.raises(FmValidationError, match="exactly one"):
        CapacitySource.odcr()
    with pytest.raises(FmValidationError, match="exactly one"):
        CapacitySource.odcr(CR, resource_group_arn=RG)


def test_bad_arns_and_zone_reported_together() -> None:
    with pytest.raises(FmValidationError, match="3 problems") as caught:
        CapacitySource.odcr(
            resource_group_arn="arn:aws:ec2:us-east-1:111122223333:group/x",
            availability_zone="use1-az4",
            instance_count=0,
        )
    message = str(caught.value)
    assert "resource group ARN" in message and "zone id" in message and "at least 1" in message
    with pytest.raises(FmValidationError, match="training plan ARN"):
        CapacitySource.training_plan("arn:aws:sagemaker:us-east-1:111122223333:model/x-y-z-w")


def test_tokens_are_not_validated() -> None:
    token_id = cdk.Fn.ref("Reservation")
    token_count = cdk.Token.as_number(cdk.Fn.ref("Count"))
    source = CapacitySource.capacity_block(
        token_id, instance_count=token_count, availability_zone=cdk.Fn.ref("Zone")
    )
    source.check(node_count=100, availability_zone="us-east-1b")  # nothing to refuse


def test_node_count_zone_and_type_checks() -> None:
    block = CapacitySource.capacity_block(
        CR, availability_zone="us-east-1a", instance_count=4, instance_type="p5.48xlarge"
    )
    block.check(node_count=4, availability_zone="us-east-1a", instance_type="ml.p5.48xlarge")
    with pytest.raises(FmValidationError, match="3 problems") as caught:
        block.check(node_count=5, availability_zone="us-east-1b", instance_type="p5en.48xlarge")
    message = str(caught.value)
    assert "5 nodes exceed the capacity-block reservation of 4 instances" in message
    assert "reservation is in us-east-1a" in message and "'us-east-1b'" in message
    assert "reservation is for p5.48xlarge" in message


def test_on_demand_rejects_reservation_fields() -> None:
    with pytest.raises(FmValidationError, match="must be unset for on-demand"):
        CapacitySource(kind=CapacityKind.ON_DEMAND, reservation_id=CR)
