"""Data repository associations: the ``AWS::FSx::DataRepositoryAssociation`` resources of a
file system and their warnings.

The values (:class:`DataRepositoryAssociation`, the defaults, the paths and construct ids) are
:mod:`fm_constructs.planning.data_repositories`, re-exported here; the rules FSx enforces on a
set of them are :func:`fm_constructs.rules.storage.data_repository_associations` (checked before
synthesis, all problems at once).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aws_cdk import Annotations
from aws_cdk import aws_fsx as fsx
from constructs import Construct

from fm_constructs.planning.data_repositories import (
    ALL_EVENTS,
    DataRepositoryAssociation,
    S3Event,
    association_construct_id,
    default_associations,
    default_data_repository_path,
    normalize_file_system_path,
    workload_associations,
)

#: The values keep their names here (as before they moved to floor 1).
__all__ = [
    "ALL_EVENTS",
    "DataRepositoryAssociation",
    "S3Event",
    "create_associations",
    "default_associations",
    "normalize_file_system_path",
    "warn",
    "workload_associations",
]


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
