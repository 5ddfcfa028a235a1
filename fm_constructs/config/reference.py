"""Render the configuration reference (docs/configuration.md) from the profile model itself,
so the documented keys, defaults and meanings cannot drift from what the loader accepts."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

from fm_constructs.config.model import (
    AutoscalingConfig,
    CapacityConfig,
    InferenceConfig,
    ModelConfig,
    PcsAmiConfig,
    PlatformConfig,
    PostTrainingConfig,
    PostTrainingStorageConfig,
    ReservationConfig,
    RolloutConfig,
    StorageConfig,
    TrainingGoalConfig,
    TrainingWorkloadConfig,
    WorkloadConfig,
)
from fm_constructs.domain.users import ClusterUser

#: (heading, model, introduction, the model whose keys are documented in another section).
_TABLES: tuple[tuple[str, type[Any], str, type[Any] | None], ...] = (
    ("[platform]", PlatformConfig, "Shared by every workload.", None),
    (
        "[pretraining], [post_training], [inference]",
        WorkloadConfig,
        "The keys every workload takes; a workload with `enabled = false` builds nothing. "
        "Each workload adds keys of its own (below); a key of another workload is an error.",
        None,
    ),
    (
        "[pretraining], [post_training]: training keys",
        TrainingWorkloadConfig,
        "The keys of both training workloads.",
        WorkloadConfig,
    ),
    (
        "[post_training]: its own keys",
        PostTrainingConfig,
        "SFT and RL post-training.",
        TrainingWorkloadConfig,
    ),
    (
        "[inference]: its own keys",
        InferenceConfig,
        "Model serving on EKS.",
        WorkloadConfig,
    ),
    ("[<workload>.capacity]", CapacityConfig, "Where the workload's instances come from.", None),
    (
        "[[<workload>.capacity.node_groups]]",
        ReservationConfig,
        "`odcr` bought as several reservations: one table per managed node group of the pool, "
        "in order (the first for `GpuNodes`, the second for `GpuNodes2`, ...).",
        None,
    ),
    (
        "[inference.model]",
        ModelConfig,
        "The model server (vLLM): weights from the data bucket onto the nodes' NVMe, one pod per "
        "replica, or a LeaderWorkerSet group of nodes when a replica spans nodes.",
        None,
    ),
    (
        "[inference.autoscaling]",
        AutoscalingConfig,
        "KEDA scales the replicas on a serving metric from Managed Prometheus.",
        None,
    ),
    (
        "[pretraining.training_goal], [post_training.training_goal]",
        TrainingGoalConfig,
        "What to train, for the compute estimate of `fmc plan`.",
        None,
    ),
    (
        "[pretraining.pcs_ami], [post_training.pcs_ami]",
        PcsAmiConfig,
        "`pcs`: the pinned AMI of the AWS PCS nodes, written by `fmc pcs-ami --config <profile> "
        "--write` (the newest image of the pinned name pattern, found read-only).",
        None,
    ),
    (
        "[post_training.rollout]",
        RolloutConfig,
        "RL post-training: a generation group beside the trainer group.",
        None,
    ),
    (
        "[[pretraining.users]], [[post_training.users]]",
        ClusterUser,
        "`hyperpod-slurm`: one table per user of the cluster, created alike on every node with "
        "its home and an SSH key pair on the workload's file system.",
        None,
    ),
    (
        "[<workload>.storage]",
        StorageConfig,
        "FSx for Lustre linked to the data bucket: explicit capacity and throughput, or a "
        "sizing request from which both are computed.",
        None,
    ),
    (
        "[post_training.storage]: its own keys",
        PostTrainingStorageConfig,
        "The file system of post-training.",
        StorageConfig,
    ),
)


def _default(field: dataclasses.Field[Any]) -> str:
    if field.default is not dataclasses.MISSING:
        value = field.default
        if isinstance(value, Enum):
            return f"`{value.value!r}`"
        if value is None or value == ():
            return "none"
        if isinstance(value, bool):
            return f"`{str(value).lower()}`"
        return f"`{value!r}`"
    if field.default_factory is not dataclasses.MISSING:
        return "table"
    return "required"


def _escape_html(text: str) -> str:
    """``<`` and ``>`` outside code spans as entities, so placeholders such as ``<name>``
    show instead of being read as HTML tags (code spans already show them literally)."""
    parts = text.split("`")
    for index in range(0, len(parts), 2):  # even parts are outside code spans
        parts[index] = parts[index].replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return "`".join(parts)


def render_reference() -> str:
    """Markdown reference of every profile key with its default and meaning."""
    lines = [
        "# Configuration reference",
        "",
        "<!-- Generated from fm_constructs/profile/model.py by `make docs-config`. -->",
        "",
        "A profile is a TOML file, named on every CDK command with `-c config=<file>` (there "
        "is no default). The shipped profiles are in `config/`; keep your own in `profiles/` "
        "(`fmc init profiles/<name>.toml`), which the tests do not sweep. Unknown keys are "
        "errors. Defaults marked *required* must be given (an enabled "
        "workload requires `instance_type`).",
        "",
    ]
    for title, cls, intro, documented in _TABLES:
        elsewhere = {f.name for f in dataclasses.fields(documented)} if documented else set()
        lines += [
            f"## {_escape_html(title)}",
            "",
            _escape_html(intro),
            "",
            "| key | default | meaning |",
            "|---|---|---|",
        ]
        for field in dataclasses.fields(cls):
            doc = field.metadata.get("doc", "")
            if not doc or field.name in elsewhere:
                continue
            lines.append(f"| `{field.name}` | {_default(field)} | {_escape_html(doc)} |")
        lines.append("")
    return "\n".join(lines)
