"""Data repository associations: links between a Lustre directory and an S3 prefix.

A typed description (:class:`DataRepositoryAssociation`), the rules FSx enforces on a set of
them (checked before synthesis, all problems at once), and the construct ids derived from their
file-system paths (never from a list index, so reordering the list replaces nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from aws_cdk import Annotations, Token
from aws_cdk import aws_fsx as fsx
from constructs import Construct

from fm_constructs.errors import Problems

#: FSx allows at most this many data repository associations per file system.
MAX_ASSOCIATIONS = 8
#: ImportedFileChunkSize bounds, MiB (CreateDataRepositoryAssociation API reference).
MIN_CHUNK_SIZE_MIB = 1
MAX_CHUNK_SIZE_MIB = 512_000


class S3Event(StrEnum):
    """Object events that FSx imports from S3 or exports to S3 automatically."""

    NEW = "NEW"
    CHANGED = "CHANGED"
    DELETED = "DELETED"


ALL_EVENTS: tuple[S3Event, ...] = (S3Event.NEW, S3Event.CHANGED, S3Event.DELETED)


@dataclass(frozen=True, kw_only=True)
class DataRepositoryAssociation:
    """One file-system directory linked to one S3 prefix of the data bucket.

    Attributes:
        file_system_path: absolute directory on Lustre, e.g. ``/datasets``.
        data_repository_path: ``s3://<data bucket>/<prefix>/``; None derives it from the path
            (``/datasets`` -> ``s3://<bucket>/datasets/``).
        import_events: S3 events imported automatically (empty: no auto-import).
        export_events: file-system events exported automatically (empty: no auto-export).
        batch_import_metadata_on_create: list existing S3 objects as files when created.
        imported_file_chunk_size_mib: striping unit for imported files (FSx default 1024).
    """

    file_system_path: str
    data_repository_path: str | None = None
    import_events: Sequence[S3Event] = ALL_EVENTS
    export_events: Sequence[S3Event] = ()
    batch_import_metadata_on_create: bool = True
    imported_file_chunk_size_mib: int | None = None


#: Checkpoint events exported by default: new and changed files. A file deleted on Lustre
#: (checkpoint rotation, ``rm -rf`` by mistake) stays in S3, the durable copy.
CHECKPOINT_EXPORT_EVENTS: tuple[S3Event, ...] = (S3Event.NEW, S3Event.CHANGED)


def default_associations(
    *, export_checkpoint_deletes: bool = False
) -> tuple[DataRepositoryAssociation, ...]:
    """What a training user expects: datasets flow in from S3, checkpoints both ways.

    Deletes on ``/checkpoints`` reach S3 only with ``export_checkpoint_deletes=True``: without
    it, freeing Lustre space never removes the durable copy (release file data with
    ``lfs hsm_release`` instead; docs/operations/checkpoints.md).
    """
    exports = ALL_EVENTS if export_checkpoint_deletes else CHECKPOINT_EXPORT_EVENTS
    return (
        DataRepositoryAssociation(file_system_path="/datasets", import_events=ALL_EVENTS),
        DataRepositoryAssociation(
            file_system_path="/checkpoints", import_events=ALL_EVENTS, export_events=exports
        ),
    )


def workload_associations(
    directories: Sequence[tuple[str, str]],
    outputs: Sequence[str],
    *,
    bucket_name: str,
    export_checkpoint_deletes: bool = False,
) -> tuple[DataRepositoryAssociation, ...]:
    """One association per directory of a workload, exporting only its own outputs.

    ``directories``: (file-system path, data-bucket prefix) pairs
    (:data:`~fm_constructs.domain.workload_data.FSX_DIRECTORIES`); ``outputs``: the prefixes the
    workload writes (:data:`~fm_constructs.domain.workload_data.DATA_OUTPUTS`). Every directory
    imports its prefix; only an output is exported (new and changed files, deletes too with
    ``export_checkpoint_deletes``), so a file written on Lustre under an input directory never
    reaches S3: FSx's own role cannot be used to write another workload's checkpoints or the
    served models.
    """
    exports = ALL_EVENTS if export_checkpoint_deletes else CHECKPOINT_EXPORT_EVENTS
    return tuple(
        DataRepositoryAssociation(
            file_system_path=path,
            data_repository_path=f"s3://{bucket_name}/{prefix}",
            import_events=ALL_EVENTS,
            export_events=exports if prefix in outputs else (),
        )
        for path, prefix in directories
    )


def normalize_file_system_path(path: str) -> str:
    """``/a/b/`` -> ``/a/b``; ``/`` stays ``/``."""
    stripped = path.rstrip("/")
    return stripped or "/"


def association_construct_id(file_system_path: str) -> str:
    """Construct id of an association, from its normalized path (``/a/b`` -> ``a::b``)."""
    normalized = normalize_file_system_path(file_system_path)
    return "Root" if normalized == "/" else normalized.strip("/").replace("/", "::")


def default_data_repository_path(bucket_name: str, file_system_path: str) -> str:
    """``s3://<bucket>/<path without leading slash>/`` (the bucket root for ``/``)."""
    normalized = normalize_file_system_path(file_system_path)
    prefix = "" if normalized == "/" else normalized.strip("/") + "/"
    return f"s3://{bucket_name}/{prefix}"


def _is_nested(parent: str, child: str) -> bool:
    return parent == "/" or child.startswith(parent + "/")


def check_associations(
    problems: Problems,
    associations: Sequence[DataRepositoryAssociation],
    *,
    bucket_name: str,
) -> list[str]:
    """Add every rule FSx would reject to ``problems``; return warnings (risky but legal).

    Rules: at most 8; file-system paths absolute, unique, not nested in one another (``/`` only
    as the sole association); S3 paths ``s3://`` inside the data bucket and unique; events a
    subset of NEW/CHANGED/DELETED without repeats; chunk size 1..512000 MiB. Values that are
    CDK tokens are skipped.
    """
    warnings: list[str] = []
    if len(associations) > MAX_ASSOCIATIONS:
        problems.add(
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
        if Token.is_unresolved(path):
            problems.add(
                f"{where}.file_system_path",
                path,
                "must be a literal path (it names the association's construct id), not a token",
            )
        elif not path.startswith("/") or "//" in path or len(path) > 4096:
            problems.add(
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
                problems.add(
                    f"{where}.file_system_path",
                    path,
                    f"maps to the same construct id '{construct_id}' as {ids[construct_id]!r}; "
                    "rename one directory",
                )
            ids.setdefault(construct_id, normalized)

        s3_path = assoc.data_repository_path
        if s3_path is None:
            s3_path = default_data_repository_path(bucket_name, path)
        if not Token.is_unresolved(s3_path) or s3_path.startswith("s3://"):
            if not s3_path.startswith("s3://"):
                problems.add(
                    f"{where}.data_repository_path",
                    s3_path,
                    "must be an S3 URL 's3://<bucket>/<prefix>/'",
                )
            else:
                repo_bucket = s3_path[len("s3://") :].split("/", 1)[0]
                if repo_bucket != bucket_name:
                    problems.add(
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
                problems.add(
                    f"{where}.{field_name}",
                    values,
                    "must be distinct values from NEW, CHANGED, DELETED",
                )

        chunk = assoc.imported_file_chunk_size_mib
        if (
            chunk is not None
            and not Token.is_unresolved(chunk)
            and (
                isinstance(chunk, bool)
                or not isinstance(chunk, int)
                or not MIN_CHUNK_SIZE_MIB <= chunk <= MAX_CHUNK_SIZE_MIB
            )
        ):
            problems.add(
                f"{where}.imported_file_chunk_size_mib",
                chunk,
                f"must be a whole number of MiB from {MIN_CHUNK_SIZE_MIB} to "
                f"{MAX_CHUNK_SIZE_MIB:,}",
            )

    for i, (index_a, path_a) in enumerate(paths):
        for index_b, path_b in paths[i + 1 :]:
            if path_a == path_b:
                problems.add(
                    f"associations[{index_b}].file_system_path",
                    path_b,
                    f"duplicates associations[{index_a}]; each directory links to one S3 prefix",
                )
            elif _is_nested(path_a, path_b) or _is_nested(path_b, path_a):
                problems.add(
                    f"associations[{index_b}].file_system_path",
                    path_b,
                    f"overlaps associations[{index_a}] ({path_a!r}); association directories "
                    "cannot be nested ('/' is only allowed as the only association)",
                )
    for i, (index_a, s3_a) in enumerate(s3_paths):
        for index_b, s3_b in s3_paths[i + 1 :]:
            if s3_a == s3_b:
                problems.add(
                    f"associations[{index_b}].data_repository_path",
                    s3_b,
                    f"duplicates associations[{index_a}]; each association needs its own prefix",
                )
            elif s3_a.startswith(s3_b) or s3_b.startswith(s3_a):
                warnings.append(
                    f"associations[{index_a}] and [{index_b}] link nested S3 prefixes "
                    f"({s3_a}, {s3_b}): the same objects appear in two directories and "
                    "exports from both race each other"
                )
    return warnings


def create_associations(
    scope: Construct,
    associations: Sequence[DataRepositoryAssociation],
    *,
    file_system_id: str,
    bucket_name: str,
) -> Mapping[str, fsx.CfnDataRepositoryAssociation]:
    """One ``AWS::FSx::DataRepositoryAssociation`` per association, keyed by normalized path.

    Each waits for the one before it: FSx processes association changes of one file system one
    at a time, and parallel creates fail intermittently (hashicorp/terraform-provider-aws#24678,
    aws/aws-parallelcluster#6649).
    """
    created: dict[str, fsx.CfnDataRepositoryAssociation] = {}
    previous: fsx.CfnDataRepositoryAssociation | None = None
    for assoc in associations:
        normalized = normalize_file_system_path(assoc.file_system_path)
        s3_config = fsx.CfnDataRepositoryAssociation.S3Property(
            auto_import_policy=(
                fsx.CfnDataRepositoryAssociation.AutoImportPolicyProperty(
                    events=[str(e) for e in assoc.import_events]
                )
                if assoc.import_events
                else None
            ),
            auto_export_policy=(
                fsx.CfnDataRepositoryAssociation.AutoExportPolicyProperty(
                    events=[str(e) for e in assoc.export_events]
                )
                if assoc.export_events
                else None
            ),
        )
        created[normalized] = fsx.CfnDataRepositoryAssociation(
            scope,
            association_construct_id(normalized),
            file_system_id=file_system_id,
            file_system_path=normalized,
            data_repository_path=assoc.data_repository_path
            or default_data_repository_path(bucket_name, normalized),
            batch_import_meta_data_on_create=assoc.batch_import_metadata_on_create,
            imported_file_chunk_size=assoc.imported_file_chunk_size_mib,
            s3=s3_config if (assoc.import_events or assoc.export_events) else None,
        )
        if previous is not None:
            created[normalized].node.add_dependency(previous)
        previous = created[normalized]
    return created


def warn(scope: Construct, warnings: Sequence[str]) -> None:
    """Attach association warnings to ``scope``."""
    for message in warnings:
        Annotations.of(scope).add_warning_v2("fm:fsx-nested-s3-prefixes", message)
