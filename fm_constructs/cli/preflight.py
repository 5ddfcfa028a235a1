"""``fmc preflight``: read-only AWS checks that would otherwise fail an hour into a deploy.

Each check ends as pass, warn, fail, skip (with the reason) or error (AWS did not answer:
access denied, throttled, unreachable); failures and warnings carry the fix. One check's AWS
error does not stop the others, so a single run shows everything that is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import partial
from typing import Any

from fm_constructs.catalog import InstanceSpec, get_instance_type
from fm_constructs.cli.aws import AwsSession, call, call_required, describe_aws_error
from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.output import Reporter, render_table
from fm_constructs.config import CapacityKind, Orchestrator, Profile, WorkloadConfig
from fm_constructs.config.subnet_demand import largest_node_count
from fm_constructs.domain.kinds import HYPERPOD
from fm_constructs.planning.aws_limits import node_groups_for, split_sizes
from fm_constructs.planning.capacity_block import parse_utc
from fm_constructs.rules.findings import Finding, Severity, info
from fm_constructs.rules.online import ec2 as ec2_rules
from fm_constructs.rules.online import eks as eks_rules
from fm_constructs.rules.online import iam as iam_rules
from fm_constructs.rules.online import pcs as pcs_rules
from fm_constructs.rules.online import quotas as quota_rules
from fm_constructs.rules.online import sagemaker as sagemaker_rules
from fm_constructs.rules.online.aws import AwsCallError

SCHEMA = "fmc.preflight/v1"

#: Service Quotas codes of the "Running On-Demand <family> instances" vCPU quotas (service ec2).
EC2_VCPU_QUOTAS: dict[str, tuple[str, str]] = {
    "p": ("L-417A185B", "Running On-Demand P instances"),
    "g": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "trn": ("L-2C3B7624", "Running On-Demand Trn instances"),
}
_GOOD_RESERVATION_STATES = {"active", "scheduled"}
_WAITING_RESERVATION_STATES = {"pending", "payment-pending", "assessing", "delayed"}
_GOOD_PLAN_STATES = {"Active", "Scheduled"}
#: Reserved-capacity segments of a plan that hold no instances any more (botocore
#: ``ReservedCapacityStatus``).
_ENDED_CAPACITY_STATES = {"Expired", "Failed"}


class Status(StrEnum):
    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
    ERROR = "error"


#: The code each online check reports when it fails or warns: the same codes, finding type and
#: reference page (docs/reference/errors.md) as the offline rules.
CHECK_CODES: dict[str, str] = {
    "instance type offered": ec2_rules.OFFERED.code,
    "capacity reservation group": info(
        "FM702",
        "The ODCR resource group is missing, empty, or holds reservations that do not match "
        "the workload (type, zone, platform, tenancy, count).",
        "Add matching reservations to the group, or name the right group.",
        severity=None,
    ),
    "capacity reservation": info(
        "FM703",
        "The capacity reservation or Capacity Block is missing, not active or scheduled, ends "
        "soon, or does not match the workload (type, zone, count, platform, tenancy).",
        "Reserve matching capacity (fmc capacity search) and update the profile.",
        severity=None,
    ),
    "training plan": info(
        "FM704",
        "The training plan is missing, not active or scheduled, for another target, zone or "
        "type, or too small for the workload.",
        "Buy or pick a matching training plan for target resource hyperpod-cluster.",
        severity=None,
    ),
    "HyperPod instance type": sagemaker_rules.HYPERPOD_TYPE.code,
    "EC2 vCPU quota": quota_rules.EC2_VCPU.code,
    "HyperPod quota": quota_rules.HYPERPOD_QUOTA.code,
    "FSx for Lustre storage quota": quota_rules.FSX_STORAGE.code,
    "PCS cluster creation": pcs_rules.PCS_CREATING.code,
    "EKS version": eks_rules.EKS_VERSION.code,
    "admin roles": iam_rules.ADMIN_ROLE.code,
}


@dataclass(frozen=True)
class Check:
    """The outcome of one check; a failing or warning one carries a coded :class:`Finding`
    (``code``: the profile rule's own, else the check kind's from :data:`CHECK_CODES`)."""

    name: str
    workload: str | None
    status: Status
    detail: str
    fix: str | None = None
    code: str | None = None

    def __post_init__(self) -> None:
        if self.status in (Status.FAIL, Status.WARN) and self.code is None:
            code = CHECK_CODES.get(self.name)
            if code is None:
                raise ValueError(f"check {self.name!r} has no code (add it to CHECK_CODES)")
            object.__setattr__(self, "code", code)

    @property
    def finding(self) -> Finding | None:
        """The check as a finding (None when it passed, was skipped or AWS did not answer)."""
        if self.status not in (Status.FAIL, Status.WARN) or self.code is None:
            return None
        severity = Severity.ERROR if self.status is Status.FAIL else Severity.WARNING
        return Finding(self.code, severity, "", None, self.detail, self.fix or "")

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "workload": self.workload,
            "status": self.status.value,
            "code": self.code,
            "detail": self.detail,
            "fix": self.fix,
        }


def quota_for_family(spec: InstanceSpec) -> tuple[str, str] | None:
    """(quota code, quota name) of the On-Demand vCPU quota that ``spec`` draws on."""
    family = spec.family
    for prefix in ("trn", "p", "g"):
        if family.startswith(prefix):
            return EC2_VCPU_QUOTAS[prefix]
    return None


class Preflight:
    """Runs every check of a profile against one AWS account and region."""

    def __init__(
        self,
        profile: Profile,
        session: AwsSession,
        reporter: Reporter,
        *,
        expiry_warning_hours: int = 48,
        kubernetes_version: str | None = None,
        now: datetime | None = None,
    ) -> None:
        self.profile = profile
        self.session = session
        self.reporter = reporter
        self.region = session.region
        self.zone = profile.platform.availability_zone
        self.expiry_warning_hours = expiry_warning_hours
        #: The profile's platform.kubernetes_version unless overridden (--kubernetes-version).
        self.kubernetes_version = kubernetes_version or profile.platform.kubernetes_version
        self.now = now or datetime.now(UTC)
        self.checks: list[Check] = []
        self._clients: dict[str, Any] = {}

    def client(self, service: str) -> Any:
        if service not in self._clients:
            self._clients[service] = self.session.client(service)
        return self._clients[service]

    # ---------------------------------------------------------------- running
    def _guard(self, name: str, workload: str | None, run: Callable[[], Iterable[Check]]) -> None:
        self.reporter.progress(f"{name}" + (f" ({workload})" if workload else ""))
        try:
            self.checks.extend(run())
        except AwsCallError as error:  # an online rule's call AWS did not answer
            message = describe_aws_error(error.error, error.action)
            self.checks.append(Check(name, workload, Status.ERROR, message))
        except CliError as error:
            if error.exit_code is not ExitCode.AWS_ERROR:
                raise
            self.checks.append(Check(name, workload, Status.ERROR, error.message))

    @staticmethod
    def _one(check: Callable[[WorkloadConfig], Check], workload: WorkloadConfig) -> list[Check]:
        return [check(workload)]

    def run(self) -> list[Check]:
        workloads = self.profile.enabled_workloads
        # The offline findings first: the same lines the loader, `fmc plan` and synth give.
        self.checks.extend(
            Check("profile rules", None, Status.WARN, finding.message(), finding.fix, finding.code)
            for finding in self.profile.warnings
        )
        for w in workloads:
            self._guard("instance type offered", w.name, partial(self._one, self.check_offering, w))
            self._guard("capacity", w.name, partial(self._one, self.check_capacity, w))
            if w.orchestrator in HYPERPOD:
                hyperpod = partial(self._one, self.check_hyperpod_type, w)
                self._guard("HyperPod instance type", w.name, hyperpod)
        self._guard("EC2 vCPU quotas", None, self.check_ec2_quotas)
        if any(w.orchestrator in HYPERPOD for w in workloads):
            self._guard("HyperPod quotas", None, self.check_hyperpod_quotas)
        if any(w.storage.enabled for w in workloads):
            self._guard("FSx for Lustre storage quota", None, lambda: [self.check_fsx_quota()])
        if any(w.orchestrator is Orchestrator.PCS for w in workloads):
            self._guard("PCS cluster creation", None, lambda: [self.check_pcs_creating()])
        if any(w.orchestrator in (Orchestrator.EKS, Orchestrator.HYPERPOD_EKS) for w in workloads):
            self._guard("EKS version", None, lambda: [self.check_eks_version()])
        for arn in self.profile.platform.admin_role_arns:
            self._guard("admin roles", None, partial(self.check_admin_role, arn))
        return self.checks

    # ---------------------------------------------------------------- checks
    def check_offering(self, w: WorkloadConfig) -> Check:
        """The instance type is offered in the GPU zone
        (:func:`fm_constructs.rules.online.ec2.instance_type_offered`)."""
        name = "instance type offered"
        if w.orchestrator in HYPERPOD:
            return Check(
                name,
                w.name,
                Status.SKIP,
                "SageMaker HyperPod provisions its own instances; see the training plan and "
                "HyperPod checks",
            )
        found = ec2_rules.instance_type_offered(
            self.client("ec2"), w.instance_type, self.zone, self.region, workload=w.name
        )
        return _checks(name, w.name, found)[0]

    def check_capacity(self, w: WorkloadConfig) -> Check:
        cap = w.capacity
        if cap.kind is CapacityKind.ON_DEMAND:
            return Check(
                "capacity",
                w.name,
                Status.SKIP,
                "on-demand: nothing reserved to check; large GPU types are often short On-Demand "
                "(see fmc capacity search)",
            )
        if cap.kind is CapacityKind.TRAINING_PLAN:
            return self._check_training_plan(w)
        checks = [
            self._check_reservation_group(w, target)
            if target.reservation_id is None
            else self._check_reservation(w, target)
            for target in _reservation_targets(w)
        ]
        return checks[0] if len(checks) == 1 else _combined(checks)

    def _check_reservation_group(self, w: WorkloadConfig, target: _Target) -> Check:
        """The group's reservations that match the nodes (type, zone, Linux/UNIX, usable state)
        hold the largest node group; the launch template never falls back to On-Demand."""
        name = "capacity reservation group"
        group_arn = target.resource_group_arn or ""
        ids: list[str] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Group": group_arn}
            if token:
                params["NextToken"] = token
            answer = call(
                self.client("resource-groups"),
                "list_group_resources",
                "resource-groups:ListGroupResources",
                missing_codes=frozenset({"NotFoundException", "BadRequestException"}),
                **params,
            )
            if answer is None:
                return Check(
                    name,
                    w.name,
                    Status.FAIL,
                    f"resource group {group_arn} does not exist in {self.region}",
                    f"fix {target.key}.resource_group_arn",
                )
            for item in answer.get("Resources", []):
                identifier = item.get("Identifier", {})
                if identifier.get("ResourceType") == "AWS::EC2::CapacityReservation":
                    ids.append(str(identifier["ResourceArn"]).rsplit("/", 1)[-1])
            token = answer.get("NextToken")
            if not token:
                break
        if not ids:
            return Check(
                name,
                w.name,
                Status.FAIL,
                f"resource group {group_arn} holds no capacity reservations",
                "add the reservations to the group (aws resource-groups group-resources)",
            )
        described = call_required(
            self.client("ec2"),
            "describe_capacity_reservations",
            "ec2:DescribeCapacityReservations",
            CapacityReservationIds=ids,
        ).get("CapacityReservations", [])
        usable = [
            r
            for r in described
            if r.get("InstanceType") == w.instance_type
            and r.get("AvailabilityZone") == self.zone
            and r.get("InstancePlatform", "Linux/UNIX") == "Linux/UNIX"
            and r.get("State") in _GOOD_RESERVATION_STATES
        ]
        total = sum(int(r.get("TotalInstanceCount", 0)) for r in usable)
        wanted = target.wanted
        detail = (
            f"{group_arn}: {len(described)} reservations, {len(usable)} usable for "
            f"{w.instance_type} in {self.zone} holding {total} instances; the profile wants "
            f"{wanted}"
        )
        if total >= wanted:
            return Check(name, w.name, Status.PASS, detail)
        return Check(
            name,
            w.name,
            Status.FAIL,
            detail + " (launches beyond that fail: the template never falls back to On-Demand)",
            f"add reservations of {w.instance_type} in {self.zone} to the group, lower "
            f"{w.name}.instance_count, or set {w.name}.capacity.fall_back_to_on_demand = true",
        )

    def _hours_left(self, end: datetime | None) -> float | None:
        if end is None:
            return None
        if end.tzinfo is None:
            end = end.replace(tzinfo=UTC)
        return (end - self.now).total_seconds() / 3600

    def _check_reservation(self, w: WorkloadConfig, target: _Target) -> Check:
        """The reservation exists, is active or scheduled, and matches type, zone and count."""
        name = "capacity reservation"
        reservation_id = target.reservation_id or ""
        answer = call(
            self.client("ec2"),
            "describe_capacity_reservations",
            "ec2:DescribeCapacityReservations",
            missing_codes=frozenset(
                {"InvalidCapacityReservationId.NotFound", "InvalidCapacityReservationId.Malformed"}
            ),
            CapacityReservationIds=[reservation_id],
        )
        found = (answer or {}).get("CapacityReservations", [])
        if not found:
            return Check(
                name,
                w.name,
                Status.FAIL,
                f"{reservation_id} does not exist in {self.region} for this account",
                f"fix {target.key}.reservation_id, or the region / account (--region, "
                "--aws-profile)",
            )
        r = found[0]
        failures: list[tuple[str, str]] = []
        warnings: list[tuple[str, str]] = []
        state = str(r.get("State", "unknown"))
        if state in _WAITING_RESERVATION_STATES:
            warnings.append((f"state is {state!r}", "wait until it is 'scheduled' or 'active'"))
        elif state not in _GOOD_RESERVATION_STATES:
            failures.append(
                (
                    f"state is {state!r}",
                    "reserve new capacity (fmc capacity search) and update the profile",
                )
            )
        if r.get("InstanceType") != w.instance_type:
            failures.append(
                (
                    f"it holds {r.get('InstanceType')}, the profile wants {w.instance_type}",
                    f"set {w.name}.instance_type = {r.get('InstanceType')!r} or use a "
                    "matching reservation",
                )
            )
        if r.get("AvailabilityZone") != self.zone:
            failures.append(
                (
                    f"it is in {r.get('AvailabilityZone')}, the GPU zone is {self.zone}",
                    f"set platform.availability_zone = {r.get('AvailabilityZone')!r}",
                )
            )
        total = int(r.get("TotalInstanceCount", 0))
        wanted = target.wanted
        if total < wanted:
            failures.append(
                (
                    f"it holds {total} instances, the profile wants {wanted}",
                    f"set {w.name}.instance_count (and max_instance_count) <= {total} or "
                    "reserve more",
                )
            )
        failures += self._reservation_details(w, r, target)
        reservation_type = r.get("ReservationType", "default")
        if w.capacity.kind is CapacityKind.CAPACITY_BLOCK and reservation_type != "capacity-block":
            failures.append(
                (
                    f"it is not a Capacity Block (type {reservation_type!r})",
                    f"set {w.name}.capacity.kind = 'odcr'",
                )
            )
        if w.capacity.kind is CapacityKind.ODCR and reservation_type == "capacity-block":
            failures.append(
                (
                    "it is a Capacity Block",
                    f"set {w.name}.capacity.kind = 'capacity-block' (launches need market type "
                    "capacity-block)",
                )
            )
        hours = self._hours_left(r.get("EndDate"))
        end_text = f"ends {r['EndDate']:%Y-%m-%d %H:%M} UTC" if r.get("EndDate") else "no end date"
        if hours is not None and hours <= 0:
            failures.append(("it has ended", "reserve new capacity and update the profile"))
        elif hours is not None and hours < self.expiry_warning_hours:
            warnings.append(
                (
                    f"it ends in {hours:.0f} h",
                    "finish or checkpoint before then; Capacity Block instances are terminated at "
                    "the end (scale EKS node groups to zero first)",
                )
            )
        summary = (
            f"{reservation_id}: {state}, {total} x {r.get('InstanceType')} in "
            f"{r.get('AvailabilityZone')}, {end_text}"
        )
        return _verdict(name, w.name, summary, failures, warnings)

    def _reservation_details(
        self, w: WorkloadConfig, r: dict[str, Any], target: _Target
    ) -> list[tuple[str, str]]:
        """Platform, tenancy, placement group and (for a block) start and end against what
        the launch template and the profile expect."""
        out: list[tuple[str, str]] = []
        platform = r.get("InstancePlatform", "Linux/UNIX")
        if platform != "Linux/UNIX":
            out.append(
                (
                    f"its platform is {platform!r}, the nodes run Linux/UNIX",
                    "use a Linux/UNIX reservation",
                )
            )
        tenancy = r.get("Tenancy", "default")
        if tenancy != "default":
            out.append(
                (
                    f"its tenancy is {tenancy!r}, the launch template uses default tenancy",
                    "use a default-tenancy reservation",
                )
            )
        cap = w.capacity
        group = r.get("PlacementGroupArn")
        if group != target.placement_group_arn and cap.kind is CapacityKind.ODCR:
            if group:
                out.append(
                    (
                        f"it was made in placement group {group}, which the profile does not "
                        "name (instances launched outside it do not use it)",
                        f"set {target.key}.placement_group_arn = {group!r}",
                    )
                )
            else:
                out.append(
                    (
                        f"it has no placement group, the profile names "
                        f"{target.placement_group_arn}",
                        f"remove {target.key}.placement_group_arn",
                    )
                )
        if cap.kind is CapacityKind.CAPACITY_BLOCK:
            for key, field in (("start_time", "StartDate"), ("end_time", "EndDate")):
                given = getattr(cap, key)
                actual = r.get(field)
                if given is None or actual is None:
                    continue
                if actual.tzinfo is None:
                    actual = actual.replace(tzinfo=UTC)
                if parse_utc(given) != actual:
                    actual_text = f"{actual:%Y-%m-%dT%H:%M:%SZ}"
                    out.append(
                        (
                            f"its {field} is {actual_text}, the profile's {key} is {given}",
                            f"set {w.name}.capacity.{key} = {actual_text!r} (the node group "
                            "scales on these times)",
                        )
                    )
        return out

    def _check_training_plan(self, w: WorkloadConfig) -> Check:
        """The SageMaker training plan exists, is usable, and covers the HyperPod instances."""
        name = "training plan"
        arn = w.capacity.training_plan_arn or ""
        answer = call(
            self.client("sagemaker"),
            "describe_training_plan",
            "sagemaker:DescribeTrainingPlan",
            missing_codes=frozenset({"ResourceNotFound", "ValidationException"}),
            TrainingPlanName=arn,
        )
        if answer is None:
            return Check(
                name,
                w.name,
                Status.FAIL,
                f"{arn} does not exist in {self.region} for this account",
                f"fix {w.name}.capacity.training_plan_arn (aws sagemaker list-training-plans)",
            )
        failures: list[tuple[str, str]] = []
        warnings: list[tuple[str, str]] = []
        status = str(answer.get("Status", "unknown"))
        if status == "Pending":
            warnings.append(("status is 'Pending'", "wait until it is 'Scheduled' or 'Active'"))
        elif status not in _GOOD_PLAN_STATES:
            failures.append(
                (f"status is {status!r}", "buy a new training plan and update the profile")
            )
        total = int(answer.get("TotalInstanceCount", 0))
        if total < w.instance_count:
            failures.append(
                (
                    f"it holds {total} instances, the profile wants {w.instance_count}",
                    f"set {w.name}.instance_count <= {total} or extend the plan",
                )
            )
        available = answer.get("AvailableInstanceCount")
        if available is not None and total >= w.instance_count and available < w.instance_count:
            failures.append(
                (
                    f"only {available} of its {total} instances are still available "
                    f"({answer.get('InUseInstanceCount', 0)} in use), the profile wants "
                    f"{w.instance_count}",
                    f"set {w.name}.instance_count <= {available}, or free the plan's instances "
                    "used by another cluster",
                )
            )
        summaries = answer.get("ReservedCapacitySummaries", [])
        zones = sorted({str(s["AvailabilityZone"]) for s in summaries if s.get("AvailabilityZone")})
        if zones and self.zone not in zones:
            failures.append(
                (
                    f"it reserves capacity in {', '.join(zones)}, the GPU zone is {self.zone}",
                    f"set platform.availability_zone = {zones[0]!r} (HyperPod nodes run in "
                    "the plan's zone)",
                )
            )
        # HyperPod nodes run in the GPU zone: only the plan's capacity of the profile's type
        # there counts (a plan split 4 + 4 over two zones does not hold 8 nodes in one).
        hyperpod_name = get_instance_type(w.instance_type).hyperpod_name
        in_zone = sum(
            int(s.get("TotalInstanceCount", 0))
            for s in summaries
            if s.get("AvailabilityZone") == self.zone
            and s.get("InstanceType") == hyperpod_name
            and s.get("Status") not in _ENDED_CAPACITY_STATES
        )
        types = {s.get("InstanceType") for s in summaries}
        if (
            self.zone in zones
            and hyperpod_name in types
            and total >= w.instance_count
            and in_zone < w.instance_count
        ):
            failures.append(
                (
                    f"it reserves {in_zone} {hyperpod_name} in {self.zone} (of {total} in all), "
                    f"the profile wants {w.instance_count} there",
                    f"set {w.name}.instance_count <= {in_zone}, or use a plan with "
                    f"{w.instance_count} in {self.zone}",
                )
            )
        start = answer.get("StartTime")
        until_start = self._hours_left(start)
        if until_start is not None and until_start > 0:
            warnings.append(
                (
                    f"it starts {start:%Y-%m-%d %H:%M} UTC, in {until_start:.0f} h",
                    "deploy the HyperPod stack after the start: nodes cannot launch before it",
                )
            )
        if types and hyperpod_name not in types:
            failures.append(
                (
                    f"it reserves {', '.join(sorted(t for t in types if t))}, not {hyperpod_name}",
                    f"set {w.name}.instance_type to the plan's type or use a matching plan",
                )
            )
        targets = answer.get("TargetResources", [])
        if targets and "hyperpod-cluster" not in targets:
            failures.append(
                (
                    f"it targets {', '.join(targets)}, not hyperpod-cluster",
                    "buy a training plan for target resource hyperpod-cluster",
                )
            )
        hours = self._hours_left(answer.get("EndTime"))
        if hours is not None and hours <= 0:
            failures.append(("it has ended", "buy a new training plan"))
        elif hours is not None and hours < self.expiry_warning_hours:
            warnings.append((f"it ends in {hours:.0f} h", "finish or checkpoint before then"))
        summary = (
            f"{answer.get('TrainingPlanName', arn)}: {status}, {total} instances"
            + (f" ({available} available)" if available is not None else "")
            + (f" in {', '.join(zones)}" if zones else "")
        )
        return _verdict(name, w.name, summary, failures, warnings)

    def check_hyperpod_type(self, w: WorkloadConfig) -> Check:
        """HyperPod's API (botocore's SageMaker model) lists the ml.* instance type
        (:func:`fm_constructs.rules.online.sagemaker.hyperpod_instance_type`)."""
        name = "HyperPod instance type"
        hyperpod_name = get_instance_type(w.instance_type).hyperpod_name
        found = sagemaker_rules.hyperpod_instance_type(
            self.client("sagemaker"), hyperpod_name, w.instance_type, workload=w.name
        )
        return _checks(name, w.name, found)[0]

    def check_ec2_quotas(self) -> list[Check]:
        """On-Demand vCPU quotas cover every EC2 workload that draws on them, added up."""
        needed: dict[str, tuple[str, int, list[str]]] = {}
        for group, instance_type, nodes in self._on_demand_node_groups():
            spec = get_instance_type(instance_type)
            quota = quota_for_family(spec)
            if quota is None:
                continue
            code, quota_name = quota
            _, vcpus, names = needed.get(code, (quota_name, 0, []))
            needed[code] = (
                quota_name,
                vcpus + spec.vcpus * nodes,
                [*names, f"{group} {nodes} x {spec.name}"],
            )
        if not needed:
            return [
                Check(
                    "EC2 vCPU quota",
                    None,
                    Status.SKIP,
                    "no on-demand or ODCR workload (Capacity Blocks and training plans are "
                    "reserved capacity, checked above)",
                )
            ]
        client = self.client("service-quotas")
        return [
            check
            for code, (quota_name, vcpus, names) in needed.items()
            for check in _checks(
                "EC2 vCPU quota",
                None,
                quota_rules.ec2_vcpu_quota(client, code, quota_name, vcpus, names, self.region),
            )
        ]

    def _on_demand_node_groups(self) -> list[tuple[str, str, int]]:
        """(node group, instance type, largest node count) of every EC2 node group that draws
        on the On-Demand vCPU quotas: workloads on-demand or on an ODCR at their autoscaling
        maximum, and the RL rollout groups (always on-demand)."""
        groups: list[tuple[str, str, int]] = []
        for w in self.profile.enabled_workloads:
            if w.orchestrator in HYPERPOD:
                continue
            if w.capacity.kind in (CapacityKind.ON_DEMAND, CapacityKind.ODCR):
                groups.append((w.name, w.instance_type, largest_node_count(w)))
            rollout = w.rollout_group
            if rollout is not None:
                groups.append((f"{w.name}.rollout", rollout.instance_type, rollout.instance_count))
        return groups

    def _list_quotas(self, service_code: str) -> list[dict[str, Any]]:
        return quota_rules.list_quotas(self.client("service-quotas"), service_code)

    def check_hyperpod_quotas(self) -> list[Check]:
        """SageMaker's '<ml type> for cluster usage' quota covers each HyperPod workload."""
        quotas = {str(q.get("QuotaName")): q for q in self._list_quotas("sagemaker")}
        checks: list[Check] = []
        for w in self.profile.enabled_workloads:
            if w.orchestrator not in HYPERPOD:
                continue
            quota_name = f"{get_instance_type(w.instance_type).hyperpod_name} for cluster usage"
            found = quota_rules.hyperpod_quota(quotas, quota_name, w.instance_count, self.region)
            checks += _checks("HyperPod quota", w.name, found)
        return checks

    def check_fsx_quota(self) -> Check:
        """The account's FSx for Lustre PERSISTENT_2 storage quota holds the existing file
        systems plus the planned ones."""
        from fm_constructs.cli.plan import build_plan
        from fm_constructs.cli.pricing import load_prices

        name = "FSx for Lustre storage quota"
        plan = build_plan(self.profile, load_prices())
        planned = sum(
            w.storage.storage_capacity_gib for w in plan.workloads if w.storage is not None
        )
        found = quota_rules.fsx_storage_quota(
            self.client("service-quotas"), self.client("fsx"), planned, self.region
        )
        return _checks(name, None, found)[0]

    def check_pcs_creating(self) -> Check:
        """No other PCS cluster is being created in the region
        (:func:`fm_constructs.rules.online.pcs.no_cluster_creating`)."""
        found = pcs_rules.no_cluster_creating(self.client("pcs"), self.region)
        return _checks("PCS cluster creation", None, found)[0]

    def check_eks_version(self) -> Check:
        """The profile's Kubernetes version (``platform.kubernetes_version``) is one EKS offers
        in standard support in the region
        (:func:`fm_constructs.rules.online.eks.kubernetes_version_supported`)."""
        name = "EKS version"
        found = eks_rules.kubernetes_version_supported(
            self.client("eks"), self.kubernetes_version, self.region
        )
        if not found:
            return Check(
                name,
                None,
                Status.SKIP,
                "this botocore has no eks:DescribeClusterVersions; upgrade boto3 to check",
            )
        return _checks(name, None, found)[0]

    def check_admin_role(self, arn: str) -> list[Check]:
        """The role of one ``platform.admin_role_arns`` entry exists, under exactly that ARN
        (:func:`fm_constructs.rules.online.iam.admin_role`)."""
        return _checks("admin roles", None, iam_rules.admin_role(self.client("iam"), arn))


#: How an online rule's finding is printed: an error fails the check, an info passes it.
_STATUS_OF = {
    Severity.ERROR: Status.FAIL,
    Severity.WARNING: Status.WARN,
    Severity.INFO: Status.PASS,
}


def _checks(name: str, workload: str | None, findings: Iterable[Finding]) -> list[Check]:
    """The findings of an online rule as the checks ``fmc preflight`` prints (the finding's
    text, fix and code; a passed check carries no code)."""
    return [
        Check(
            name,
            workload,
            _STATUS_OF[f.severity],
            f.allowed,
            f.fix or None,
            None if f.severity is Severity.INFO else f.code,
        )
        for f in findings
    ]


@dataclass(frozen=True)
class _Target:
    """One reservation target of a workload: the capacity table's own, or one entry of
    ``capacity.node_groups`` with the nodes of its managed node group; ``key`` is its
    profile key path."""

    key: str
    wanted: int
    reservation_id: str | None
    resource_group_arn: str | None
    placement_group_arn: str | None


def _reservation_targets(w: WorkloadConfig) -> list[_Target]:
    """The reservations the workload's node groups launch into, each with the nodes it must
    hold (one per managed node group when the profile lists ``capacity.node_groups``)."""
    cap = w.capacity
    wanted = largest_node_count(w)
    if not cap.node_groups:
        return [
            _Target(
                f"{w.name}.capacity",
                wanted,
                cap.reservation_id,
                cap.resource_group_arn,
                cap.placement_group_arn,
            )
        ]
    sizes = [s[2] for s in split_sizes(wanted, wanted, wanted, node_groups_for(wanted))]
    return [
        _Target(
            f"{w.name}.capacity.node_groups[{i}]",
            sizes[i] if i < len(sizes) else 0,
            group.reservation_id,
            group.resource_group_arn,
            group.placement_group_arn,
        )
        for i, group in enumerate(cap.node_groups)
    ]


#: Which status of several checks wins (the first found of this order).
_STATUS_ORDER = (Status.FAIL, Status.ERROR, Status.WARN, Status.PASS, Status.SKIP)


def _combined(checks: list[Check]) -> Check:
    """One check of several reservations: the worst status, every detail and fix."""
    status = next(s for s in _STATUS_ORDER if any(c.status is s for c in checks))
    fixes = [c.fix for c in checks if c.fix and c.status is not Status.PASS]
    worst = next(c for c in checks if c.status is status)
    return Check(
        worst.name,
        worst.workload,
        status,
        "; ".join(c.detail for c in checks),
        "; ".join(fixes) or None,
        worst.code if status in (Status.FAIL, Status.WARN) else None,
    )


def _verdict(
    name: str,
    workload: str,
    summary: str,
    failures: list[tuple[str, str]],
    warnings: list[tuple[str, str]],
) -> Check:
    if failures:
        return Check(
            name,
            workload,
            Status.FAIL,
            f"{summary}; " + "; ".join(f for f, _ in failures + warnings),
            "; ".join(fix for _, fix in failures + warnings),
        )
    if warnings:
        return Check(
            name,
            workload,
            Status.WARN,
            f"{summary}; " + "; ".join(w for w, _ in warnings),
            "; ".join(fix for _, fix in warnings),
        )
    return Check(name, workload, Status.PASS, summary)


def _with_code(check: Check) -> str:
    return f"{check.detail} [{check.code}]" if check.code else check.detail


def exit_code(checks: list[Check]) -> ExitCode:
    """1 if any check failed, else 3 if AWS could not answer one, else 0."""
    statuses = {c.status for c in checks}
    if Status.FAIL in statuses:
        return ExitCode.CHECK_FAILED
    if Status.ERROR in statuses:
        return ExitCode.AWS_ERROR
    return ExitCode.OK


def run_preflight(preflight: Preflight) -> ExitCode:
    """Run every check of ``preflight``, print the results (table or JSON) with its reporter
    and return the exit code."""
    profile, session, reporter = preflight.profile, preflight.session, preflight.reporter
    checks = preflight.run()
    counts = {status.value: sum(1 for c in checks if c.status is status) for status in Status}
    code = exit_code(checks)
    if reporter.json_mode:
        reporter.emit_json(
            {
                "schema": SCHEMA,
                "profile": profile.source,
                "region": session.region,
                "availability_zone": profile.platform.availability_zone,
                "checks": [c.to_json() for c in checks],
                "summary": counts,
                "exit_code": int(code),
            }
        )
        return code
    reporter.print(
        f"preflight of {profile.source} ({session.region}, GPU zone "
        f"{profile.platform.availability_zone})\n"
    )
    rows = [[c.status.value.upper(), c.workload or "-", c.name, _with_code(c)] for c in checks]
    reporter.print(render_table(["status", "workload", "check", "detail"], rows))
    fixes = [c for c in checks if c.fix and c.status in (Status.FAIL, Status.WARN)]
    if fixes:
        reporter.print("\nfixes:")
        for c in fixes:
            reporter.print(f"  [{c.status.value}] {c.workload or 'account'} / {c.name}: {c.fix}")
    reporter.print("\n" + ", ".join(f"{n} {s}" for s, n in counts.items()))
    return code
