"""Storage building blocks: the S3 data bucket (durable tier) and FSx for Lustre linked to it
through data repository associations (fast shared tier)."""

from fm_constructs.planning.fsx_sizing import (
    FsxSizingRequest,
    FsxSizingResult,
    LustreDeploymentType,
)
from fm_constructs.storage.associations import (
    ALL_EVENTS,
    DataRepositoryAssociation,
    S3Event,
    default_associations,
    workload_associations,
)
from fm_constructs.storage.data_bucket import DataBucket, IDataBucket
from fm_constructs.storage.data_perimeter import DataPerimeter
from fm_constructs.storage.imported_lustre import (
    ImportedLustreFileSystem,
    LustreFileSystemAttributes,
)
from fm_constructs.storage.lustre import LustreFileSystem, LustreLogLevel
from fm_constructs.storage.lustre_connections import LustreConnections
from fm_constructs.storage.lustre_interface import ILustreFileSystem

__all__ = [
    "ALL_EVENTS",
    "DataBucket",
    "DataPerimeter",
    "DataRepositoryAssociation",
    "FsxSizingRequest",
    "FsxSizingResult",
    "IDataBucket",
    "ILustreFileSystem",
    "ImportedLustreFileSystem",
    "LustreConnections",
    "LustreDeploymentType",
    "LustreFileSystem",
    "LustreFileSystemAttributes",
    "LustreLogLevel",
    "S3Event",
    "default_associations",
    "workload_associations",
]
