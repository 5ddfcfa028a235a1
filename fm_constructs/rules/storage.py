"""Rules of FSx for Lustre: settings (capacity steps, throughput tiers, metadata IOPS and EFA),
checked the same way on a profile's storage table and on a
:class:`~fm_constructs.storage.LustreFileSystem`'s arguments, and the data repository
associations of a file system (the arithmetic and the values are
:mod:`fm_constructs.planning.fsx_sizing` and :mod:`fm_constructs.planning.data_repositories`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from fm_constructs.domain.numbers import is_whole_number
from fm_constructs.planning.data_repositories import (
    MAX_ASSOCIATIONS,
    MAX_CHUNK_SIZE_MIB,
    MIN_CHUNK_SIZE_MIB,
    DataRepositoryAssociation,
    S3Event,
    association_construct_id,
    default_data_repository_path,
    normalize_file_system_path,
)
from fm_constructs.planning.fsx_sizing import (
    EFA_CAPACITY_STEP_GIB,
    MAX_BACKUP_RETENTION_DAYS,
    LustreDeploymentType,
    is_valid_efa_capacity,
    is_valid_metadata_iops,
    is_valid_storage_capacity,
    next_valid_storage_capacity,
    storage_capacity_rule,
    valid_per_unit_throughputs,
)
from fm_constructs.rules.constructs import DATA_BUCKET, LUSTRE
from fm_constructs.rules.findings import Finding, Severity, rule
from fm_constructs.rules.tokens import is_unresolved

STORAGE = "FM401"


def _add(problems: list[Finding], key: str, value: object, allowed: str) -> None:
    problems.append(Finding(STORAGE, Severity.ERROR, key, value, allowed))


def _lustre(problems: list[Finding], key: str, value: object, allowed: str) -> None:
    problems.append(Finding(LUSTRE, Severity.ERROR, key, value, allowed))


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


def _pairs(items: list[tuple[int, str]]) -> Iterator[tuple[int, str, int, str]]:
    """Every two of ``items`` (index, value), the earlier first."""
    for i, (index_a, a) in enumerate(items):
        for index_b, b in items[i + 1 :]:
            yield index_a, a, index_b, b


def _is_nested(parent: str, child: str) -> bool:
    return parent == "/" or child.startswith(parent + "/")


def data_repository_associations(
    associations: Sequence[DataRepositoryAssociation], *, bucket_name: str
) -> list[Finding]:
    """Every way ``associations`` break FSx's rules (errors), and the risky but legal nested S3
    prefixes (warnings, without a key), all under the file system's code (FM822).

    Rules: at most 8; file-system paths absolute, unique, not nested in one another (``/`` only
    as the sole association); S3 paths ``s3://`` inside the data bucket and unique; events a
    subset of NEW/CHANGED/DELETED without repeats; chunk size 1..512000 MiB. Values that are
    CDK tokens are skipped.
    """
    problems: list[Finding] = []
    if len(associations) > MAX_ASSOCIATIONS:
        _lustre(
            problems,
            "associations",
            [a.file_system_path for a in associations],
            f"FSx allows at most {MAX_ASSOCIATIONS} data repository associations per file system",
        )

    paths: list[tuple[int, str]] = []
    ids: dict[str, str] = {}
    s3_paths: list[tuple[int, str]] = []
    for index, assoc in enumerate(associations):
        where = f"associations[{index}]"
        path = assoc.file_system_path
        if is_unresolved(path):
            _lustre(
                problems,
                f"{where}.file_system_path",
                path,
                "must be a literal path (it names the association's construct id), not a token",
            )
        elif not path.startswith("/") or "//" in path or len(path) > 4096:
            _lustre(
                problems,
                f"{where}.file_system_path",
                path,
                "must be an absolute directory such as '/datasets' (leading '/', no '//', at "
                "most 4096 characters)",
            )
        else:
            normalized = normalize_file_system_path(path)
            paths.append((index, normalized))
            construct_id = association_construct_id(normalized)
            if construct_id in ids and ids[construct_id] != normalized:
                _lustre(
                    problems,
                    f"{where}.file_system_path",
                    path,
                    f"maps to the same construct id '{construct_id}' as {ids[construct_id]!r}; "
                    "rename one directory",
                )
            ids.setdefault(construct_id, normalized)

        s3_path = assoc.data_repository_path
        if s3_path is None:
            s3_path = default_data_repository_path(bucket_name, path)
        if not is_unresolved(s3_path) or s3_path.startswith("s3://"):
            if not s3_path.startswith("s3://"):
                _lustre(
                    problems,
                    f"{where}.data_repository_path",
                    s3_path,
                    "must be an S3 URL 's3://<bucket>/<prefix>/'",
                )
            else:
                repo_bucket = s3_path[len("s3://") :].split("/", 1)[0]
                if repo_bucket != bucket_name:
                    _lustre(
                        problems,
                        f"{where}.data_repository_path",
                        s3_path,
                        f"must be inside the data bucket: start with 's3://{bucket_name}/' "
                        "(build it from data_bucket.bucket_name, or leave it unset to derive "
                        "it from the file-system path)",
                    )
                else:
                    s3_paths.append((index, s3_path.rstrip("/") + "/"))

        for field_name, events in (
            ("import_events", assoc.import_events),
            ("export_events", assoc.export_events),
        ):
            values = [str(e) for e in events]
            if any(v not in S3Event.__members__ for v in values) or len(set(values)) != len(values):
                _lustre(
                    problems,
                    f"{where}.{field_name}",
                    values,
                    "must be distinct values from NEW, CHANGED, DELETED",
                )

        chunk = assoc.imported_file_chunk_size_mib
        if (
            chunk is not None
            and not is_unresolved(chunk)
            and (
                isinstance(chunk, bool)
                or not isinstance(chunk, int)
                or not MIN_CHUNK_SIZE_MIB <= chunk <= MAX_CHUNK_SIZE_MIB
            )
        ):
            _lustre(
                problems,
                f"{where}.imported_file_chunk_size_mib",
                chunk,
                f"must be a whole number of MiB from {MIN_CHUNK_SIZE_MIB} to "
                f"{MAX_CHUNK_SIZE_MIB:,}",
            )

    for index_a, path_a, index_b, path_b in _pairs(paths):
        if path_a == path_b:
            clash = f"duplicates associations[{index_a}]; each directory links to one S3 prefix"
        elif _is_nested(path_a, path_b) or _is_nested(path_b, path_a):
            clash = (
                f"overlaps associations[{index_a}] ({path_a!r}); association directories "
                "cannot be nested ('/' is only allowed as the only association)"
            )
        else:
            continue
        _lustre(problems, f"associations[{index_b}].file_system_path", path_b, clash)
    for index_a, s3_a, index_b, s3_b in _pairs(s3_paths):
        if s3_a == s3_b:
            _lustre(
                problems,
                f"associations[{index_b}].data_repository_path",
                s3_b,
                f"duplicates associations[{index_a}]; each association needs its own prefix",
            )
        elif s3_a.startswith(s3_b) or s3_b.startswith(s3_a):
            problems.append(
                Finding(
                    LUSTRE,
                    Severity.WARNING,
                    "",
                    None,
                    f"associations[{index_a}] and [{index_b}] link nested S3 prefixes "
                    f"({s3_a}, {s3_b}): the same objects appear in two directories and "
                    "exports from both race each other",
                )
            )
    return problems


_DAILY_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")
_WEEKLY_TIME = re.compile(r"^[1-7]:([01]\d|2[0-3]):([0-5]\d)$")


def lustre_sizing_request(
    *,
    deployment_type: LustreDeploymentType,
    storage_capacity_gib: int | None,
    throughput_mb_s_per_tib: int | None,
) -> list[Finding]:
    """A :class:`~fm_constructs.storage.LustreFileSystem` given a sizing request: no explicit
    capacity or throughput next to it, and PERSISTENT_2 (the type the sizing prices)."""
    problems: list[Finding] = []
    if storage_capacity_gib is not None or throughput_mb_s_per_tib is not None:
        _lustre(
            problems,
            "",
            None,
            "sizing: give either sizing or storage_capacity_gib/throughput_mb_s_per_tib, "
            f"not both; got sizing and storage_capacity_gib={storage_capacity_gib!r}, "
            f"throughput_mb_s_per_tib={throughput_mb_s_per_tib!r}",
        )
    if deployment_type is not LustreDeploymentType.PERSISTENT_2:
        _lustre(
            problems,
            "deployment_type",
            deployment_type.value,
            "must be PERSISTENT_2 when sizing is given (sizing prices PERSISTENT_2)",
        )
    return problems


def lustre_file_system(
    *,
    deployment_type: LustreDeploymentType,
    kms_key: str | None,
    automatic_backup_retention_days: int | None,
    associated: bool,
    daily_backup_start_time_utc: str,
    weekly_maintenance_start_time_utc: str,
) -> list[Finding]:
    """A :class:`~fm_constructs.storage.LustreFileSystem`'s encryption key, backups and
    maintenance windows: no customer key and no backups on SCRATCH_2, no backups of a file
    system linked to S3 (``associated``), times in FSx's forms. ``kms_key`` is the key's text
    (None without one); ``automatic_backup_retention_days`` None is the default."""
    problems: list[Finding] = []
    persistent = deployment_type is not LustreDeploymentType.SCRATCH_2
    if not persistent and kms_key is not None:
        _lustre(
            problems,
            "kms_key",
            kms_key,
            "SCRATCH_2 file systems are encrypted with FSx-managed keys; remove kms_key or "
            "use a PERSISTENT deployment type",
        )
    days = automatic_backup_retention_days
    if days is not None and not is_unresolved(days):
        if not is_whole_number(days, 0, MAX_BACKUP_RETENTION_DAYS):
            _lustre(
                problems,
                "automatic_backup_retention_days",
                days,
                f"must be a whole number of days from 0 (no backups) to "
                f"{MAX_BACKUP_RETENTION_DAYS}",
            )
        elif not persistent and days > 0:
            _lustre(
                problems,
                "automatic_backup_retention_days",
                days,
                "SCRATCH_2 file systems have no automatic backups; set 0 or leave it unset",
            )
        elif associated and days > 0:
            _lustre(
                problems,
                "automatic_backup_retention_days",
                days,
                "FSx does not back up file systems linked to S3 with data repository "
                "associations (the S3 bucket is the durable copy); set 0 or leave it unset, "
                "or pass associations=[] for a file system with backups and no S3 link",
            )
    if not is_unresolved(daily_backup_start_time_utc) and not _DAILY_TIME.match(
        daily_backup_start_time_utc
    ):
        _lustre(
            problems,
            "daily_backup_start_time_utc",
            daily_backup_start_time_utc,
            "must be 'HH:MM' in UTC (00:00 to 23:59)",
        )
    if not is_unresolved(weekly_maintenance_start_time_utc) and not _WEEKLY_TIME.match(
        weekly_maintenance_start_time_utc
    ):
        _lustre(
            problems,
            "weekly_maintenance_start_time_utc",
            weekly_maintenance_start_time_utc,
            "must be 'd:HH:MM' in UTC, d from 1 (Monday) to 7 (Sunday), e.g. '7:05:00'",
        )
    return problems


def imported_lustre(
    file_system_id: str,
    dns_name: str,
    mount_name: str,
    security_group_ids: Sequence[str],
    association_paths: Sequence[str] = (),
) -> list[Finding]:
    """The attributes of an imported file system: an FSx id, its DNS and mount names, its
    security groups and absolute association directories."""
    problems: list[Finding] = []
    if not is_unresolved(file_system_id) and not file_system_id.startswith("fs-"):
        _lustre(
            problems, "file_system_id", file_system_id, "must be an FSx id such as 'fs-0123...'"
        )
    for key, value in (("dns_name", dns_name), ("mount_name", mount_name)):
        if not is_unresolved(value) and not value:
            _lustre(problems, key, value, "must not be empty (aws fsx describe-file-systems)")
    if not security_group_ids:
        _lustre(
            problems,
            "security_group_ids",
            list(security_group_ids),
            "must list the file system's security groups (clients are allowed in there)",
        )
    for index, path in enumerate(association_paths):
        if not is_unresolved(path) and not path.startswith("/"):
            _lustre(problems, f"association_paths[{index}]", path, "must be an absolute path")
    return problems


def mount_point(path: str) -> list[Finding]:
    """A Lustre client mounts at an absolute path."""
    if is_unresolved(path) or path.startswith("/"):
        return []
    return [
        Finding(
            LUSTRE, Severity.ERROR, "mount_point", path, "must be an absolute path such as '/fsx'"
        )
    ]


#: S3 lifecycle ``NewerNoncurrentVersions`` upper bound.
MAX_NEWER_NONCURRENT_VERSIONS = 100


def _bucket(problems: list[Finding], key: str, value: object, allowed: str) -> None:
    problems.append(Finding(DATA_BUCKET, Severity.ERROR, key, value, allowed))


def data_bucket(
    noncurrent_version_expiration_days: int, checkpoints_to_keep: int, checkpoint_prefix: str
) -> list[Finding]:
    """A :class:`~fm_constructs.storage.DataBucket`'s lifecycle settings and checkpoint prefix."""
    problems: list[Finding] = []
    if not is_unresolved(noncurrent_version_expiration_days) and not is_whole_number(
        noncurrent_version_expiration_days, 1
    ):
        _bucket(
            problems,
            "noncurrent_version_expiration_days",
            noncurrent_version_expiration_days,
            "must be a whole number of days >= 1 (S3 lifecycle rules need a positive "
            "NoncurrentDays)",
        )
    if not is_unresolved(checkpoints_to_keep) and not is_whole_number(
        checkpoints_to_keep, 1, MAX_NEWER_NONCURRENT_VERSIONS
    ):
        _bucket(
            problems,
            "checkpoints_to_keep",
            checkpoints_to_keep,
            f"must be a whole number from 1 to {MAX_NEWER_NONCURRENT_VERSIONS} (S3 "
            "NewerNoncurrentVersions)",
        )
    if not is_unresolved(checkpoint_prefix) and (
        not checkpoint_prefix or checkpoint_prefix.startswith("/")
    ):
        _bucket(
            problems,
            "checkpoint_prefix",
            checkpoint_prefix,
            "must be a non-empty S3 key prefix without a leading '/', e.g. 'checkpoints/'",
        )
    return problems


def imported_data_bucket(*, bucket_name: str, key_arn: str | None) -> list[Finding]:
    """An imported data bucket's name (not an S3 URL) and KMS key ARN."""
    problems: list[Finding] = []
    if not is_unresolved(bucket_name) and (
        not bucket_name or "/" in bucket_name or bucket_name.startswith("s3:")
    ):
        _bucket(
            problems, "bucket_name", bucket_name, "must be a bucket name (no 's3://' and no '/')"
        )
    if (
        key_arn is not None
        and not is_unresolved(key_arn)
        and not (key_arn.startswith("arn:") and ":key/" in key_arn)
    ):
        _bucket(
            problems, "key_arn", key_arn, "must be a KMS key ARN 'arn:<partition>:kms:...:key/<id>'"
        )
    return problems
