"""Online rules on Service Quotas: the account's On-Demand vCPU quota of an instance family
(EC2) and the HyperPod cluster-usage quota of an instance type (SageMaker) hold what the
profile needs at its largest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.rules.findings import define
from fm_constructs.rules.online.aws import ask, ask_pages

EC2_VCPU = define(
    "FM706",
    "The account's On-Demand vCPU quota of the instance family is below what the profile "
    "needs at its largest size (or could not be read).",
    "Request a quota increase (the fix shows the command), or lower the node counts.",
    severity=None,
)
FSX_STORAGE = define(
    "FM708",
    "The account's FSx for Lustre storage quota cannot hold the existing file systems and "
    "the planned ones (or could not be read).",
    "Request a quota increase, or size the file systems down.",
    severity=None,
)
HYPERPOD_QUOTA = define(
    "FM707",
    "The account's SageMaker HyperPod quota of the instance type is below the profile's "
    "node count (or could not be read).",
    "Request a quota increase (the fix shows the command), or lower the node counts.",
    severity=None,
)


def _increase(service: str, code: object, desired: int, region: str) -> str:
    return (
        f"aws service-quotas request-service-quota-increase --service-code {service} "
        f"--quota-code {code} --desired-value {desired} --region {region}"
    )


def list_quotas(quotas: Any, service_code: str) -> list[dict[str, Any]]:
    """Every quota of ``service_code`` (servicequotas:ListServiceQuotas, all pages)."""
    pages = ask_pages(
        quotas,
        "list_service_quotas",
        "servicequotas:ListServiceQuotas",
        ServiceCode=service_code,
    )
    return [quota for page in pages for quota in page.get("Quotas", [])]


def ec2_vcpu_quota(
    quotas: Any, code: str, quota_name: str, vcpus: int, groups: Sequence[str], region: str
) -> list[Finding]:
    """The EC2 quota ``code`` holds ``vcpus`` for the node ``groups`` that draw on it."""
    answer = ask(
        quotas,
        "get_service_quota",
        "servicequotas:GetServiceQuota",
        missing_codes=frozenset({"NoSuchResourceException"}),
        ServiceCode="ec2",
        QuotaCode=code,
    )
    label = f"{quota_name} ({code})"
    if answer is None:
        detail, fix = (
            f"{label} not found in {region}",
            "check the EC2 quotas in the Service Quotas console",
        )
        return [Finding(EC2_VCPU.code, Severity.WARNING, "", None, detail, fix)]
    value = float(answer.get("Quota", {}).get("Value", 0))
    detail = f"{label}: {value:,.0f} vCPUs, the profile needs {vcpus:,} ({'; '.join(groups)})"
    if value >= vcpus:
        detail += "; instances already running in these families count too"
        return [Finding(EC2_VCPU.code, Severity.INFO, "", None, detail)]
    fix = _increase("ec2", code, vcpus, region)
    return [Finding(EC2_VCPU.code, Severity.ERROR, "", None, detail, fix)]


def hyperpod_quota(
    listed: Mapping[str, Mapping[str, Any]], quota_name: str, nodes: int, region: str
) -> list[Finding]:
    """The SageMaker quota ``quota_name`` ('<ml type> for cluster usage', among the ``listed``
    quotas by name) holds ``nodes``."""
    quota = listed.get(quota_name)
    if quota is None:
        detail = f"no SageMaker quota named {quota_name!r} in {region}"
        fix = "check the SageMaker quotas in the Service Quotas console"
        return [Finding(HYPERPOD_QUOTA.code, Severity.WARNING, "", None, detail, fix)]
    value = float(quota.get("Value", 0))
    detail = f"{quota_name}: {value:,.0f}, the profile needs {nodes}"
    if value >= nodes:
        return [Finding(HYPERPOD_QUOTA.code, Severity.INFO, "", None, detail)]
    fix = _increase("sagemaker", quota.get("QuotaCode"), nodes, region)
    return [Finding(HYPERPOD_QUOTA.code, Severity.ERROR, "", None, detail, fix)]


def _is_lustre_persistent2_capacity(quota_name: str) -> bool:
    text = quota_name.lower().replace("_", " ")
    return "lustre" in text and "persistent 2" in text and "storage capacity" in text


def existing_lustre_gib(fsx: Any) -> int:
    """Storage of the account's PERSISTENT_2 Lustre file systems in the region, GiB."""
    pages = ask_pages(fsx, "describe_file_systems", "fsx:DescribeFileSystems")
    return sum(
        int(fs.get("StorageCapacity", 0))
        for page in pages
        for fs in page.get("FileSystems", [])
        if fs.get("FileSystemType") == "LUSTRE"
        and fs.get("LustreConfiguration", {}).get("DeploymentType") == "PERSISTENT_2"
    )


def fsx_storage_quota(quotas: Any, fsx: Any, planned_gib: int, region: str) -> list[Finding]:
    """The PERSISTENT_2 storage-capacity quota holds the existing file systems plus
    ``planned_gib``."""
    candidates = [
        q
        for q in list_quotas(quotas, "fsx")
        if _is_lustre_persistent2_capacity(str(q.get("QuotaName", "")))
    ]
    if not candidates:
        detail = (
            f"no FSx for Lustre PERSISTENT_2 storage-capacity quota found in Service Quotas "
            f"(service code fsx, {region}); the plan needs {planned_gib:,} GiB"
        )
        fix = "check the FSx quotas in the Service Quotas console"
        return [Finding(FSX_STORAGE.code, Severity.WARNING, "", None, detail, fix)]
    quota = candidates[0]
    existing = existing_lustre_gib(fsx)
    value = float(quota.get("Value", 0))
    detail = (
        f"{quota.get('QuotaName')} ({quota.get('QuotaCode')}): {value:,.0f} GiB; existing "
        f"PERSISTENT_2 file systems {existing:,} GiB + planned {planned_gib:,} GiB"
    )
    if value >= existing + planned_gib:
        return [Finding(FSX_STORAGE.code, Severity.INFO, "", None, detail)]
    fix = _increase("fsx", quota.get("QuotaCode"), existing + planned_gib, region)
    return [Finding(FSX_STORAGE.code, Severity.ERROR, "", None, detail, fix)]
