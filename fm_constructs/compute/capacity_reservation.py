"""An On-Demand Capacity Reservation created by the stack, usable as a CapacitySource."""

from __future__ import annotations

from datetime import UTC, datetime

from aws_cdk import Annotations, RemovalPolicy, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.catalog import catalogued_spec
from fm_constructs.compute.capacity import CapacitySource
from fm_constructs.errors import Problems
from fm_constructs.rules import compute as compute_rules
from fm_constructs.rules import constructs as codes

#: CloudFormation ``InstanceCount`` range for AWS::EC2::CapacityReservation.
MAX_INSTANCE_COUNT = compute_rules.MAX_RESERVATION_INSTANCE_COUNT
#: CloudFormation ``Tenancy`` values (botocore ``CapacityReservationTenancy``).
TENANCIES = compute_rules.TENANCIES


class OnDemandCapacityReservation(Construct):
    """``AWS::EC2::CapacityReservation`` for accelerated instances, ``targeted`` so only launch
    templates that name it consume it.

    ``end_date`` (UTC ``datetime`` or ISO 8601 ``...Z`` string) makes it expire; without one it
    lasts until cancelled. Retained on stack deletion by default: releasing hard-won GPU capacity
    must be a deliberate act (``removal_policy=RemovalPolicy.DESTROY``); a retained reservation
    keeps billing at the On-Demand rate after ``cdk destroy`` (a synth warning says so).

    ``tenancy``: ``default`` (shared hardware) or ``dedicated``; instances use the reservation
    only when theirs matches. ``EbsOptimized`` is left unset: every catalog type is a Nitro
    instance, EBS-optimized by default, and the flag is not among the attributes EC2 matches
    instances to a reservation by (type, platform, zone, tenancy).

    ``placement_group``: reserve the capacity inside this cluster placement group, as the EC2
    guide recommends for clusters ("reserve capacity explicitly in the cluster placement
    group"); :attr:`capacity_source` then carries the group, and launch templates using it
    launch into that group and create no second one.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.CAPACITY_RESERVATION

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        instance_type: str,
        availability_zone: str,
        instance_count: int,
        end_date: datetime | str | None = None,
        instance_platform: str = "Linux/UNIX",
        tenancy: str = "default",
        placement_group: ec2.IPlacementGroup | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        spec = catalogued_spec(problems, instance_type)
        problems.adopt(
            compute_rules.capacity_reservation(
                availability_zone, instance_count, tenancy, end_date, now=datetime.now(UTC)
            )
        )
        end_text = compute_rules.reservation_end_text(end_date)
        problems.raise_if_any()
        assert spec is not None  # a catalog miss is among the problems raised above
        stack = Stack.of(self)
        self.placement_group_arn: str | None = (
            stack.format_arn(
                service="ec2",
                resource="placement-group",
                resource_name=placement_group.placement_group_name,
            )
            if placement_group is not None
            else None
        )

        self.resource = ec2.CfnCapacityReservation(
            self,
            "Resource",
            instance_type=spec.name,
            instance_platform=instance_platform,
            availability_zone=availability_zone,
            instance_count=instance_count,
            instance_match_criteria="targeted",
            tenancy=tenancy,
            end_date_type="limited" if end_text else "unlimited",
            end_date=end_text,
            placement_group_arn=self.placement_group_arn,
        )
        self.resource.apply_removal_policy(removal_policy)
        if removal_policy is RemovalPolicy.RETAIN:
            Annotations.of(self).add_warning_v2(
                "fm:reservation-retained",
                "The capacity reservation is retained by cdk destroy and keeps billing at the "
                "On-Demand rate until you cancel it (aws ec2 cancel-capacity-reservation).",
            )
        self.instance_type = spec.name
        self.availability_zone = availability_zone
        self.instance_count = instance_count

    @property
    def capacity_reservation_id(self) -> str:
        return self.resource.ref

    @property
    def capacity_source(self) -> CapacitySource:
        """A targeted-ODCR CapacitySource that knows this reservation's zone, size and type."""
        return CapacitySource.odcr(
            self.capacity_reservation_id,
            availability_zone=self.availability_zone,
            instance_count=self.instance_count,
            instance_type=self.instance_type,
            placement_group_arn=self.placement_group_arn,
        )
