"""An FSx for Lustre file system created outside this app, behind the interface every client
(EKS volumes, HyperPod mounts, node groups) uses: see
:meth:`fm_constructs.storage.LustreFileSystem.from_lustre_file_system_attributes`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NotRequired, TypedDict, Unpack

import jsii
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import storage as storage_rules
from fm_constructs.storage.lustre_client import LustreClientAccess
from fm_constructs.storage.lustre_connections import LustreConnections
from fm_constructs.storage.lustre_interface import ILustreFileSystem


class LustreFileSystemAttributes(TypedDict):
    """What identifies a file system created outside this app (``aws fsx
    describe-file-systems``): its id, DNS name, mount name and security groups; optionally its
    capacity (the claim size; 1200 GiB when unknown), whether it runs over EFA, and the
    directories linked to S3 (``association_paths``, e.g. ``("/datasets", "/checkpoints")``:
    shared directories on HyperPod nodes)."""

    file_system_id: str
    dns_name: str
    mount_name: str
    security_group_ids: Sequence[str]
    storage_capacity_gib: NotRequired[int | None]
    efa_enabled: NotRequired[bool]
    association_paths: NotRequired[Sequence[str]]


@jsii.implements(ec2.IConnectable)
class ImportedLustreFileSystem(LustreClientAccess, Construct):
    """A file system known by its :class:`LustreFileSystemAttributes` (no resource is created;
    rules to reach it are added to its security groups unless they are immutable). The client
    methods are :class:`LustreClientAccess`'s, as for a file system created here."""

    def __init__(
        self, scope: Construct, construct_id: str, **attributes: Unpack[LustreFileSystemAttributes]
    ) -> None:
        super().__init__(scope, construct_id)
        file_system_id = attributes["file_system_id"]
        dns_name = attributes["dns_name"]
        mount_name = attributes["mount_name"]
        security_group_ids = attributes["security_group_ids"]
        problems = Problems(
            context=f"LustreFileSystem.from_lustre_file_system_attributes {self.node.path}",
            code=codes.LUSTRE,
        )
        paths = tuple(attributes.get("association_paths", ()))
        problems.adopt(
            storage_rules.imported_lustre(
                file_system_id, dns_name, mount_name, security_group_ids, paths
            )
        )
        problems.raise_if_any()
        self.file_system_id = file_system_id
        self.dns_name = dns_name
        self.mount_name = mount_name
        self.storage_capacity_gib = attributes.get("storage_capacity_gib")
        self.association_paths = paths
        groups = [
            ec2.SecurityGroup.from_security_group_id(self, f"SecurityGroup{index}", group_id)
            for index, group_id in enumerate(security_group_ids)
        ]
        self.efa_enabled = attributes.get("efa_enabled", False)
        self.connections = LustreConnections(security_groups=groups, efa_enabled=self.efa_enabled)


__all__ = ["ILustreFileSystem", "ImportedLustreFileSystem", "LustreFileSystemAttributes"]
