"""Data repository associations as values: links between a Lustre directory and an S3 prefix.

A typed description (:class:`DataRepositoryAssociation`), FSx's limits on a set of them, the
defaults a training workload gets and the paths and construct ids derived from a file-system
path (never from a list index, so reordering the list replaces nothing). The rules FSx enforces
on a set are :func:`fm_constructs.rules.storage.data_repository_associations`; the resources are
built by :mod:`fm_constructs.storage.associations`. Floor 1: no aws_cdk import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

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
