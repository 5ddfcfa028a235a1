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
from fm_constructs.catalog.lookup import find_instance_type
from fm_constructs.cli.aws import AwsSession, describe_aws_error
from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.cli.output import Reporter, render_table
from fm_constructs.config import (
    CapacityKind,
    Orchestrator,
    Profile,
    TrainingWorkloadConfig,
    WorkloadConfig,
)
from fm_constructs.config.subnet_demand import largest_node_count
from fm_constructs.domain.kinds import HYPERPOD
from fm_constructs.rules.findings import Finding, Severity
from fm_constructs.rules.online import capacity as capacity_rules
from fm_constructs.rules.online import ec2 as ec2_rules
from fm_constructs.rules.online import eks as eks_rules
from fm_constructs.rules.online import iam as iam_rules
from fm_constructs.rules.online import pcs as pcs_rules
from fm_constructs.rules.online import quotas as quota_rules
from fm_constructs.rules.online import sagemaker as sagemaker_rules
from fm_constructs.rules.online.aws import AwsCallError
from fm_constructs.rules.online.capacity import ReservationTarget

SCHEMA = "fmc.preflight/v1"

#: Service Quotas codes of the "Running On-Demand <family> instances" vCPU quotas (service ec2).
EC2_VCPU_QUOTAS: dict[str, tuple[str, str]] = {
    "p": ("L-417A185B", "Running On-Demand P instances"),
    "g": ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    "trn": ("L-2C3B7624", "Running On-Demand Trn instances"),
}


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
    "capacity reservation group": capacity_rules.RESERVATION_GROUP.code,
    "capacity reservation": capacity_rules.RESERVATION.code,
    "training plan": capacity_rules.TRAINING_PLAN.code,
    "HyperPod instance type": sagemaker_rules.HYPERPOD_TYPE.code,
    "EC2 vCPU quota": quota_rules.EC2_VCPU.code,
    "HyperPod quota": quota_rules.HYPERPOD_QUOTA.code,
    "FSx for Lustre storage quota": quota_rules.FSX_STORAGE.code,
    "PCS cluster creation": pcs_rules.PCS_CREATING.code,
    "PCS node AMI": pcs_rules.PCS_AMI_AVAILABLE.code,
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
            if w.orchestrator is Orchestrator.PCS:
                self._guard("PCS node AMI", w.name, partial(self._one, self.check_pcs_ami, w))
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
            for target in capacity_rules.reservation_targets(w)
        ]
        return checks[0] if len(checks) == 1 else _combined(checks)

    def _where(self) -> capacity_rules.Where:
        return capacity_rules.Where(self.zone, self.region, self.now, self.expiry_warning_hours)

    def _check_reservation_group(self, w: WorkloadConfig, target: ReservationTarget) -> Check:
        """The group's reservations hold the largest node group
        (:func:`fm_constructs.rules.online.capacity.reservation_group`)."""
        found = capacity_rules.reservation_group(
            self.client("resource-groups"),
            self.client("ec2"),
            w,
            target,
            self._where(),
        )
        return _checks("capacity reservation group", w.name, found)[0]

    def _check_reservation(self, w: WorkloadConfig, target: ReservationTarget) -> Check:
        """The reservation exists, is usable and matches the nodes
        (:func:`fm_constructs.rules.online.capacity.reservation`)."""
        found = capacity_rules.reservation(
            self.client("ec2"),
            w,
            target,
            self._where(),
        )
        return _checks("capacity reservation", w.name, found)[0]

    def _check_training_plan(self, w: WorkloadConfig) -> Check:
        """The SageMaker training plan exists, is usable, and covers the HyperPod instances
        (:func:`fm_constructs.rules.online.capacity.training_plan`)."""
        found = capacity_rules.training_plan(
            self.client("sagemaker"),
            w,
            self._where(),
        )
        return _checks("training plan", w.name, found)[0]

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

    def check_pcs_ami(self, w: WorkloadConfig) -> Check:
        """The AMI the profile pins for the PCS nodes is available, of their architecture
        (:func:`fm_constructs.rules.online.pcs.pinned_ami_available`)."""
        assert isinstance(w, TrainingWorkloadConfig) and w.pcs_ami.id is not None  # FM337
        spec = find_instance_type(w.instance_type)
        architecture = spec.architecture if spec is not None else "x86_64"
        found = pcs_rules.pinned_ami_available(
            self.client("ec2"), w.name, w.pcs_ami.id, architecture, self.region
        )
        return _checks("PCS node AMI", w.name, found)[0]

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


#: The reservations a workload's node groups launch into (kept under its old name).
_reservation_targets = capacity_rules.reservation_targets


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
