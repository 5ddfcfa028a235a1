"""The interface every Lustre client takes (EKS volumes, HyperPod and PCS mounts, workloads):
what a file system offers whether this app created it
(:class:`~fm_constructs.storage.LustreFileSystem`) or imported it
(:meth:`~fm_constructs.storage.LustreFileSystem.from_lustre_file_system_attributes`)."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from aws_cdk import aws_ec2 as ec2


@runtime_checkable
class ILustreFileSystem(Protocol):
    """What clients need from a Lustre file system, created here or imported: its id, DNS and
    mount names, ``connections`` (a :class:`~fm_constructs.storage.LustreConnections`, whose
    default-port helpers open every Lustre port), whether it runs over EFA, its capacity when
    known, and the directories linked to S3 (empty when unknown)."""

    file_system_id: str
    dns_name: str
    mount_name: str
    efa_enabled: bool
    association_paths: tuple[str, ...]

    @property
    def connections(self) -> ec2.Connections: ...

    @property
    def storage_capacity_gib(self) -> int | None: ...

    def allow_clients(self, peer: ec2.IConnectable, description: str | None = None) -> None: ...

    def mount_command(self, mount_point: str = "/fsx") -> str: ...

    def kubernetes_static_volume(self, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        """PersistentVolume + PersistentVolumeClaim for the FSx CSI driver
        (:meth:`~fm_constructs.storage.lustre_client.LustreClientAccess.kubernetes_static_volume`:
        ``name``, ``namespace``, ``storage_class_name``, ``mount_options``)."""
        ...
