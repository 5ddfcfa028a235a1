"""The narrow view of a metrics store that cluster nodes remote-write to.

Slurm nodes (HyperPod, PCS) run a Prometheus agent that sends its samples to a remote-write
endpoint. The cluster needs only that endpoint and the right to write, so it depends on this
interface, which a Prometheus workspace of :mod:`fm_constructs.observability` (created or
imported) satisfies, and never on the observability block itself.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from aws_cdk import aws_iam as iam


@runtime_checkable
class IRemoteWriteTarget(Protocol):
    """A remote-write endpoint and the grant to write to it."""

    @property
    def remote_write_url(self) -> str: ...

    def grant_remote_write(self, grantee: iam.IGrantable) -> iam.Grant: ...
