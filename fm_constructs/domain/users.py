"""A user of a Slurm cluster: the same account (name, uid, primary gid, supplementary groups)
on every node, with a home and an SSH key pair on the shared file system.

Plain data (floor 1): the profile loader reads ``[[<workload>.users]]`` into it, the rules in
:mod:`fm_constructs.rules.users` check it, and the HyperPod lifecycle scripts create it from
``provisioning_parameters.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: Where every user's home is, under the file system's mount point (``/fsx/home/<name>``).
HOME_DIRECTORY = "home"


@dataclass(frozen=True, kw_only=True)
class ClusterUser:
    """One ``[[<workload>.users]]`` entry."""

    name: str = field(
        metadata={"doc": "Login name: lower-case letters, digits, '_' and '-' (max 32)."}
    )
    uid: int = field(metadata={"doc": "User id, the same on every node (2000 to 59999)."})
    gid: int | None = field(
        default=None,
        metadata={
            "doc": "Id of the user's own primary group (named after the user); default: the uid."
        },
    )
    groups: tuple[str, ...] = field(
        default=(),
        metadata={
            "doc": "Supplementary groups (such as 'docker'), created on a node that lacks one."
        },
    )

    @property
    def primary_gid(self) -> int:
        """The primary group's id: ``gid``, else the uid."""
        return self.uid if self.gid is None else self.gid

    def home(self, mount_point: str) -> str:
        """The user's home on the shared file system mounted at ``mount_point``."""
        return f"{mount_point.rstrip('/')}/{HOME_DIRECTORY}/{self.name}"

    def parameters(self) -> dict[str, Any]:
        """The entry of ``provisioning_parameters.json``'s ``users`` list."""
        return {
            "name": self.name,
            "uid": self.uid,
            "gid": self.primary_gid,
            "groups": list(self.groups),
        }
