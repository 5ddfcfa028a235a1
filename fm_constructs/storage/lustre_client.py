"""What a Lustre client needs from a file system, whether this app created it or imported it:
the security-group rules that let clients in, the ``mount -t lustre`` command and the
Kubernetes volume for the FSx CSI driver. One implementation for
:class:`~fm_constructs.storage.LustreFileSystem` and the imported file system."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Tokenization
from aws_cdk import aws_ec2 as ec2

from fm_constructs.errors import Problems
from fm_constructs.kubernetes.lustre_volume import DEFAULT_MOUNT_OPTIONS, static_volume_manifests
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import storage as storage_rules

#: The smallest FSx for Lustre file system (GiB): the claim size of an imported file system
#: whose capacity was not given (the CSI driver does not enforce it).
MIN_STORAGE_CAPACITY_GIB = 1200


def lustre_mount_command(dns_name: str, mount_name: str, mount_point: str = "/fsx") -> str:
    """``mount -t lustre`` for a file system (run as root; ``mkdir -p`` the mount point first).
    Values may be tokens, so the command can go into a CfnOutput or EC2 user data."""
    problems = Problems(context="LustreFileSystem.mount_command", code=codes.LUSTRE)
    problems.adopt(storage_rules.mount_point(mount_point))
    problems.raise_if_any()
    return f"mount -t lustre -o relatime,flock {dns_name}@tcp:/{mount_name} {mount_point}"


class LustreClientAccess:
    """Client-side methods over the attributes both file system classes set:
    ``file_system_id``, ``dns_name``, ``mount_name``, ``storage_capacity_gib`` (None when
    unknown) and ``connections`` (a :class:`~fm_constructs.storage.LustreConnections`)."""

    file_system_id: str
    dns_name: str
    mount_name: str
    storage_capacity_gib: int | None
    connections: Any

    def allow_clients(self, peer: ec2.IConnectable, description: str | None = None) -> None:
        """Open everything Lustre clients in ``peer`` need: TCP 988 and 1018-1023, and all
        traffic both ways on an EFA-enabled file system (same as allow_default_port_from)."""
        self.connections.allow_default_port_from(peer, description)

    def mount_command(self, mount_point: str = "/fsx") -> str:
        """``mount -t lustre`` for this file system (run as root; ``mkdir -p`` the mount point
        first). A string with tokens, usable in a CfnOutput or EC2 user data."""
        return lustre_mount_command(self.dns_name, self.mount_name, mount_point)

    def kubernetes_static_volume(
        self,
        name: str = "fsx-lustre",
        namespace: str = "default",
        storage_class_name: str = "",
        mount_options: Sequence[str] = DEFAULT_MOUNT_OPTIONS,
    ) -> list[dict[str, Any]]:
        """PersistentVolume + PersistentVolumeClaim for the FSx CSI driver (static binding),
        for an EKS cluster's ``add_manifest``. Needs the ``aws-fsx-csi-driver`` add-on."""
        capacity = self.storage_capacity_gib
        return static_volume_manifests(
            name=name,
            namespace=namespace,
            file_system_id=self.file_system_id,
            dns_name=self.dns_name,
            mount_name=self.mount_name,
            storage_capacity_gib=Tokenization.stringify_number(
                MIN_STORAGE_CAPACITY_GIB if capacity is None else capacity
            ),
            storage_class_name=storage_class_name,
            mount_options=mount_options,
        )
