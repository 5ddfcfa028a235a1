"""Rules that span several keys of a profile (the loader checks each key on its own first)."""

from __future__ import annotations

import re

from fm_constructs.catalog import require_efa
from fm_constructs.config.model import (
    CapacityKind,
    Orchestrator,
    Profile,
    StorageConfig,
    WorkloadConfig,
)
from fm_constructs.config.subnet_demand import shortfall_message, subnet_demand
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning.capacity_block import check_capacity_block_times
from fm_constructs.planning.capacity_ids import (
    check_placement_group_arn,
    check_reservation_id,
    check_resource_group_arn,
    check_training_plan_arn,
)
from fm_constructs.planning.fsx_sizing import LustreDeploymentType, check_lustre_settings
from fm_constructs.planning.kubernetes_versions import hyperpod_eks_problems

HYPERPOD = (Orchestrator.HYPERPOD_EKS, Orchestrator.HYPERPOD_SLURM)


def check_profile(profile: Profile) -> list[str]:
    """Return one message per cross-key problem in ``profile`` (empty when it is consistent)."""
    problems: list[str] = []
    problems += _check_platform(profile)
    for workload in profile.enabled_workloads:
        problems += _check_workload(workload)
        problems += _check_storage(workload.name, workload.storage)
        problems += _check_post_training_extras(profile, workload)
        problems += _check_training_goal(workload)
        problems += _check_inference_keys(workload)
    problems += _check_hyperpod_kubernetes_version(profile)
    return problems


def _check_hyperpod_kubernetes_version(profile: Profile) -> list[str]:
    """HyperPod attaches to EKS clusters of its own, narrower list of Kubernetes versions."""
    users = [
        w.name for w in profile.enabled_workloads if w.orchestrator is Orchestrator.HYPERPOD_EKS
    ]
    if not users:
        return []
    return hyperpod_eks_problems(
        profile.platform.kubernetes_version, key="platform.kubernetes_version"
    )


def _check_inference_keys(w: WorkloadConfig) -> list[str]:
    out: list[str] = []
    model = w.model
    if w.name != "inference":
        for key, used in (
            ("model", model != type(model)()),
            ("autoscaling", w.autoscaling != type(w.autoscaling)()),
            ("load_balancer", w.load_balancer.value != "internal"),
            ("max_instance_count", w.max_instance_count is not None),
        ):
            if used:
                out.append(f"{w.name}.{key}: only inference takes this key; remove it")
        return out
    if w.max_instance_count is not None and w.max_instance_count < w.instance_count:
        out.append(
            f"inference.max_instance_count: must be >= inference.instance_count "
            f"({w.instance_count}), got {w.max_instance_count}"
        )
    if not model.enabled:
        if model != type(model)():
            out.append(
                "inference.model.model_s3_prefix: the model table needs the weights' prefix in "
                "the data bucket (e.g. 'models/llama-3-70b/'), got None"
            )
        return out
    if model.served_model_name is None:
        out.append("inference.model.served_model_name: is required with a model, got None")
    if model.max_replicas is not None and model.max_replicas < model.replicas:
        out.append(
            f"inference.model.max_replicas: must be >= inference.model.replicas "
            f"({model.replicas}), got {model.max_replicas}"
        )
    return out


def _check_training_goal(w: WorkloadConfig) -> list[str]:
    goal = w.training_goal
    given = (goal.model_parameters_billion, goal.training_tokens_billion)
    prefix = f"{w.name}.training_goal"
    if w.name == "inference" and any(v is not None for v in given):
        return [f"{prefix}: inference has no training goal; remove the table, got {given!r}"]
    if (given[0] is None) != (given[1] is None):
        return [
            f"{prefix}: give model_parameters_billion and training_tokens_billion together, "
            f"got {given[0]!r} and {given[1]!r}"
        ]
    return []


def _check_post_training_extras(profile: Profile, w: WorkloadConfig) -> list[str]:
    """Rollout groups and file-system reuse belong to post-training, and reuse needs a
    pre-training file system to reuse."""
    out: list[str] = []
    if w.rollout.enabled:
        if w.name != "post_training":
            out.append(
                f"{w.name}.rollout.enabled: only post_training has a rollout group, got True"
            )
        elif w.rollout.instance_type:
            try:
                require_efa(w.rollout.instance_type, field=f"{w.name}.rollout.instance_type")
            except FmValidationError as error:
                out.extend(error.problems)
    if w.storage.reuse_pretraining:
        if w.name != "post_training":
            out.append(
                f"{w.name}.storage.reuse_pretraining: only post_training can reuse the "
                "pre-training file system, got True"
            )
        elif not (profile.pretraining.enabled and profile.pretraining.storage.enabled):
            out.append(
                "post_training.storage.reuse_pretraining: needs an enabled pretraining workload "
                "with storage enabled, got True"
            )
        explicit = (
            w.storage.storage_capacity_gib,
            w.storage.throughput_mb_s_per_tib,
            w.storage.metadata_iops,
        )
        if any(v is not None for v in explicit) or w.storage.is_sized:
            out.append(
                f"{w.name}.storage: a reused file system takes no size of its own; remove the "
                "capacity, throughput, metadata and sizing keys or set reuse_pretraining = false"
            )
    return out


def check_ip_budget_of(profile: Profile) -> list[str]:
    """Every enabled workload's nodes share the private subnet of the GPU zone: the largest
    deployment (autoscaling maxima, rollout groups, VPC CNI arithmetic, endpoints, FSx, EKS)
    must fit (:mod:`fm_constructs.config.subnet_demand`).

    Takes a loaded (valid) profile. Kept apart from :func:`check_profile` so that a plan can
    still be shown for a profile whose nodes do not fit; synthesis refuses it.
    """
    demand = subnet_demand(profile)
    return [] if demand.fits else [shortfall_message(demand)]


def _check_platform(profile: Profile) -> list[str]:
    platform = profile.platform
    out: list[str] = []
    region, az, azs = platform.region, platform.availability_zone, platform.availability_zones
    if len(set(azs)) != len(azs):
        out.append(f"platform.availability_zones: zones must be unique, got {list(azs)!r}")
    if len(azs) == 1:
        out.append(
            "platform.availability_zones: list at least two zones (EKS and HyperPod-EKS need "
            f"subnets in two zones; GPU nodes stay in {az!r}), got {list(azs)!r}"
        )
    if not region:
        return out  # the region itself is wrong and already reported
    if az and not re.fullmatch(re.escape(region) + r"[a-z]", az):
        out.append(
            f"platform.availability_zone: must be a zone of platform.region {region!r} "
            f"(such as {region + 'a'!r}), got {az!r}"
        )
    for zone in azs:
        if not re.fullmatch(re.escape(region) + r"[a-z]", zone):
            out.append(
                f"platform.availability_zones: every zone must belong to platform.region "
                f"{region!r}, got {zone!r}"
            )
    if az and azs and az not in azs:
        out.append(
            f"platform.availability_zones: must include platform.availability_zone {az!r} "
            f"(the zone of the GPU nodes and FSx), got {list(azs)!r}"
        )
    return out


def _check_instance_type(w: WorkloadConfig) -> list[str]:
    """The type must be catalogued and EFA-capable; HyperPod must offer it for HyperPod."""
    if not w.instance_type:
        return []  # missing or malformed: already reported by the loader
    field = f"{w.name}.instance_type"
    try:
        spec = require_efa(w.instance_type, field=field)
    except FmValidationError as error:
        return list(error.problems)
    if w.orchestrator in HYPERPOD and spec.hyperpod_name is None:
        return [
            f"{field}: SageMaker HyperPod does not offer {w.instance_type!r}; choose a type "
            f"HyperPod offers or orchestrator 'eks', got orchestrator {w.orchestrator.value!r}"
        ]
    return []


def _check_workload(w: WorkloadConfig) -> list[str]:
    out: list[str] = _check_instance_type(w)
    cap = w.capacity
    prefix = f"{w.name}.capacity"
    if w.name == "inference" and w.orchestrator is not Orchestrator.EKS:
        out.append(f"inference.orchestrator: must be 'eks', got {w.orchestrator.value!r}")
    if w.dedicated_cluster and w.orchestrator is Orchestrator.HYPERPOD_SLURM:
        out.append(
            f"{w.name}.dedicated_cluster: only EKS-orchestrated workloads ('eks', "
            "'hyperpod-eks') share or dedicate an EKS cluster; remove the key for "
            "'hyperpod-slurm', got true"
        )
    if cap.kind is CapacityKind.CAPACITY_BLOCK and cap.reservation_id is None:
        out.append(
            f"{prefix}.reservation_id: a Capacity Block needs its reservation id "
            "('cr-' followed by 17 hex digits, from the Capacity Block purchase), got None"
        )
    if cap.kind is CapacityKind.ODCR and (cap.reservation_id is None) == (
        cap.resource_group_arn is None
    ):
        out.append(
            f"{prefix}: an ODCR needs exactly one of reservation_id or resource_group_arn, got "
            f"reservation_id={cap.reservation_id!r}, resource_group_arn={cap.resource_group_arn!r}"
        )
    if cap.kind is CapacityKind.TRAINING_PLAN:
        if cap.training_plan_arn is None:
            out.append(f"{prefix}.training_plan_arn: a training plan needs its ARN, got None")
        if w.orchestrator not in HYPERPOD:
            out.append(
                f"{prefix}.kind: training plans are used by SageMaker HyperPod only; set "
                f"{w.name}.orchestrator to 'hyperpod-eks' or 'hyperpod-slurm', or use "
                f"kind 'capacity-block' or 'odcr' for EC2, got orchestrator "
                f"{w.orchestrator.value!r}"
            )
    elif w.orchestrator in HYPERPOD and cap.kind is not CapacityKind.ON_DEMAND:
        out.append(
            f"{prefix}.kind: HyperPod reserves capacity through SageMaker training plans, not "
            f"EC2 reservations; use kind 'training-plan' or 'on-demand', got {cap.kind.value!r}"
        )
    ids = Problems(field_prefix=f"{prefix}.")
    check_capacity_block_times(ids, cap.start_time, cap.end_time)
    if cap.placement_group_arn is not None:
        check_placement_group_arn(ids, cap.placement_group_arn)
    if cap.reservation_id is not None:
        check_reservation_id(ids, cap.reservation_id)
    if cap.resource_group_arn is not None:
        check_resource_group_arn(ids, cap.resource_group_arn)
    if cap.training_plan_arn is not None:
        check_training_plan_arn(ids, cap.training_plan_arn)
    out.extend(ids)
    unused = {
        "reservation_id": cap.reservation_id
        if cap.kind not in (CapacityKind.ODCR, CapacityKind.CAPACITY_BLOCK)
        else None,
        "resource_group_arn": cap.resource_group_arn if cap.kind is not CapacityKind.ODCR else None,
        "training_plan_arn": cap.training_plan_arn
        if cap.kind is not CapacityKind.TRAINING_PLAN
        else None,
        "placement_group_arn": cap.placement_group_arn
        if cap.kind is not CapacityKind.ODCR
        else None,
        "fall_back_to_on_demand": cap.fall_back_to_on_demand or None
        if cap.kind is not CapacityKind.ODCR
        else None,
        "start_time": cap.start_time if cap.kind is not CapacityKind.CAPACITY_BLOCK else None,
        "end_time": cap.end_time if cap.kind is not CapacityKind.CAPACITY_BLOCK else None,
    }
    for key, value in unused.items():
        if value is not None:
            out.append(
                f"{prefix}.{key}: does not apply to kind {cap.kind.value!r}; remove it or "
                f"change the kind, got {value!r}"
            )
    if cap.reserved_instance_count is not None and w.instance_count > cap.reserved_instance_count:
        out.append(
            f"{w.name}.instance_count: must not exceed the reservation's "
            f"{prefix}.reserved_instance_count ({cap.reserved_instance_count}), "
            f"got {w.instance_count}"
        )
    return out


def _check_storage(workload: str, s: StorageConfig) -> list[str]:
    if not s.enabled:
        return []
    prefix = f"{workload}.storage"
    out: list[str] = []
    explicit = s.storage_capacity_gib is not None or s.throughput_mb_s_per_tib is not None
    if explicit and s.is_sized:
        out.append(
            f"{prefix}: give either storage_capacity_gib/throughput_mb_s_per_tib or a sizing "
            "request (checkpoint_size_gib or model_parameters_billion), not both"
        )
    if s.checkpoint_size_gib is not None and s.model_parameters_billion is not None:
        out.append(
            f"{prefix}: give checkpoint_size_gib or model_parameters_billion, not both, got "
            f"{s.checkpoint_size_gib!r} and {s.model_parameters_billion!r}"
        )
    sizing_only = {
        "bytes_per_parameter": s.bytes_per_parameter,
        "checkpoint_write_seconds": s.checkpoint_write_seconds,
        "dataset_size_gib": s.dataset_size_gib,
        "checkpoints_to_keep": s.checkpoints_to_keep,
    }
    if not s.is_sized:
        for key, value in sizing_only.items():
            if value is not None:
                out.append(
                    f"{prefix}.{key}: only applies to a sizing request (set checkpoint_size_gib "
                    f"or model_parameters_billion), got {value!r}"
                )
    if s.is_sized and s.checkpoint_write_seconds is None:
        out.append(
            f"{prefix}.checkpoint_write_seconds: a sizing request needs the target time to "
            "write one checkpoint (e.g. 300), got None"
        )
    if s.backup_retention_days:
        out.append(
            f"{prefix}.backup_retention_days: FSx does not back up file systems linked to S3 by "
            "data repository associations (every file system here is: /datasets and "
            "/checkpoints); the data bucket is the durable copy. Set 0 or remove the key, got "
            f"{s.backup_retention_days!r}"
        )
    settings = Problems(field_prefix=f"{prefix}.")
    check_lustre_settings(
        settings,
        deployment_type=LustreDeploymentType.PERSISTENT_2,
        storage_capacity_gib=s.storage_capacity_gib,
        throughput_mb_s_per_tib=s.throughput_mb_s_per_tib,
        metadata_iops=s.metadata_iops,
        efa_enabled=s.efa_enabled and not s.is_sized,
    )
    out.extend(settings)
    if s.bytes_per_parameter is not None and s.checkpoint_size_gib is not None:
        out.append(
            f"{prefix}.bytes_per_parameter: only applies with model_parameters_billion, got "
            f"{s.bytes_per_parameter!r}"
        )
    return out
