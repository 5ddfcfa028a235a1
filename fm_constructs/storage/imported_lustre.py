"""An FSx for Lustre file system created outside this app, behind the interface every client
(EKS volumes, HyperPod mounts, node groups) uses: see
:meth:`fm_constructs.storage.LustreFileSystem.from_lustre_file_system_attributes`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import jsii
from aws_cdk import Token
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.kubernetes.lustre_volume import DEFAULT_MOUNT_OPTIONS
from fm_constructs.rules import constructs as codes
from fm_constructs.storage.lustre_client import LustreClientAccess
from fm_constructs.storage.lustre_connections import LustreConnections


@runtime_checkable
class ILustreFileSystem(Protocol):
    """What clients need from a Lustre file system, created here or imported."""

    @property
    def file_system_id(self) -> str: ...

    @property
    def dns_name(self) -> str: ...

    @property
    def mount_name(self) -> str: ...

    @property
    def connections(self) -> ec2.Connections: ...

    def mount_command(self, mount_point: str = "/fsx") -> str: ...

    def kubernetes_static_volume(
        self,
        name: str = "fsx-lustre",
        namespace: str = "default",
        storage_class_name: str = "",
        mount_options: Sequence[str] = DEFAULT_MOUNT_OPTIONS,
    ) -> list[dict[str, Any]]: ...


@jsii.implements(ec2.IConnectable)
class ImportedLustreFileSystem(LustreClientAccess, Construct):
    """A file system known by its id, DNS name, mount name and security groups (no resource is
    created; rules to reach it are added to the given groups unless they are immutable). The
    client methods are :class:`LustreClientAccess`'s, as for a file system created here."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        file_system_id: str,
        dns_name: str,
        mount_name: str,
        security_group_ids: Sequence[str],
        storage_capacity_gib: int | None = None,
        efa_enabled: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems(
            context=f"LustreFileSystem.from_lustre_file_system_attributes {self.node.path}",
            code=codes.LUSTRE,
        )
        if not Token.is_unresolved(file_system_id) and not file_system_id.startswith("fs-"):
            problems.add("file_system_id", file_system_id, "must be an FSx id such as 'fs-0123...'")
        for key, value in (("dns_name", dns_name), ("mount_name", mount_name)):
            if not Token.is_unresolved(value) and not value:
                problems.add(key, value, "must not be empty (aws fsx describe-file-systems)")
        if not security_group_ids:
            problems.add(
                "security_group_ids",
                list(security_group_ids),
                "must list the file system's security groups (clients are allowed in there)",
            )
        problems.raise_if_any()
        self.file_system_id = file_system_id
        self.dns_name = dns_name
        self.mount_name = mount_name
        self.storage_capacity_gib = storage_capacity_gib
        groups = [
            ec2.SecurityGroup.from_security_group_id(self, f"SecurityGroup{index}", group_id)
            for index, group_id in enumerate(security_group_ids)
        ]
        self.efa_enabled = efa_enabled
        self.connections = LustreConnections(security_groups=groups, efa_enabled=efa_enabled)
