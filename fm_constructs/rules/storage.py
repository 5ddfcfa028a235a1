"""Rules of FSx for Lustre settings: capacity steps, throughput tiers, metadata IOPS and EFA,
checked the same way on a profile's storage table and on a
:class:`~fm_constructs.storage.LustreFileSystem`'s arguments (the arithmetic is
:mod:`fm_constructs.planning.fsx_sizing`).
"""

from __future__ import annotations

from fm_constructs.planning.fsx_sizing import (
    EFA_CAPACITY_STEP_GIB,
    LustreDeploymentType,
    is_valid_efa_capacity,
    is_valid_metadata_iops,
    is_valid_storage_capacity,
    next_valid_storage_capacity,
    storage_capacity_rule,
    valid_per_unit_throughputs,
)
from fm_constructs.rules.findings import Finding, Severity, rule

STORAGE = "FM401"


def _add(problems: list[Finding], key: str, value: object, allowed: str) -> None:
    problems.append(Finding(STORAGE, Severity.ERROR, key, value, allowed))


@rule(
    "FM401",
    "An FSx for Lustre setting breaks FSx's rules (capacity steps, throughput tiers, metadata "
    "IOPS, EFA) or the sizing keys are mixed with explicit ones.",
    "Use one of the valid values the message lists, or a sizing request alone.",
)
def lustre_settings(
    *,
    deployment_type: LustreDeploymentType,
    storage_capacity_gib: int | None,
    throughput_mb_s_per_tib: int | None,
    metadata_iops: int | None = None,
    efa_enabled: bool = False,
) -> list[Finding]:
    """Every way these settings break FSx's rules (FM401; a construct reports them under its
    own code).

    ``None`` means "not checked" for capacity and throughput (e.g. a CDK token), and "not set"
    for ``metadata_iops`` (AUTOMATIC mode on PERSISTENT_2).
    """
    problems: list[Finding] = []
    if storage_capacity_gib is not None and not is_valid_storage_capacity(
        deployment_type, storage_capacity_gib
    ):
        _add(
            problems,
            "storage_capacity_gib",
            storage_capacity_gib,
            storage_capacity_rule(deployment_type) + f"; the next valid size up is "
            f"{next_valid_storage_capacity(deployment_type, _as_number(storage_capacity_gib))}",
        )

    allowed = valid_per_unit_throughputs(deployment_type)
    if throughput_mb_s_per_tib is not None:
        if not allowed:
            _add(
                problems,
                "throughput_mb_s_per_tib",
                throughput_mb_s_per_tib,
                f"must not be set for {deployment_type.value} (its throughput is fixed); "
                "remove it or use PERSISTENT_2",
            )
        elif throughput_mb_s_per_tib not in allowed or isinstance(throughput_mb_s_per_tib, bool):
            _add(
                problems,
                "throughput_mb_s_per_tib",
                throughput_mb_s_per_tib,
                f"for {deployment_type.value} must be one of "
                f"{', '.join(str(v) for v in allowed)} MB/s/TiB",
            )

    if metadata_iops is not None:
        if deployment_type is not LustreDeploymentType.PERSISTENT_2:
            _add(
                problems,
                "metadata_iops",
                metadata_iops,
                f"metadata configuration is only available on PERSISTENT_2, not "
                f"{deployment_type.value}; remove metadata_iops",
            )
        elif not is_valid_metadata_iops(metadata_iops):
            _add(
                problems,
                "metadata_iops",
                metadata_iops,
                "must be 1500, 3000, 6000, 12000, or a multiple of 12000 up to 192000 "
                "(or unset for AUTOMATIC mode)",
            )

    if efa_enabled:
        if deployment_type is not LustreDeploymentType.PERSISTENT_2:
            _add(
                problems,
                "efa_enabled",
                efa_enabled,
                f"EFA needs PERSISTENT_2 with a metadata configuration, not "
                f"{deployment_type.value}; use PERSISTENT_2 or disable EFA",
            )
        elif (
            storage_capacity_gib is not None
            and throughput_mb_s_per_tib is not None
            and throughput_mb_s_per_tib in allowed
            and not is_valid_efa_capacity(storage_capacity_gib, throughput_mb_s_per_tib)
        ):
            step = EFA_CAPACITY_STEP_GIB[throughput_mb_s_per_tib]
            _add(
                problems,
                "storage_capacity_gib",
                storage_capacity_gib,
                f"an EFA-enabled file system at {throughput_mb_s_per_tib} MB/s/TiB needs a "
                f"multiple of {step} GiB (at least {step}); steps per tier: "
                + ", ".join(f"{t}: {s}" for t, s in EFA_CAPACITY_STEP_GIB.items()),
            )
    return problems


def _as_number(value: object) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
