"""Where accelerated capacity comes from, and how each consumer is told about it.

One value type covers the four ways to get GPU/Trainium capacity on AWS:

* on-demand (no reservation);
* an On-Demand Capacity Reservation (ODCR): a ``cr-`` id, or the ARN of a capacity-reservation
  resource group;
* an EC2 Capacity Block for ML: a ``cr-`` id plus the launch-template market type
  ``capacity-block`` (EKS managed node groups: capacity type ``CAPACITY_BLOCK``);
* a SageMaker training plan (an ARN, used by HyperPod instance groups, never by launch
  templates).

It maps itself onto the launch template (``CapacityReservationSpecification``,
``InstanceMarketOptions``), the EKS node group capacity type and HyperPod's ``TrainingPlanArn``,
and validates what can be known at synth time: id/ARN forms, node counts against the
reservation size, and the subnet's zone against the reservation's zone. Values that are CDK
tokens are not checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields

from aws_cdk import Fn, Token
from aws_cdk import aws_ec2 as ec2

from fm_constructs.catalog.regions import AVAILABILITY_ZONE_PATTERN as AVAILABILITY_ZONE_PATTERN
from fm_constructs.domain.capacity import CapacityConfig, ReservationConfig
from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning.capacity_block import CapacityBlockSchedule
from fm_constructs.planning.capacity_block import capacity_block_schedule as block_schedule
from fm_constructs.rules import compute as compute_rules
from fm_constructs.rules import constructs as codes


def _known(value: object) -> bool:
    """A concrete value (not None, not a CDK token) that synth-time checks can inspect."""
    return value is not None and not Token.is_unresolved(value)


@dataclass(frozen=True)
class CapacitySource:
    """Capacity for a group of accelerated nodes. Build it with the static constructors.

    ``availability_zone``, ``instance_count`` and ``instance_type`` describe the reservation
    when known; they power the synth-time checks. ``managed_placement`` says the reservation
    already decides where instances land (capacity AWS set aside for a cluster), so no second
    placement group is added. ``placement_group_arn``: the cluster placement group an ODCR was
    created in; instances must launch into that group (EC2 matches a reservation made in a
    cluster placement group only for instances launched into it), so the launch template uses
    it and creates none of its own.

    Reserved kinds never fall back to On-Demand: an ODCR's launch template carries the
    preference ``capacity-reservations-only`` next to its target (without it, a full resource
    group launches On-Demand instances that are billed on top of the idle reservation), unless
    ``fall_back_to_on_demand=True``. A Capacity Block cannot fall back (market type
    ``capacity-block``).

    Reserved capacity gets no new cluster placement group (its hosts are already placed)
    unless ``create_placement_group`` (ODCR only) asks for one. A fleet bought as several
    ODCRs, each perhaps in its own placement group, is :meth:`odcr_node_groups`: managed node
    group ``i`` of the pool (``GpuNodes``, ``GpuNodes2``, ...) targets ``node_groups[i]``.
    """

    kind: CapacityKind
    reservation_id: str | None = None
    resource_group_arn: str | None = None
    training_plan_arn: str | None = None
    availability_zone: str | None = None
    instance_count: int | None = None
    instance_type: str | None = None
    managed_placement: bool = False
    placement_group_arn: str | None = None
    fall_back_to_on_demand: bool = False
    #: Capacity Block only: its start and end (ISO 8601 UTC), for the scheduled scaling.
    start_time: str | None = None
    end_time: str | None = None
    #: ODCR only: add a new cluster placement group over the reservation (default: none).
    create_placement_group: bool = False
    #: ODCR only: the reservation of each managed node group of a split pool, in split order.
    node_groups: tuple[CapacitySource, ...] = ()

    # ---- constructors -----------------------------------------------------------------------

    @staticmethod
    def on_demand() -> CapacitySource:
        """Plain on-demand capacity (instances may still use matching ``open`` ODCRs)."""
        return CapacitySource(kind=CapacityKind.ON_DEMAND)

    @staticmethod
    def odcr(
        reservation_id: str | None = None,
        *,
        resource_group_arn: str | None = None,
        availability_zone: str | None = None,
        instance_count: int | None = None,
        instance_type: str | None = None,
        managed_placement: bool = False,
        placement_group_arn: str | None = None,
        fall_back_to_on_demand: bool = False,
        create_placement_group: bool = False,
    ) -> CapacitySource:
        """A targeted On-Demand Capacity Reservation: a ``cr-`` id or a resource group ARN.

        ``placement_group_arn``: the cluster placement group the reservation was created in.
        ``fall_back_to_on_demand``: let EC2 launch On-Demand instances when the reservation
        (or group) is full, instead of failing the launch. ``create_placement_group``: add a
        new cluster placement group over the reservation (none by default).
        """
        return CapacitySource(
            kind=CapacityKind.ODCR,
            reservation_id=reservation_id,
            resource_group_arn=resource_group_arn,
            availability_zone=availability_zone,
            instance_count=instance_count,
            instance_type=instance_type,
            managed_placement=managed_placement,
            placement_group_arn=placement_group_arn,
            fall_back_to_on_demand=fall_back_to_on_demand,
            create_placement_group=create_placement_group,
        )

    @staticmethod
    def odcr_node_groups(
        node_groups: Sequence[CapacitySource],
        *,
        availability_zone: str | None = None,
        instance_type: str | None = None,
    ) -> CapacitySource:
        """A fleet bought as several ODCRs: managed node group ``i`` of the pool targets
        ``node_groups[i]`` (each an :meth:`odcr`, with its own ``placement_group_arn`` when it
        was made in one). The pool must have exactly ``len(node_groups)`` node groups."""
        counts = [g.instance_count for g in node_groups]
        return CapacitySource(
            kind=CapacityKind.ODCR,
            availability_zone=availability_zone,
            instance_count=sum(c for c in counts if c is not None)
            if counts and all(c is not None and _known(c) for c in counts)
            else None,
            instance_type=instance_type,
            node_groups=tuple(node_groups),
        )

    def for_node_group(self, index: int) -> CapacitySource:
        """The capacity of managed node group ``index`` of a pool: its own entry of
        :attr:`node_groups`, or this capacity for every group."""
        return self.node_groups[index] if self.node_groups else self

    @staticmethod
    def capacity_block(
        reservation_id: str,
        *,
        availability_zone: str | None = None,
        instance_count: int | None = None,
        instance_type: str | None = None,
        start_time: str | None = None,
        end_time: str | None = None,
    ) -> CapacitySource:
        """An EC2 Capacity Block for ML (its ``cr-`` reservation id).

        With ``start_time`` and ``end_time`` (ISO 8601 UTC, the reservation's StartDate and
        EndDate) node groups scale to the block's size at its start and to zero 40 minutes
        before its end (:mod:`fm_constructs.planning.capacity_block`).
        """
        return CapacitySource(
            kind=CapacityKind.CAPACITY_BLOCK,
            reservation_id=reservation_id,
            availability_zone=availability_zone,
            instance_count=instance_count,
            instance_type=instance_type,
            start_time=start_time,
            end_time=end_time,
        )

    @staticmethod
    def training_plan(
        arn: str,
        *,
        availability_zone: str | None = None,
        instance_count: int | None = None,
        instance_type: str | None = None,
    ) -> CapacitySource:
        """A SageMaker training plan, consumed by HyperPod instance groups."""
        return CapacitySource(
            kind=CapacityKind.TRAINING_PLAN,
            training_plan_arn=arn,
            availability_zone=availability_zone,
            instance_count=instance_count,
            instance_type=instance_type,
        )

    @staticmethod
    def from_config(
        config: CapacityConfig, *, availability_zone: str, instance_type: str
    ) -> CapacitySource:
        """The capacity a profile's ``[<workload>.capacity]`` table describes, for nodes of
        ``instance_type`` in ``availability_zone`` (where the reservation must be)."""
        zone, count = availability_zone, config.reserved_instance_count

        def odcr(target: CapacityConfig | ReservationConfig, count: int | None) -> CapacitySource:
            return CapacitySource.odcr(
                target.reservation_id,
                resource_group_arn=target.resource_group_arn,
                availability_zone=zone,
                instance_count=count,
                instance_type=instance_type,
                placement_group_arn=target.placement_group_arn,
                fall_back_to_on_demand=config.fall_back_to_on_demand,
                create_placement_group=config.create_placement_group,
            )

        if config.kind is CapacityKind.ODCR and config.node_groups:
            return CapacitySource.odcr_node_groups(
                [odcr(group, group.instance_count) for group in config.node_groups],
                availability_zone=zone,
                instance_type=instance_type,
            )
        if config.kind is CapacityKind.ODCR:
            return odcr(config, count)
        if config.kind is CapacityKind.CAPACITY_BLOCK:
            return CapacitySource.capacity_block(
                config.reservation_id or "",
                availability_zone=zone,
                instance_count=count,
                instance_type=instance_type,
                start_time=config.start_time,
                end_time=config.end_time,
            )
        if config.kind is CapacityKind.TRAINING_PLAN:
            return CapacitySource.training_plan(
                config.training_plan_arn or "",
                availability_zone=zone,
                instance_count=count,
                instance_type=instance_type,
            )
        return CapacitySource.on_demand()

    # ---- validation -------------------------------------------------------------------------

    def __post_init__(self) -> None:
        problems = Problems(context="CapacitySource", code=codes.CAPACITY_SOURCE)
        # every field but the instance type, which only the node groups' fit reads
        checked = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "instance_type"}
        problems.adopt(compute_rules.capacity_source(**checked))
        problems.raise_if_any()

    @property
    def placement(self) -> compute_rules.Placement:
        """What this capacity reserves (count, zone, type; None where not given), as the
        capacity rules read it (:func:`fm_constructs.rules.compute.capacity_fit`)."""
        return compute_rules.Placement(
            self.instance_count, self.availability_zone, self.instance_type
        )

    def check(
        self,
        *,
        node_count: int | None = None,
        availability_zone: str | None = None,
        instance_type: str | None = None,
        context: str = "CapacitySource",
    ) -> None:
        """Raise FmValidationError listing every conflict between this capacity and a node
        group of ``node_count`` nodes of ``instance_type`` in ``availability_zone`` (the rule
        :func:`fm_constructs.rules.compute.capacity_fit`)."""
        problems = Problems(context=context, code=codes.CAPACITY_SOURCE)
        nodes = compute_rules.Placement(node_count, availability_zone, instance_type)
        problems.adopt(compute_rules.capacity_fit(self.kind, self.placement, nodes))
        problems.raise_if_any()

    # ---- mappings ---------------------------------------------------------------------------

    @property
    def is_reserved(self) -> bool:
        return self.kind is not CapacityKind.ON_DEMAND

    @property
    def allows_placement_group(self) -> bool:
        """Whether a new cluster placement group may be added at all: False for Capacity
        Blocks and reservations with their own placement, where one on top fails with
        insufficient capacity (an ODCR made in a placement group brings that group:
        :attr:`placement_group_name`). A plain ODCR allows one when asked for, but gets none
        by default (:class:`~fm_constructs.compute.GpuLaunchTemplate`)."""
        if self.kind is CapacityKind.CAPACITY_BLOCK:
            return False
        return not (self.managed_placement or self.placement_group_arn)

    @property
    def placement_group_name(self) -> str | None:
        """Name of the reservation's own cluster placement group (from its ARN), or None."""
        arn = self.placement_group_arn
        if arn is None:
            return None
        if Token.is_unresolved(arn):
            return Fn.select(1, Fn.split("placement-group/", arn))
        return arn.split("placement-group/", 1)[1]

    def _require_ec2(self, what: str) -> None:
        if self.kind is CapacityKind.TRAINING_PLAN:
            raise FmValidationError(
                [
                    f"capacity: a SageMaker training plan feeds HyperPod instance groups "
                    f"(TrainingPlanArn), not {what}, got {self.training_plan_arn!r}; use "
                    f"CapacitySource.capacity_block() or .odcr() for EC2 nodes"
                ],
                code=codes.CAPACITY_SOURCE,
            )

    def launch_template_capacity_reservation_specification(
        self,
    ) -> ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty | None:
        """``LaunchTemplateData.CapacityReservationSpecification`` (None for on-demand, which
        keeps EC2's default of using matching open reservations)."""
        self._require_ec2("launch templates")
        if self.node_groups:
            raise FmValidationError(
                [
                    "capacity: a capacity of several reservations (node_groups) has no single "
                    "target; give each node group its own with capacity.for_node_group(i)"
                ],
                code=codes.CAPACITY_SOURCE,
            )
        if self.kind is CapacityKind.ON_DEMAND:
            return None
        return ec2.CfnLaunchTemplate.CapacityReservationSpecificationProperty(
            capacity_reservation_preference=self.capacity_reservation_preference,
            capacity_reservation_target=ec2.CfnLaunchTemplate.CapacityReservationTargetProperty(
                capacity_reservation_id=self.reservation_id,
                capacity_reservation_resource_group_arn=self.resource_group_arn,
            ),
        )

    @property
    def capacity_reservation_preference(self) -> str | None:
        """``capacity-reservations-only`` for an ODCR unless it may fall back to On-Demand
        (EC2 User Guide, Capacity Reservation groups: without it, instances that do not fit
        the group's reservations "run using On-Demand capacity"); None otherwise."""
        if self.kind is CapacityKind.ODCR and not self.fall_back_to_on_demand:
            return "capacity-reservations-only"
        return None

    def launch_template_instance_market_options(
        self,
    ) -> ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty | None:
        """``LaunchTemplateData.InstanceMarketOptions``: market type ``capacity-block`` for a
        Capacity Block, None otherwise."""
        self._require_ec2("launch templates")
        if self.kind is CapacityKind.CAPACITY_BLOCK:
            return ec2.CfnLaunchTemplate.InstanceMarketOptionsProperty(market_type="capacity-block")
        return None

    def eks_capacity_type(self) -> str:
        """EKS managed node group ``CapacityType``: ``CAPACITY_BLOCK`` or ``ON_DEMAND``."""
        self._require_ec2("EKS managed node groups")
        return "CAPACITY_BLOCK" if self.kind is CapacityKind.CAPACITY_BLOCK else "ON_DEMAND"

    @property
    def capacity_block_schedule(self) -> CapacityBlockSchedule | None:
        """The block's scaling moments when its times are known (and not tokens)."""
        if self.kind is not CapacityKind.CAPACITY_BLOCK or not (
            _known(self.start_time) and _known(self.end_time)
        ):
            return None
        return block_schedule(self.start_time, self.end_time)

    @property
    def hyperpod_training_plan_arn(self) -> str | None:
        """HyperPod instance group ``TrainingPlanArn`` (None unless a training plan)."""
        return self.training_plan_arn if self.kind is CapacityKind.TRAINING_PLAN else None
