"""Rules of the compute blocks' arguments: a capacity source against its kind, a node group
against its capacity, a GPU launch template and an On-Demand Capacity Reservation.

Each rule takes the construct's plain arguments (no construct, no scope) and returns its
findings under the construct's code, which the construct adopts; a value that is a CDK token
is not checked (:func:`~fm_constructs.rules.tokens.is_unresolved`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Protocol

from fm_constructs.catalog.regions import AVAILABILITY_ZONE_PATTERN
from fm_constructs.domain.defaults import ROOT_VOLUME_MAX_GIB, ROOT_VOLUME_MIN_GIB
from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.domain.numbers import is_whole_number
from fm_constructs.planning.capacity_block import parse_utc
from fm_constructs.rules import capacity as capacity_rules
from fm_constructs.rules.constructs import CAPACITY_RESERVATION, CAPACITY_SOURCE, LAUNCH_TEMPLATE
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.tokens import is_unresolved

#: CloudFormation ``InstanceCount`` range for AWS::EC2::CapacityReservation.
MAX_RESERVATION_INSTANCE_COUNT = 1000
#: CloudFormation ``Tenancy`` values (botocore ``CapacityReservationTenancy``).
TENANCIES = ("default", "dedicated")
_ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")


def _known(value: object) -> bool:
    """A concrete value (not None, not a CDK token) that synth-time checks can inspect."""
    return value is not None and not is_unresolved(value)


def _error(code: str, key: str, value: object, allowed: str) -> Finding:
    return Finding(code, Severity.ERROR, key, value, allowed)


def _message(code: str, text: str) -> Finding:
    """A finding phrased in full (a rule spanning several keys)."""
    return Finding(code, Severity.ERROR, "", None, text)


class NodeGroupCapacity(Protocol):
    """What :func:`capacity_source` reads of each entry of a split ODCR's ``node_groups``."""

    @property
    def kind(self) -> CapacityKind: ...

    @property
    def node_groups(self) -> Sequence[object]: ...


def capacity_source(
    *,
    kind: CapacityKind,
    reservation_id: str | None = None,
    resource_group_arn: str | None = None,
    training_plan_arn: str | None = None,
    managed_placement: bool = False,
    availability_zone: str | None = None,
    instance_count: int | None = None,
    fall_back_to_on_demand: bool = False,
    placement_group_arn: str | None = None,
    start_time: str | None = None,
    create_placement_group: bool = False,
    end_time: str | None = None,
    node_groups: Sequence[NodeGroupCapacity] = (),
) -> list[Finding]:
    """Every way a :class:`~fm_constructs.compute.CapacitySource`'s fields break its kind
    (identifiers it must or must not have, their forms, a Capacity Block's times, the zone
    and the count)."""
    out: list[Finding] = []

    def add(key: str, value: object, allowed: str) -> None:
        out.append(_error(CAPACITY_SOURCE, key, value, allowed))

    def adopt(found: list[Finding]) -> None:
        out.extend(replace(f, code=CAPACITY_SOURCE) for f in found)

    def unset(last: tuple[str, str | None], allowed: str) -> None:
        """Each of the reservation id, the resource group and ``last`` is unset."""
        for key, value in (
            ("reservation_id", reservation_id),
            ("resource_group_arn", resource_group_arn),
            last,
        ):
            if value is not None:
                add(key, value, allowed)

    if kind is CapacityKind.ON_DEMAND:
        unset(("training_plan_arn", training_plan_arn), "must be unset for on-demand")
    if kind is CapacityKind.ODCR and node_groups:
        unset(
            ("placement_group_arn", placement_group_arn),
            "must be unset with node_groups: give each node group its own",
        )
        for index, group in enumerate(node_groups):
            if group.kind is not CapacityKind.ODCR or group.node_groups:
                add(
                    f"node_groups[{index}]",
                    group.kind.value,
                    "must be a single ODCR (CapacitySource.odcr(...))",
                )
    elif kind is CapacityKind.ODCR and ((reservation_id is None) == (resource_group_arn is None)):
        out.append(
            _message(
                CAPACITY_SOURCE,
                "reservation_id / resource_group_arn: an ODCR needs exactly one of a "
                f"reservation id (cr-...) or a resource group ARN, got "
                f"reservation_id={reservation_id!r}, "
                f"resource_group_arn={resource_group_arn!r}",
            )
        )
    if kind is CapacityKind.CAPACITY_BLOCK:
        if not reservation_id:
            add(
                "reservation_id",
                reservation_id,
                "a Capacity Block needs its reservation id (cr- followed by 17 hex "
                "digits, shown by describe-capacity-reservations after purchase)",
            )
        if resource_group_arn is not None:
            add(
                "resource_group_arn",
                resource_group_arn,
                "must be unset for a Capacity Block (target the block's cr- id)",
            )
    if kind is CapacityKind.TRAINING_PLAN:
        if not training_plan_arn:
            add("training_plan_arn", training_plan_arn, "a training plan needs its ARN")
        elif _known(training_plan_arn):
            adopt(capacity_rules.identifier("training_plan_arn", training_plan_arn))
    elif training_plan_arn is not None:
        add("training_plan_arn", training_plan_arn, "only a training plan takes one")
    if kind is CapacityKind.CAPACITY_BLOCK:
        adopt(capacity_rules.capacity_block_times(start_time, end_time))
    elif start_time is not None or end_time is not None:
        out.append(
            _message(CAPACITY_SOURCE, "start_time / end_time: only a Capacity Block has them")
        )
    if kind is not CapacityKind.ODCR:
        odcr_only: tuple[tuple[str, object, bool], ...] = (
            ("placement_group_arn", placement_group_arn, placement_group_arn is not None),
            ("fall_back_to_on_demand", fall_back_to_on_demand, fall_back_to_on_demand is not False),
            ("create_placement_group", create_placement_group, create_placement_group is not False),
            ("node_groups", node_groups, tuple(node_groups) != ()),
        )
        for key, setting, given in odcr_only:
            if given:
                add(key, setting, "only an ODCR takes one")
    if create_placement_group and (placement_group_arn or managed_placement):
        add(
            "create_placement_group",
            True,
            "cannot be True for a reservation with its own placement (placement_group_arn, "
            "managed_placement): a second cluster placement group fails with insufficient "
            "capacity",
        )
    for key, identifier in (
        ("placement_group_arn", placement_group_arn),
        ("reservation_id", reservation_id),
        ("resource_group_arn", resource_group_arn),
    ):
        if _known(identifier):
            adopt(capacity_rules.identifier(key, str(identifier)))
    if _known(availability_zone) and not AVAILABILITY_ZONE_PATTERN.match(str(availability_zone)):
        add(
            "availability_zone",
            availability_zone,
            "must be an Availability Zone name such as us-east-1a (not a zone id)",
        )
    if _known(instance_count) and not is_whole_number(instance_count, 1):
        add(
            "instance_count",
            instance_count,
            "must be a whole number of at least 1 (an int, not a string)",
        )
    return out


def _strip_ml(instance_type: str | None) -> str:
    return str(instance_type).removeprefix("ml.")


@dataclass(frozen=True)
class Placement:
    """How many instances of which type in which zone: a reservation's, or a node group's
    (None: not known or not checked)."""

    count: int | None = None
    zone: str | None = None
    instance_type: str | None = None


def capacity_fit(kind: CapacityKind, reserved: Placement, nodes: Placement) -> list[Finding]:
    """Conflicts between a reservation of ``kind`` and a node group that would use it (each
    phrased in full)."""
    reserved_count, reserved_zone = reserved.count, reserved.zone
    reserved_instance_type = reserved.instance_type
    node_count, availability_zone, instance_type = nodes.count, nodes.zone, nodes.instance_type
    out: list[Finding] = []
    if (
        node_count is not None
        and reserved_count is not None
        and _known(node_count)
        and _known(reserved_count)
        and node_count > reserved_count
    ):
        out.append(
            _message(
                CAPACITY_SOURCE,
                f"node_count: {node_count} nodes exceed the {kind.value} reservation of "
                f"{reserved_count} instances; lower the node count or enlarge the "
                f"reservation, got {node_count!r}",
            )
        )
    if _known(availability_zone) and _known(reserved_zone) and availability_zone != reserved_zone:
        out.append(
            _message(
                CAPACITY_SOURCE,
                f"subnet_availability_zone: the {kind.value} reservation is in "
                f"{reserved_zone}; nodes must launch in a subnet of that zone, got "
                f"{availability_zone!r}",
            )
        )
    if (
        _known(instance_type)
        and _known(reserved_instance_type)
        and _strip_ml(instance_type) != _strip_ml(reserved_instance_type)
    ):
        out.append(
            _message(
                CAPACITY_SOURCE,
                f"instance_type: the {kind.value} reservation is for "
                f"{reserved_instance_type}, got {instance_type!r}",
            )
        )
    return out


def launch_template(
    *,
    vpc_given: bool,
    capacity_kind: CapacityKind,
    efa_security_group_given: bool,
    training_plan_arn: str | None,
    placement_group_given: bool,
    capacity_allows_placement_group: bool,
    create_placement_group: bool | None,
    capacity_placement_group_arn: str | None,
    reserved: Placement,
    nodes: Placement,
    root_volume_size_gib: int,
    nodeadm_cluster_name: str | None,
    nodeadm_user_data: bool,
    imds_hop_limit: int,
) -> list[Finding]:
    """A :class:`~fm_constructs.compute.GpuLaunchTemplate`'s own arguments: one source of the
    EFA security group, no training plan, a placement group its capacity allows, the node
    count, the root volume's size, nodeadm settings only with nodeadm user data and the IMDS
    hop limit, and the capacity's fit to the nodes (:func:`capacity_fit`: ``reserved`` is
    the capacity's placement, ``nodes`` the count, subnet zone and instance type of the
    nodes)."""
    code = LAUNCH_TEMPLATE
    out: list[Finding] = []
    if not efa_security_group_given and not vpc_given:
        out.append(
            _error(
                code,
                "vpc",
                None,
                "pass vpc (to create the EFA security group) or efa_security_group",
            )
        )
    if efa_security_group_given and vpc_given:
        out.append(
            _message(
                code,
                "vpc / efa_security_group: pass one, not both: vpc creates a new EFA security "
                "group, efa_security_group reuses an existing one",
            )
        )
    if capacity_kind is CapacityKind.TRAINING_PLAN:
        out.append(
            _error(
                code,
                "capacity",
                training_plan_arn,
                "a SageMaker training plan is for HyperPod instance groups, not launch "
                "templates; use CapacitySource.capacity_block() or .odcr()",
            )
        )
    if placement_group_given and create_placement_group is True:
        out.append(
            _message(
                code,
                "placement_group / create_placement_group: pass an existing placement_group "
                "or ask for a new one, not both",
            )
        )
    if not capacity_allows_placement_group:
        block = capacity_kind is CapacityKind.CAPACITY_BLOCK
        reason = "a Capacity Block" if block else "a reservation with its own placement"
        if placement_group_given and (block or capacity_placement_group_arn):
            out.append(
                _message(
                    code,
                    f"placement_group: must be unset with {reason}: a cluster placement group "
                    f"on top of the block fails with insufficient capacity; remove it",
                )
            )
        if create_placement_group is True:
            out.append(
                _message(
                    code,
                    f"create_placement_group: cannot be True with {reason}: the combination "
                    f"fails with insufficient capacity; leave it unset",
                )
            )
    out.extend(replace(f, code=code) for f in capacity_fit(capacity_kind, reserved, nodes))
    node_count = nodes.count
    if node_count is not None and not is_unresolved(node_count) and node_count < 0:
        out.append(_error(code, "node_count", node_count, "must be 0 or more"))
    if not is_unresolved(root_volume_size_gib) and not (
        ROOT_VOLUME_MIN_GIB <= root_volume_size_gib <= ROOT_VOLUME_MAX_GIB
    ):
        out.append(
            _error(
                code,
                "root_volume_size_gib",
                root_volume_size_gib,
                f"must be {ROOT_VOLUME_MIN_GIB}-{ROOT_VOLUME_MAX_GIB} GiB (gp3)",
            )
        )
    if nodeadm_cluster_name is not None and not nodeadm_user_data:
        out.append(
            _error(
                code,
                "nodeadm_cluster",
                nodeadm_cluster_name,
                "is only used with user_data_mode=UserDataMode.EKS_NODEADM",
            )
        )
    if isinstance(imds_hop_limit, bool) or imds_hop_limit not in (1, 2):
        out.append(
            _error(
                code,
                "imds_hop_limit",
                imds_hop_limit,
                "must be 1 (pods cannot reach the node role; use EKS Pod Identity) or 2 (pods "
                "may use the node role)",
            )
        )
    return out


def root_device(
    root_device_name: str | None, *, ubuntu_device: str, amazon_linux_device: str
) -> list[Finding]:
    """A launch template knows its image's root device (given, or read from the image)."""
    if root_device_name is not None:
        return []
    return [
        _error(
            LAUNCH_TEMPLATE,
            "root_volume_device_name",
            None,
            "must be given with this machine_image: its root device is not known at synth "
            "(an AMI id, or an SSM parameter whose path names no distribution). Give the "
            f"image's RootDeviceName: '{ubuntu_device}' for Ubuntu and the Ubuntu Deep "
            f"Learning AMIs, '{amazon_linux_device}' for Amazon Linux (aws ec2 "
            "describe-images --image-ids <ami> --query 'Images[0].RootDeviceName')",
        )
    ]


def reservation_end_text(end_date: datetime | str | None) -> str | None:
    """An ODCR's ``EndDate`` as ISO 8601 UTC text (None without one, or for a naive time)."""
    if end_date is None:
        return None
    if isinstance(end_date, datetime):
        if end_date.tzinfo is None:
            return None
        return end_date.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return end_date


def capacity_reservation(
    availability_zone: str,
    instance_count: int,
    tenancy: str,
    end_date: datetime | str | None,
    *,
    now: datetime,
) -> list[Finding]:
    """An :class:`~fm_constructs.compute.OnDemandCapacityReservation`'s zone, count, tenancy
    and end date (timezone-aware, ISO 8601 UTC, after ``now``)."""
    code = CAPACITY_RESERVATION
    out: list[Finding] = []
    if not is_unresolved(availability_zone) and not AVAILABILITY_ZONE_PATTERN.match(
        availability_zone
    ):
        out.append(
            _error(
                code,
                "availability_zone",
                availability_zone,
                "must be an Availability Zone name such as us-east-1a",
            )
        )
    if not is_unresolved(instance_count) and not is_whole_number(
        instance_count, 1, MAX_RESERVATION_INSTANCE_COUNT
    ):
        out.append(
            _error(
                code,
                "instance_count",
                instance_count,
                f"must be a whole number from 1 to {MAX_RESERVATION_INSTANCE_COUNT} (an int, not "
                "a string)",
            )
        )
    if tenancy not in TENANCIES:
        out.append(
            _error(
                code,
                "tenancy",
                tenancy,
                f"must be one of {', '.join(TENANCIES)} (the instances' tenancy must match, or "
                "they do not use the reservation)",
            )
        )
    if isinstance(end_date, datetime) and end_date.tzinfo is None:
        out.append(_error(code, "end_date", end_date, "must be timezone-aware (UTC)"))
    elif isinstance(end_date, str) and not is_unresolved(end_date) and not _ISO_UTC.match(end_date):
        out.append(
            _error(code, "end_date", end_date, "must be ISO 8601 UTC, e.g. 2026-06-30T11:30:00Z")
        )
    end_text = reservation_end_text(end_date)
    end_moment = parse_utc(end_text) if end_text and not is_unresolved(end_text) else None
    if end_moment is not None and end_moment <= now:
        out.append(_error(code, "end_date", end_text, "must be in the future"))
    return out
