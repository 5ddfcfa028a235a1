"""Turn a TOML profile into a validated :class:`Profile`, reporting every problem at once."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from fm_constructs.catalog.regions import REGION_NAME_PATTERN, ZONE_NAME_PATTERN
from fm_constructs.config.model import (
    AutoscalingConfig,
    CapacityConfig,
    CapacityKind,
    InferenceConfig,
    LoadBalancer,
    ModelConfig,
    NatGateways,
    Orchestrator,
    PcsAmiConfig,
    PlatformConfig,
    PostTrainingConfig,
    PostTrainingStorageConfig,
    PretrainingConfig,
    Profile,
    ReservationConfig,
    RolloutConfig,
    ServingMetric,
    StorageConfig,
    TrainingGoalConfig,
    WorkloadConfig,
)
from fm_constructs.config.reader import (
    NOT_ALLOWED,
    REQUIRED,
    UNREADABLE,
    WRONG_TYPE,
    TableReader,
)
from fm_constructs.config.rules import check_scale
from fm_constructs.domain import names
from fm_constructs.domain.defaults import ROOT_VOLUME_MAX_GIB, ROOT_VOLUME_MIN_GIB
from fm_constructs.domain.users import ClusterUser
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.planning.efa_layout import EfaLayout
from fm_constructs.planning.fsx_sizing import MAX_BACKUP_RETENTION_DAYS
from fm_constructs.planning.pod_networking import PodNetworking
from fm_constructs.rules import inference as inference_rules
from fm_constructs.rules import platform as platform_rules
from fm_constructs.rules import scale as scale_rules
from fm_constructs.rules import workloads as workload_rules
from fm_constructs.rules.profile import check_profile

WORKLOAD_KEYS = names.WORKLOAD_KINDS
#: The model of each workload table: the keys it takes are that class's fields.
WORKLOAD_MODELS: dict[str, type[WorkloadConfig]] = {
    "pretraining": PretrainingConfig,
    "post_training": PostTrainingConfig,
    "inference": InferenceConfig,
}

_ACCOUNT = r"\d{12}"
_NAME = r"[A-Za-z][A-Za-z0-9-]{0,31}"


def _keys(cls: type, *exclude: str) -> tuple[str, ...]:
    return tuple(f.name for f in fields(cls) if f.name not in exclude)


def _default(cls: type, name: str) -> Any:
    """The model's own default for a key, so loader, model and reference always agree."""
    (field,) = (f for f in fields(cls) if f.name == name)
    return field.default


def load_profile(path: str | Path) -> Profile:
    """Read and validate the profile at ``path``; one FmValidationError lists all problems."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise FmValidationError(
            [f"config: cannot read profile {str(file)!r}: {error.strerror}"], code=UNREADABLE
        ) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise FmValidationError(
            [f"config: {str(file)!r} is not valid TOML: {error}"], code=UNREADABLE
        ) from None
    return parse_profile(data, source=str(file))


def parse_profile(data: Mapping[str, Any], *, source: str = "<memory>") -> Profile:
    """Validate an already-parsed TOML document into a :class:`Profile`."""
    problems = Problems(context=f"profile {source}", code=NOT_ALLOWED)
    root = TableReader(data, "", problems, ("platform", *WORKLOAD_KEYS))
    if "platform" not in data:
        problems.add("platform", None, "is required (a table)", code=REQUIRED)
    platform = _platform(root.table("platform", _keys(PlatformConfig)))
    profile = Profile(
        platform=platform,
        pretraining=_pretraining(_workload_table(root, "pretraining")),
        post_training=_post_training(_workload_table(root, "post_training")),
        inference=_inference(_workload_table(root, "inference")),
        source=source,
    )
    reported = {finding.key for finding in problems.findings}
    findings = [f for f in check_profile(profile) if not f.key or f.key not in reported]
    problems.extend(f for f in findings if f.is_error)
    if not problems:
        # The addresses and limits of the largest deployment, once every key is valid.
        problems.extend(check_scale(profile))
    problems.raise_if_any()
    accepted = set(profile.platform.accepted_warnings)
    return dataclasses.replace(
        profile,
        warnings=tuple(f for f in findings if not f.is_error and f.code not in accepted),
    )


def _platform(t: TableReader) -> PlatformConfig:
    region = t.string(
        "region",
        required=True,
        pattern=REGION_NAME_PATTERN,
        hint="must be an AWS region name such as 'us-east-1'",
    )
    az = t.string(
        "availability_zone",
        required=True,
        pattern=ZONE_NAME_PATTERN,
        hint="must be an availability zone name such as 'us-east-1a'",
    )
    cidr = t.string("vpc_cidr", _default(PlatformConfig, "vpc_cidr"))
    if cidr is not None and t.has("vpc_cidr"):
        found = platform_rules.vpc_cidr(cidr, key=t.key_path("vpc_cidr"))
        t.problems.add_findings(found)
        if found:
            cidr = None
    pod_cidr = t.string("pod_cidr", _default(PlatformConfig, "pod_cidr")) or _default(
        PlatformConfig, "pod_cidr"
    )
    if t.has("pod_cidr"):
        t.problems.add_findings(
            scale_rules.pod_cidr(
                pod_cidr,
                cidr or _default(PlatformConfig, "vpc_cidr"),
                key=t.key_path("pod_cidr"),
            )
        )
    return PlatformConfig(
        name=t.string(
            "name",
            _default(PlatformConfig, "name"),
            pattern=_NAME,
            hint="must start with a letter and hold only letters, digits and '-' (max 32)",
        )
        or _default(PlatformConfig, "name"),
        region=region or "",
        availability_zone=az or "",
        availability_zones=t.string_list("availability_zones", required=True),
        account=t.string("account", pattern=_ACCOUNT, hint="must be a 12-digit AWS account id"),
        vpc_cidr=cidr or _default(PlatformConfig, "vpc_cidr"),
        nat_gateways=t.choice(
            "nat_gateways", NatGateways, _default(PlatformConfig, "nat_gateways")
        ),
        kubernetes_version=_kubernetes_version(t),
        admin_role_arns=t.string_list("admin_role_arns"),
        accepted_warnings=t.string_list("accepted_warnings"),
        public_access_cidrs=t.string_list("public_access_cidrs"),
        pod_networking=t.choice(
            "pod_networking", PodNetworking, _default(PlatformConfig, "pod_networking")
        ),
        pod_cidr=pod_cidr,
        interface_endpoints=t.boolean(
            "interface_endpoints", _default(PlatformConfig, "interface_endpoints")
        ),
        observability=t.boolean("observability", _default(PlatformConfig, "observability")),
        grafana=t.boolean("grafana", _default(PlatformConfig, "grafana")),
        termination_protection=t.boolean(
            "termination_protection", _default(PlatformConfig, "termination_protection")
        ),
        data_perimeter=t.boolean("data_perimeter", _default(PlatformConfig, "data_perimeter")),
        break_glass_role_arn=t.string("break_glass_role_arn"),
        data_perimeter_principals=t.string_list("data_perimeter_principals"),
    )


def _kubernetes_version(t: TableReader) -> str:
    default: str = _default(PlatformConfig, "kubernetes_version")
    version = t.string("kubernetes_version", default)
    if version is None or not t.has("kubernetes_version"):
        return default
    found = platform_rules.kubernetes_version(version, key=t.key_path("kubernetes_version"))
    t.problems.add_findings(found)
    return default if found else version


def _elsewhere(kind: str, table: str = "") -> Mapping[str, str]:
    """The keys the other workloads' ``table`` (their top level when empty) takes and
    ``kind``'s does not, each with the tables that take it (``[inference]``)."""

    def keys(model: type[WorkloadConfig]) -> set[str]:
        if not table:
            return set(_keys(model, "name"))
        return set(_keys(_table_model(model, table)))

    own = keys(WORKLOAD_MODELS[kind])
    where: dict[str, list[str]] = {}
    for other, model in WORKLOAD_MODELS.items():
        for name in sorted(keys(model) - own):
            where.setdefault(name, []).append(f"[{other}.{table}]" if table else f"[{other}]")
    return {name: " or ".join(tables) for name, tables in where.items()}


def _table_model(model: type[WorkloadConfig], table: str) -> type[Any]:
    """The model class of the sub-table ``table`` of a workload model."""
    (field,) = (f for f in fields(model) if f.name == table)
    factory = field.default_factory
    assert isinstance(factory, type), table
    return factory


def _workload_table(root: TableReader, kind: str) -> TableReader:
    """The reader of workload ``kind``'s table: its model's keys, and where the keys of the
    other kinds belong."""
    return root.table(kind, _keys(WORKLOAD_MODELS[kind], "name"), elsewhere=_elsewhere(kind))


def _common(name: str, t: TableReader) -> dict[str, Any]:
    """The keys every workload takes, as keyword arguments of its model."""
    model = WORKLOAD_MODELS[name]
    enabled = t.boolean("enabled", _default(model, "enabled"))
    instance_type = t.string(
        "instance_type",
        "",
        required=enabled,
        pattern=r"[a-z][a-z0-9-]*\.[a-z0-9]+",
        hint="must be an EC2 instance type name such as 'p5.48xlarge' (without the 'ml.' prefix)",
    )
    return {
        "enabled": enabled,
        "orchestrator": t.choice("orchestrator", Orchestrator, _default(model, "orchestrator")),
        "instance_type": instance_type or "",
        "instance_count": t.integer(
            "instance_count", _default(model, "instance_count"), minimum=1, maximum=10_000
        )
        or 1,
        "dedicated_cluster": t.boolean("dedicated_cluster", _default(model, "dedicated_cluster")),
        "capacity": _capacity(t.table("capacity", _keys(CapacityConfig))),
        "efa_layout": t.choice("efa_layout", EfaLayout, _default(model, "efa_layout")),
        "root_volume_size_gib": t.integer(
            "root_volume_size_gib",
            _default(model, "root_volume_size_gib"),
            minimum=ROOT_VOLUME_MIN_GIB,
            maximum=ROOT_VOLUME_MAX_GIB,
        )
        or 0,
        "max_pods_per_node": t.integer("max_pods_per_node", minimum=1, maximum=250),
        "launch_template_version": t.integer("launch_template_version", minimum=1),
        "session_manager": t.boolean("session_manager", _default(model, "session_manager")),
        "submitter_role_arns": t.string_list("submitter_role_arns"),
    }


def _pretraining(t: TableReader) -> PretrainingConfig:
    return PretrainingConfig(
        **_common("pretraining", t),
        training_goal=_training_goal(t.table("training_goal", _keys(TrainingGoalConfig))),
        pcs_ami=_pcs_ami(t.table("pcs_ami", _keys(PcsAmiConfig))),
        users=_users(t),
        storage=_storage(_storage_table(t, "pretraining"), StorageConfig, default_enabled=True),
    )


def _post_training(t: TableReader) -> PostTrainingConfig:
    storage = _storage_table(t, "post_training")
    return PostTrainingConfig(
        **_common("post_training", t),
        training_goal=_training_goal(t.table("training_goal", _keys(TrainingGoalConfig))),
        rollout=_rollout(t.table("rollout", _keys(RolloutConfig))),
        pcs_ami=_pcs_ami(t.table("pcs_ami", _keys(PcsAmiConfig))),
        users=_users(t),
        storage=_storage(
            storage,
            PostTrainingStorageConfig,
            default_enabled=True,
            reuse_pretraining=storage.boolean(
                "reuse_pretraining", _default(PostTrainingStorageConfig, "reuse_pretraining")
            ),
        ),
    )


def _inference(t: TableReader) -> InferenceConfig:
    return InferenceConfig(
        **_common("inference", t),
        max_instance_count=t.integer("max_instance_count", minimum=1, maximum=10_000),
        load_balancer=t.choice(
            "load_balancer", LoadBalancer, _default(InferenceConfig, "load_balancer")
        ),
        load_balancer_source_ranges=t.string_list("load_balancer_source_ranges"),
        tls_certificate_arn=t.string("tls_certificate_arn"),
        model=_model(t.table("model", _keys(ModelConfig))),
        autoscaling=_autoscaling(t.table("autoscaling", _keys(AutoscalingConfig))),
        storage=_storage(_storage_table(t, "inference"), StorageConfig, default_enabled=False),
    )


def _storage_table(t: TableReader, kind: str) -> TableReader:
    model = _table_model(WORKLOAD_MODELS[kind], "storage")
    return t.table("storage", _keys(model), elsewhere=_elsewhere(kind, "storage"))


def _table_array(t: TableReader, key: str, shape: str, model: type) -> list[TableReader]:
    """The tables of the array ``key`` (``[[...]]``), each read with its index in the key path
    (``pretraining.users[1].uid``); none when the key is absent or not an array of tables
    (reported, with ``shape`` saying what the array holds)."""
    if not t.has(key):
        return []
    entries = t.data[key]
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        t.problems.add(
            t.key_path(key), entries, f"must be an array of tables ({shape})", code=WRONG_TYPE
        )
        return []
    return [
        TableReader(entry, f"{t.key_path(key)}[{index}]", t.problems, _keys(model))
        for index, entry in enumerate(entries)
    ]


def _users(t: TableReader) -> tuple[ClusterUser, ...]:
    """``[[<workload>.users]]``: an array of tables; the rules check names and ids."""
    users: list[ClusterUser] = []
    for u in _table_array(t, "users", "[[<workload>.users]] with name and uid", ClusterUser):
        name = u.string("name", required=True)
        uid = u.integer("uid", required=True)
        gid = u.integer("gid")
        groups = u.string_list("groups")
        if name is not None and uid is not None:
            users.append(ClusterUser(name=name, uid=uid, gid=gid, groups=groups))
    return tuple(users)


def _reservations(t: TableReader) -> tuple[ReservationConfig, ...]:
    """``[[<workload>.capacity.node_groups]]``: an array of tables, one per managed node
    group."""
    shape = (
        "[[<workload>.capacity.node_groups]], one per managed node group, with reservation_id "
        "or resource_group_arn"
    )
    return tuple(
        ReservationConfig(
            reservation_id=r.string("reservation_id"),
            resource_group_arn=r.string("resource_group_arn"),
            placement_group_arn=r.string("placement_group_arn"),
            instance_count=r.integer("instance_count", minimum=1),
        )
        for r in _table_array(t, "node_groups", shape, ReservationConfig)
    )


def _capacity(t: TableReader) -> CapacityConfig:
    return CapacityConfig(
        kind=t.choice("kind", CapacityKind, _default(CapacityConfig, "kind")),
        reservation_id=t.string("reservation_id"),
        resource_group_arn=t.string("resource_group_arn"),
        training_plan_arn=t.string("training_plan_arn"),
        reserved_instance_count=t.integer("reserved_instance_count", minimum=1),
        placement_group_arn=t.string("placement_group_arn"),
        fall_back_to_on_demand=bool(t.boolean("fall_back_to_on_demand", False)),
        create_placement_group=bool(t.boolean("create_placement_group", False)),
        node_groups=_reservations(t),
        start_time=t.string("start_time"),
        end_time=t.string("end_time"),
    )


def _model(t: TableReader) -> ModelConfig:
    utilization = t.number("gpu_memory_utilization")
    if utilization is not None:
        found = inference_rules.gpu_memory_utilization(
            utilization, key=t.key_path("gpu_memory_utilization")
        )
        t.problems.add_findings(found)
        utilization = None if found else utilization
    return ModelConfig(
        model_s3_prefix=t.string(
            "model_s3_prefix",
            pattern=r"[^/\s][^\s]*/",
            hint="must be a key prefix in the data bucket ending in '/', without s3:// or bucket",
        ),
        served_model_name=t.string("served_model_name"),
        tensor_parallel_size=t.integer("tensor_parallel_size", 1, minimum=1, maximum=64) or 1,
        pipeline_parallel_size=t.integer("pipeline_parallel_size", 1, minimum=1, maximum=64) or 1,
        replicas=t.integer("replicas", 1, minimum=1, maximum=1000) or 1,
        max_replicas=t.integer("max_replicas", minimum=1, maximum=1000),
        max_model_len=t.integer("max_model_len", minimum=1),
        model_parameters_billion=t.number("model_parameters_billion"),
        weight_bytes_per_parameter=t.number("weight_bytes_per_parameter")
        or _default(ModelConfig, "weight_bytes_per_parameter"),
        gpu_memory_utilization=utilization
        if utilization is not None
        else _default(ModelConfig, "gpu_memory_utilization"),
        image=t.string("image"),
    )


def _autoscaling(t: TableReader) -> AutoscalingConfig:
    return AutoscalingConfig(
        enabled=t.boolean("enabled", _default(AutoscalingConfig, "enabled")),
        metric=t.choice("metric", ServingMetric, _default(AutoscalingConfig, "metric")),
        target=t.number("target") or _default(AutoscalingConfig, "target"),
    )


def _pcs_ami(t: TableReader) -> PcsAmiConfig:
    """``[<workload>.pcs_ami]``; the PCS rules check the id's form and region."""
    return PcsAmiConfig(id=t.string("id"), region=t.string("region"), name=t.string("name"))


def _training_goal(t: TableReader) -> TrainingGoalConfig:
    mfu = t.number("target_mfu")
    if mfu is not None:
        found = workload_rules.target_mfu(mfu, key=t.key_path("target_mfu"))
        t.problems.add_findings(found)
        mfu = None if found else mfu
    return TrainingGoalConfig(
        model_parameters_billion=t.number("model_parameters_billion"),
        training_tokens_billion=t.number("training_tokens_billion"),
        target_mfu=_default(TrainingGoalConfig, "target_mfu") if mfu is None else mfu,
    )


def _rollout(t: TableReader) -> RolloutConfig:
    enabled = t.boolean("enabled", _default(RolloutConfig, "enabled"))
    return RolloutConfig(
        enabled=enabled,
        instance_type=t.string(
            "instance_type",
            "",
            required=enabled,
            pattern=r"[a-z][a-z0-9-]*\.[a-z0-9]+",
            hint="must be an EC2 instance type name such as 'g6e.48xlarge'",
        )
        or "",
        instance_count=t.integer(
            "instance_count", _default(RolloutConfig, "instance_count"), minimum=1, maximum=10_000
        )
        or 1,
        launch_template_version=t.integer("launch_template_version", minimum=1),
    )


S = TypeVar("S", bound=StorageConfig)


def _storage(t: TableReader, model: type[S], *, default_enabled: bool, **own: Any) -> S:
    """The storage keys every workload takes, and ``own`` (a kind's own storage keys)."""
    return model(
        **own,
        enabled=t.boolean("enabled", default_enabled),
        # No bounds here: the FSx rules name the valid sizes and tiers.
        storage_capacity_gib=t.integer("storage_capacity_gib"),
        throughput_mb_s_per_tib=t.integer("throughput_mb_s_per_tib"),
        checkpoint_size_gib=t.number("checkpoint_size_gib"),
        model_parameters_billion=t.number("model_parameters_billion"),
        bytes_per_parameter=t.number("bytes_per_parameter"),
        checkpoint_write_seconds=t.integer("checkpoint_write_seconds", minimum=1),
        dataset_size_gib=t.number("dataset_size_gib", minimum_exclusive=-1.0),
        checkpoints_to_keep=t.integer("checkpoints_to_keep", minimum=1),
        read_mb_s_per_node=t.number("read_mb_s_per_node")
        or _default(StorageConfig, "read_mb_s_per_node"),
        efa_enabled=t.boolean("efa_enabled", False),
        metadata_iops=t.integer("metadata_iops", minimum=1),
        backup_retention_days=t.integer(
            "backup_retention_days",
            _default(StorageConfig, "backup_retention_days"),
            minimum=0,
            maximum=MAX_BACKUP_RETENTION_DAYS,
        )
        or 0,
    )
