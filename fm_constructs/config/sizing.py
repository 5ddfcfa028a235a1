"""Turn a profile's ``[<workload>.storage]`` sizing keys into the floor-1 FSx sizing request.

The workload stacks and ``fmc plan`` both call this, so the file system a template creates and
the one a plan prints are sized by the same request.
"""

from __future__ import annotations

from typing import Any

from fm_constructs.config.model import StorageConfig, WorkloadConfig
from fm_constructs.planning.fsx_sizing import FsxSizingRequest
from fm_constructs.profile.model import PROFILE_DEPLOYMENT_TYPE as PROFILE_DEPLOYMENT_TYPE


def fsx_sizing_request(storage: StorageConfig, read_clients: int = 0) -> FsxSizingRequest | None:
    """The sizing request ``storage`` describes, or None when it gives explicit numbers.

    ``read_clients``: nodes that read training data from the file system at once (the
    workload's largest size), each at ``storage.read_mb_s_per_node``.

    Keys the profile leaves out take FsxSizingRequest's own defaults. A loaded profile always
    has ``checkpoint_write_seconds`` with a sizing request (the loader requires it).
    """
    if not storage.is_sized:
        return None
    if storage.checkpoint_write_seconds is None:
        raise ValueError("a sizing request needs checkpoint_write_seconds (validate the profile)")
    optional: dict[str, Any] = {
        "bytes_per_parameter": storage.bytes_per_parameter,
        "dataset_size_gib": storage.dataset_size_gib,
        "checkpoints_to_keep": storage.checkpoints_to_keep,
    }
    return FsxSizingRequest(
        target_checkpoint_write_seconds=float(storage.checkpoint_write_seconds),
        checkpoint_size_gib=storage.checkpoint_size_gib,
        model_parameters=(
            storage.model_parameters_billion * 1e9
            if storage.model_parameters_billion is not None
            else None
        ),
        efa_enabled=storage.efa_enabled,
        read_clients=read_clients,
        read_mb_s_per_client=storage.read_mb_s_per_node,
        **{key: value for key, value in optional.items() if value is not None},
    )


def workload_fsx_sizing_request(workload: WorkloadConfig) -> FsxSizingRequest | None:
    """The sizing request of ``workload``'s own file system: its storage keys, read by every
    node of the workload at its largest size (autoscaling maximum included)."""
    nodes = workload.largest_size
    return fsx_sizing_request(workload.storage, nodes)
