"""Kubernetes manifests for mounting an existing FSx for Lustre file system through the FSx CSI
driver (static provisioning): a PersistentVolume pinned to the file system and a claim bound to
it. The values may be CDK tokens; EKS ``add_manifest`` resolves them at deploy time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

FSX_CSI_DRIVER = "fsx.csi.aws.com"
#: Mount options the CSI driver passes to ``mount -t lustre``: ``flock`` gives coherent
#: cluster-wide file locks (checkpoint writers and data loaders rely on them).
DEFAULT_MOUNT_OPTIONS: tuple[str, ...] = ("flock",)


def static_volume_manifests(
    *,
    name: str,
    namespace: str,
    file_system_id: str,
    dns_name: str,
    mount_name: str,
    storage_capacity_gib: int | str,
    storage_class_name: str = "",
    mount_options: Sequence[str] = DEFAULT_MOUNT_OPTIONS,
) -> list[dict[str, Any]]:
    """PersistentVolume ``name`` and PersistentVolumeClaim ``namespace/name`` bound to each other.

    The volume is ReadWriteMany (every pod of a job mounts it), reclaim policy Retain (deleting
    the claim never touches the file system), and pre-bound with ``claimRef``/``volumeName`` so
    no other claim can take it. An empty ``storage_class_name`` keeps the default storage class
    from provisioning a new volume for the claim.
    """
    storage = f"{storage_capacity_gib}Gi"
    volume: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": storage},
            "volumeMode": "Filesystem",
            "accessModes": ["ReadWriteMany"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": storage_class_name,
            "mountOptions": list(mount_options),
            "claimRef": {"namespace": namespace, "name": name},
            "csi": {
                "driver": FSX_CSI_DRIVER,
                "volumeHandle": file_system_id,
                "volumeAttributes": {"dnsname": dns_name, "mountname": mount_name},
            },
        },
    }
    claim: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteMany"],
            "storageClassName": storage_class_name,
            "volumeName": name,
            "resources": {"requests": {"storage": storage}},
        },
    }
    return [volume, claim]


def rename_volume(manifests: list[dict[str, Any]], volume_name: str) -> list[dict[str, Any]]:
    """The PersistentVolume of a static PV/PVC pair renamed to ``volume_name`` (and the claim
    bound to the new name)."""
    for manifest in manifests:
        if manifest["kind"] == "PersistentVolume":
            manifest["metadata"]["name"] = volume_name
        elif manifest["kind"] == "PersistentVolumeClaim":
            manifest["spec"]["volumeName"] = volume_name
    return manifests
