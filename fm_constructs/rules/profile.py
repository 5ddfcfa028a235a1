"""The profile's rules: every rule function of :mod:`fm_constructs.rules` run over a profile,
with each finding put under its profile key path (the loader checks each key's type first).

Rules spanning several keys of one table live here too; rules about a concept (a region, a
Kubernetes version, a serving layout) live in the topic modules of :mod:`fm_constructs.rules`
and are shared with the constructs and the CLI. The deployment at its largest (the IP budget
and AWS's fixed limits) is checked by :func:`fm_constructs.config.rules.check_scale`, which
maps the profile to its subnet demand and limit usages first.
"""

from __future__ import annotations

from collections.abc import Mapping

from fm_constructs.catalog import InstanceSpec
from fm_constructs.catalog.lookup import find_instance_type
from fm_constructs.domain.defaults import HYPERPOD_EBS_VOLUME_GIB, ROOT_VOLUME_SIZE_GIB
from fm_constructs.domain.kinds import HYPERPOD
from fm_constructs.errors import FmValidationError
from fm_constructs.planning.aws_limits import (
    NODES_PER_MANAGED_NODE_GROUP,
    node_groups_for,
    split_sizes,
)
from fm_constructs.planning.pcs_limits import MAX_NODES, PcsClusterSize
from fm_constructs.profile.model import (
    PROFILE_DEPLOYMENT_TYPE,
    CapacityConfig,
    CapacityKind,
    InferenceConfig,
    ModelConfig,
    Orchestrator,
    PostTrainingConfig,
    Profile,
    StorageConfig,
    TrainingWorkloadConfig,
    WorkloadConfig,
)
from fm_constructs.rules import capacity as capacity_rules
from fm_constructs.rules import inference as inference_rules
from fm_constructs.rules import platform as platform_rules
from fm_constructs.rules import users as user_rules
from fm_constructs.rules import workloads as workload_rules
from fm_constructs.rules.findings import Finding, Severity, info
from fm_constructs.rules.hyperpod import eks_version_for_hyperpod
from fm_constructs.rules.pcs_ami import pcs_ami
from fm_constructs.rules.storage import STORAGE, lustre_settings

INCONSISTENT = info(
    "FM011",
    "Keys of one table contradict each other or one needs another that is missing.",
    "Set the keys together as the message says, or remove the one that does not apply.",
)
CAPACITY = info(
    "FM310",
    "The capacity table does not match its kind (a reservation without its id, an id the kind "
    "does not use, a training plan outside HyperPod, more nodes than reserved).",
    "Give the identifiers the kind needs and nothing else, as the message says.",
)
ORCHESTRATOR = info(
    "FM304",
    "Inference runs on EKS only.",
    "Set inference.orchestrator = 'eks'.",
)
HYPERPOD_VERSION = info(
    "FM206",
    "SageMaker HyperPod attaches to EKS clusters of a narrower list of Kubernetes versions.",
    "Set platform.kubernetes_version to a version both HyperPod and the library support.",
)
USERS_HERE = info(
    "FM332",
    "Cluster users are created by the HyperPod Slurm lifecycle scripts, with their homes on the "
    "workload's file system: other orchestrators, or a workload without storage, take none.",
    "Remove the users table, or use orchestrator 'hyperpod-slurm' with storage enabled.",
)
ROOT_VOLUME = info(
    "FM334",
    "HyperPod sizes each node's root volume itself: the API takes no size for it "
    "(ClusterEbsVolumeConfig.RootVolume), so root_volume_size_gib would be ignored.",
    "Remove root_volume_size_gib from the HyperPod workload; its nodes keep containers and "
    "data on the instance NVMe and the extra volume at /opt/sagemaker.",
)
PCS_KEY = info(
    "FM336",
    "A key does not apply to AWS PCS (a Kubernetes setting, the RL rollout group, reservations "
    "split by node group), or PCS needs "
    "one more (the size of a Capacity Block), or the workload has more nodes than a PCS "
    "cluster runs.",
    "Remove the key or add the one the message names; PCS sizes clusters up to 2,048 nodes.",
)
NO_WORKLOAD = info(
    "FM106",
    "No workload is enabled: the platform still builds (and bills) NAT gateways, VPC "
    "endpoints and the observability workspaces.",
    "Enable a workload, or do not deploy the profile.",
    severity=Severity.WARNING,
)


def _finding(code: str, key: str, value: object, allowed: str, fix: str = "") -> Finding:
    return Finding(code, Severity.ERROR, key, value, allowed, fix)


def _keys_set(code: str, prefix: str, values: Mapping[str, object], allowed: str) -> list[Finding]:
    """A finding of ``code`` for each key of ``values`` (under ``prefix``) that is set."""
    return [
        _finding(code, f"{prefix}.{key}", value, allowed)
        for key, value in values.items()
        if value is not None
    ]


def _text(code: str, message: str) -> Finding:
    """A finding phrased in full (rules spanning several keys)."""
    return Finding(code, Severity.ERROR, "", None, message)


def check_profile(profile: Profile) -> list[Finding]:
    """Every finding (errors and warnings) of ``profile``'s cross-key rules, under profile key
    paths; empty when the profile is consistent."""
    findings: list[Finding] = []
    findings += _check_platform(profile)
    if not profile.enabled_workloads:
        findings.append(
            Finding(
                NO_WORKLOAD,
                Severity.WARNING,
                "pretraining.enabled",
                False,
                "no workload is enabled: the platform still bills NAT gateways, VPC endpoints "
                "and the observability workspaces",
                "enable a workload, or do not deploy this profile",
            )
        )
    for workload in profile.enabled_workloads:
        findings += _check_workload(profile, workload)
        findings += _check_root_volume(workload)
        findings += _check_storage(workload.name, workload.storage)
        if isinstance(workload, PostTrainingConfig):
            findings += _check_post_training_extras(profile, workload)
        if isinstance(workload, TrainingWorkloadConfig):
            findings += _check_training_goal(workload)
            findings += _check_users(workload)
        if isinstance(workload, InferenceConfig):
            findings += _check_inference(workload, profile.platform.region)
    findings += _check_hyperpod_kubernetes_version(profile)
    return findings


def _check_hyperpod_kubernetes_version(profile: Profile) -> list[Finding]:
    """HyperPod attaches to EKS clusters of its own, narrower list of Kubernetes versions."""
    users = [
        w.name for w in profile.enabled_workloads if w.orchestrator is Orchestrator.HYPERPOD_EKS
    ]
    if not users:
        return []
    return eks_version_for_hyperpod(
        profile.platform.kubernetes_version,
        key="platform.kubernetes_version",
        code=HYPERPOD_VERSION,
    )


def _check_users(w: TrainingWorkloadConfig) -> list[Finding]:
    """Users are a HyperPod Slurm feature with homes on the workload's file system."""
    if not w.users:
        return []
    key = f"{w.name}.users"
    names = [u.name for u in w.users]
    if w.orchestrator is not Orchestrator.HYPERPOD_SLURM:
        return [
            _finding(
                USERS_HERE,
                key,
                names,
                f"only 'hyperpod-slurm' workloads create cluster users, this one is "
                f"{w.orchestrator.value!r}",
                "remove the users (EKS: give people access with Kubernetes RBAC)",
            )
        ]
    out = user_rules.check_users(w.users, key=key)
    if not w.storage.enabled:
        out.append(
            _finding(
                USERS_HERE,
                key,
                names,
                f"the users' homes and SSH keys live on the workload's file system, and "
                f"{w.name}.storage.enabled is false",
                f"set {w.name}.storage.enabled = true, or remove the users",
            )
        )
    return out


def _check_root_volume(w: WorkloadConfig) -> list[Finding]:
    """HyperPod's API has no root volume size (botocore sagemaker ClusterEbsVolumeConfig:
    with RootVolume "You can't specify the VolumeSizeInGB field. The size of the root volume
    is determined for you"); a size other than the default would silently not apply."""
    if w.orchestrator not in HYPERPOD or w.root_volume_size_gib == ROOT_VOLUME_SIZE_GIB:
        return []
    return [
        _finding(
            ROOT_VOLUME,
            f"{w.name}.root_volume_size_gib",
            w.root_volume_size_gib,
            "does not apply to HyperPod, which sizes each node's root volume itself (the "
            "SageMaker API takes no size for it)",
            "remove the key; HyperPod nodes keep containers and data on the instance NVMe and "
            f"the {HYPERPOD_EBS_VOLUME_GIB} GiB volume at /opt/sagemaker",
        )
    ]


def _check_inference(w: InferenceConfig, region: str) -> list[Finding]:
    out: list[Finding] = []
    model = w.model
    out += [
        f.under("inference.")
        for f in inference_rules.public_endpoint_source_ranges(
            w.load_balancer.value, w.load_balancer_source_ranges
        )
    ]
    out += [
        f.under("inference.")
        for f in inference_rules.endpoint_tls(w.load_balancer.value, w.tls_certificate_arn, region)
    ]
    if w.max_instance_count is not None and w.max_instance_count < w.instance_count:
        out.append(
            _finding(
                INCONSISTENT,
                "inference.max_instance_count",
                w.max_instance_count,
                f"must be >= inference.instance_count ({w.instance_count})",
            )
        )
    if not model.enabled:
        if model != type(model)():
            out.append(
                _finding(
                    INCONSISTENT,
                    "inference.model.model_s3_prefix",
                    None,
                    "the model table needs the weights' prefix in the data bucket (e.g. "
                    "'models/llama-3-70b/')",
                )
            )
        else:
            out += [f.under("inference.") for f in inference_rules.model_present(False)]
        return out
    if model.served_model_name is None:
        out.append(
            _finding(
                INCONSISTENT, "inference.model.served_model_name", None, "is required with a model"
            )
        )
    else:
        out += [
            f.under("inference.model.")
            for f in inference_rules.served_model_name(model.served_model_name)
        ]
    if model.image is not None:
        out += [f.under("inference.model.") for f in inference_rules.model_image(model.image)]
    out += [
        f.under("inference.model.")
        for f in inference_rules.max_replicas_cover_replicas(model.replicas, model.max_replicas)
    ]
    spec = _spec(w.instance_type)
    if spec is None:
        return out
    tp, pp = model.tensor_parallel_size, model.pipeline_parallel_size
    layout_findings = inference_rules.serving_layout(tp, pp, spec)
    out += [
        f.under("inference." if f.key == "instance_type" else "inference.model.")
        for f in layout_findings
    ]
    if not layout_findings and spec.eks_ami_family == "NVIDIA":
        out += [
            f.under("inference.")
            for f in inference_rules.efa_where_replicas_span_nodes(tp, pp, spec)
        ]
        out += [f.under("inference.model.") for f in _weights_fit(model, spec)]
        try:
            layout = inference_rules.plan_layout(
                spec, tensor_parallel_size=tp, pipeline_parallel_size=pp
            )
        except FmValidationError as error:
            out += [f.under("inference.model.") for f in error.findings]
        else:
            most = model.max_replicas or model.replicas
            out += [
                f.under("inference.")
                for f in inference_rules.replicas_fit_nodes(
                    most, layout, w.max_instance_count or w.instance_count
                )
            ]
    return out


def _weights_fit(model: ModelConfig, spec: InstanceSpec) -> list[Finding]:
    """FM511 with the model's size from model_parameters_billion, else from its names."""
    if model.model_parameters_billion is not None:
        size, source = model.model_parameters_billion, "model_parameters_billion"
    else:
        found = inference_rules.parameters_in_name(model.served_model_name, model.model_s3_prefix)
        if found is None:
            return []
        size, name = found
        source = f"read from {name!r}; set model_parameters_billion to state it"
    return inference_rules.weights_fit_gpus(
        size,
        model.weight_bytes_per_parameter,
        model.tensor_parallel_size,
        model.pipeline_parallel_size,
        spec,
        model.gpu_memory_utilization,
        source=source,
    )


def _spec(instance_type: str) -> InstanceSpec | None:
    return find_instance_type(instance_type) if instance_type else None


def _check_training_goal(w: TrainingWorkloadConfig) -> list[Finding]:
    goal = w.training_goal
    given = (goal.model_parameters_billion, goal.training_tokens_billion)
    prefix = f"{w.name}.training_goal"
    if (given[0] is None) != (given[1] is None):
        return [
            _text(
                INCONSISTENT,
                f"{prefix}: give model_parameters_billion and training_tokens_billion together, "
                f"got {given[0]!r} and {given[1]!r}",
            )
        ]
    return []


def _check_post_training_extras(profile: Profile, w: PostTrainingConfig) -> list[Finding]:
    """The rollout group's type, and reuse of the pre-training file system, which needs one
    to reuse."""
    out: list[Finding] = []
    if w.rollout.enabled and w.rollout.instance_type:
        key = f"{w.name}.rollout.instance_type"
        out += workload_rules.catalogued(w.rollout.instance_type, key=key)
        spec = find_instance_type(w.rollout.instance_type)
        if spec is not None:
            out += workload_rules.efa_for_training(spec, key=key)
    if w.storage.reuse_pretraining:
        if not (profile.pretraining.enabled and profile.pretraining.storage.enabled):
            out.append(
                _finding(
                    INCONSISTENT,
                    "post_training.storage.reuse_pretraining",
                    True,
                    "needs an enabled pretraining workload with storage enabled",
                )
            )
        explicit = (
            w.storage.storage_capacity_gib,
            w.storage.throughput_mb_s_per_tib,
            w.storage.metadata_iops,
        )
        if any(v is not None for v in explicit) or w.storage.is_sized:
            out.append(
                _text(
                    INCONSISTENT,
                    f"{w.name}.storage: a reused file system takes no size of its own; remove "
                    "the capacity, throughput, metadata and sizing keys or set "
                    "reuse_pretraining = false",
                )
            )
    return out


def _check_platform(profile: Profile) -> list[Finding]:
    platform = profile.platform
    region, az, azs = platform.region, platform.availability_zone, platform.availability_zones
    zones: list[Finding] = []
    if region:
        if az:
            zones += platform_rules.zone_in_region(az, region, region_key="platform.region")
        for index, zone in enumerate(azs):
            zones += platform_rules.zone_in_region(
                zone, region, key=f"availability_zones[{index}]", region_key="platform.region"
            )
    # A zone that cannot exist is reported once, not again as "not in the list".
    gpu_zone = "" if zones else az
    out = platform_rules.zone_list(azs, gpu_zone, gpu_zone_key="platform.availability_zone")
    out += zones
    if region:
        known = platform_rules.region_known(region)
        out += known
        if not known:
            out += platform_rules.services_offered(region, _services(profile))
    if any(not w.orchestrator.is_slurm for w in profile.enabled_workloads):
        out += platform_rules.admin_placeholders(platform.admin_role_arns)
        out += platform_rules.kubectl_layer_installed(platform.kubernetes_version)
    out += platform_rules.admin_principals(platform.admin_role_arns)
    out += platform_rules.accepted_warnings(platform.accepted_warnings)
    out += platform_rules.admin_accounts(platform.admin_role_arns, platform.account)
    out += platform_rules.public_access_cidrs(platform.public_access_cidrs)
    out += platform_rules.data_perimeter_off(platform.data_perimeter)
    if platform.break_glass_role_arn is not None:
        out += platform_rules.perimeter_principals(
            [platform.break_glass_role_arn], platform.account, key="break_glass_role_arn"
        )
    out += platform_rules.perimeter_principals(platform.data_perimeter_principals, platform.account)
    return [f.under("platform.") for f in out]


def _services(profile: Profile) -> list[tuple[str, str]]:
    """The services the profile uses, each with the key that needs it."""
    platform = profile.platform
    used = [("ec2", "platform.region"), ("s3", "platform.region")]
    if platform.observability:
        used.append(("aps", "platform.observability"))
    if platform.observability and platform.grafana:
        used.append(("grafana", "platform.grafana"))
    for w in profile.enabled_workloads:
        if not w.orchestrator.is_slurm:
            used.append(("eks", f"{w.name}.orchestrator"))
        if w.orchestrator in HYPERPOD:
            used.append(("api.sagemaker", f"{w.name}.orchestrator"))
        if w.storage.enabled:
            used.append(("fsx", f"{w.name}.storage.enabled"))
        if isinstance(w, InferenceConfig) and w.load_balancer.value != "none":
            used.append(("elasticloadbalancing", "inference.load_balancer"))
    return list(dict.fromkeys(used))


def _check_instance_type(w: WorkloadConfig) -> list[Finding]:
    """The type must be catalogued; training needs EFA (inference only where a replica spans
    nodes, checked with its layout); HyperPod must offer it for HyperPod."""
    if not w.instance_type:
        return []  # missing or malformed: already reported by the loader
    key = f"{w.name}.instance_type"
    spec = find_instance_type(w.instance_type)
    if spec is None:
        return workload_rules.catalogued(w.instance_type, key=key)
    out: list[Finding] = []
    if not isinstance(w, InferenceConfig):
        out += workload_rules.efa_for_training(spec, key=key)
    if w.orchestrator in HYPERPOD:
        out += workload_rules.offered_by_hyperpod(spec, w.orchestrator.value, key=key)
    return out


def _efa_count(instance_type: str, count: int) -> int:
    spec = find_instance_type(instance_type)  # None for an unknown type (reported by FM301)
    return count if spec is not None and spec.lustre_efa_client else 0


#: Orchestrators whose EFA nodes configure LNet over EFA, so count against an EFA-enabled file
#: system's connections: the Slurm node scripts (HyperPod Slurm, AWS PCS), EKS node groups and
#: HyperPod EKS nodes (the lifecycle scripts' OnCreate).
EFA_CLIENT_ORCHESTRATORS = (
    Orchestrator.HYPERPOD_SLURM,
    Orchestrator.PCS,
    Orchestrator.EKS,
    Orchestrator.HYPERPOD_EKS,
)


def efa_client_nodes(w: WorkloadConfig) -> int:
    """EFA-capable nodes of ``w`` (its largest size and its rollout group) that may mount an
    EFA-enabled file system over EFA: HyperPod Slurm and AWS PCS clusters, EKS node groups,
    HyperPod EKS clusters."""
    if not w.enabled or w.orchestrator not in EFA_CLIENT_ORCHESTRATORS:
        return 0
    size = w.instance_count if w.orchestrator.is_slurm else w.largest_size
    total = _efa_count(w.instance_type, size)
    rollout = w.rollout_group
    if rollout is not None:
        total += _efa_count(rollout.instance_type, rollout.instance_count)
    return total


def fsx_efa_connection_nodes(profile: Profile, w: WorkloadConfig) -> int:
    """The nodes that may use EFA connections of ``w``'s own EFA-enabled file system (FM316):
    those of ``w`` and of a post-training workload reusing it, on HyperPod Slurm, AWS PCS, EKS
    or HyperPod EKS; 0 when ``w``'s file system has no EFA or ``w`` reuses another's."""
    if w.reuses_pretraining_storage or not w.storage.enabled or not w.storage.efa_enabled:
        return 0
    total = efa_client_nodes(w)
    post = profile.post_training
    if w is profile.pretraining and post.enabled and post.reuses_pretraining_storage:
        total += efa_client_nodes(post)
    return total


def _check_workload(profile: Profile, w: WorkloadConfig) -> list[Finding]:
    out: list[Finding] = _check_instance_type(w)
    out += [
        f.under(f"{w.name}.")
        for f in platform_rules.admin_principals(w.submitter_role_arns, key="submitter_role_arns")
    ]
    admins = set(profile.platform.admin_role_arns)
    for index, arn in enumerate(w.submitter_role_arns):
        if arn in admins:
            out.append(
                _finding(
                    INCONSISTENT,
                    f"{w.name}.submitter_role_arns[{index}]",
                    arn,
                    "must not also be in platform.admin_role_arns (EKS takes one access entry "
                    "per role, and a cluster admin needs no namespace access)",
                    "list the role in one of the two keys",
                )
            )
    if not w.reuses_pretraining_storage:  # once, for the workload that owns the file system
        out += workload_rules.fsx_efa_connections(
            fsx_efa_connection_nodes(profile, w), key=f"{w.name}.instance_count"
        )
    cap = w.capacity
    prefix = f"{w.name}.capacity"
    if isinstance(w, InferenceConfig) and w.orchestrator is not Orchestrator.EKS:
        out.append(
            _finding(ORCHESTRATOR, "inference.orchestrator", w.orchestrator.value, "must be 'eks'")
        )
    if w.dedicated_cluster and w.orchestrator.is_slurm:
        out.append(
            _finding(
                INCONSISTENT,
                f"{w.name}.dedicated_cluster",
                True,
                "only EKS-orchestrated workloads ('eks', 'hyperpod-eks') share or dedicate an "
                "EKS cluster",
                f"remove the key for {w.orchestrator.value!r}",
            )
        )
    out += _check_pcs(w)
    if isinstance(w, TrainingWorkloadConfig) and w.orchestrator is Orchestrator.PCS:
        out += pcs_ami(
            w.name,
            w.pcs_ami.id,
            w.pcs_ami.region,
            region=profile.platform.region,
            source=profile.source if profile.source != "<memory>" else "",
        )
    if cap.kind is CapacityKind.CAPACITY_BLOCK and cap.reservation_id is None:
        out.append(
            _finding(
                CAPACITY,
                f"{prefix}.reservation_id",
                None,
                "a Capacity Block needs its reservation id ('cr-' followed by 17 hex digits, "
                "from the Capacity Block purchase)",
            )
        )
    out += reservation_node_groups(cap, w.largest_size, prefix=prefix)
    out += _capacity_arns_at_home(cap, profile.platform.region, profile.platform.account, prefix)
    if (
        cap.kind is CapacityKind.ODCR
        and not cap.node_groups
        and (cap.reservation_id is None) == (cap.resource_group_arn is None)
    ):
        out.append(
            _text(
                CAPACITY,
                f"{prefix}: an ODCR needs exactly one of reservation_id or resource_group_arn, "
                f"got reservation_id={cap.reservation_id!r}, "
                f"resource_group_arn={cap.resource_group_arn!r}",
            )
        )
    if cap.kind is CapacityKind.TRAINING_PLAN:
        if cap.training_plan_arn is None:
            out.append(
                _finding(
                    CAPACITY, f"{prefix}.training_plan_arn", None, "a training plan needs its ARN"
                )
            )
        if w.orchestrator not in HYPERPOD:
            out.append(
                _finding(
                    CAPACITY,
                    f"{prefix}.kind",
                    w.orchestrator.value,
                    f"training plans are used by SageMaker HyperPod only; set "
                    f"{w.name}.orchestrator to 'hyperpod-eks' or 'hyperpod-slurm', or use "
                    f"kind 'capacity-block' or 'odcr' for EC2 (this is the orchestrator)",
                )
            )
    elif w.orchestrator in HYPERPOD and cap.kind is not CapacityKind.ON_DEMAND:
        out.append(
            _finding(
                CAPACITY,
                f"{prefix}.kind",
                cap.kind.value,
                "HyperPod reserves capacity through SageMaker training plans, not EC2 "
                "reservations; use kind 'training-plan' or 'on-demand'",
            )
        )
    ids = capacity_rules.capacity_block_times(cap.start_time, cap.end_time)
    ids += _identifiers(
        cap, ("placement_group_arn", "reservation_id", "resource_group_arn", "training_plan_arn")
    )
    out += [f.under(f"{prefix}.") for f in ids]
    if cap.training_plan_arn is not None and not ids:
        out += workload_rules.capacity_arn_matches(
            cap.training_plan_arn,
            profile.platform.region,
            profile.platform.account,
            key=f"{prefix}.training_plan_arn",
        )
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
        "create_placement_group": cap.create_placement_group or None
        if cap.kind is not CapacityKind.ODCR
        else None,
        "node_groups": len(cap.node_groups) or None if cap.kind is not CapacityKind.ODCR else None,
        "start_time": cap.start_time if cap.kind is not CapacityKind.CAPACITY_BLOCK else None,
        "end_time": cap.end_time if cap.kind is not CapacityKind.CAPACITY_BLOCK else None,
    }
    out += _keys_set(
        CAPACITY,
        prefix,
        unused,
        f"does not apply to kind {cap.kind.value!r}; remove it or change the kind",
    )
    if cap.reserved_instance_count is not None and w.instance_count > cap.reserved_instance_count:
        out.append(
            _finding(
                CAPACITY,
                f"{w.name}.instance_count",
                w.instance_count,
                f"must not exceed the reservation's {prefix}.reserved_instance_count "
                f"({cap.reserved_instance_count})",
            )
        )
    return out


def reservation_node_groups(cap: CapacityConfig, nodes: int, *, prefix: str) -> list[Finding]:
    """``[[<workload>.capacity.node_groups]]`` of an ODCR pool of ``nodes`` nodes (its largest
    size): one entry per managed node group of the split (EKS: 450 nodes a group), each one
    reservation target that holds its group, instead of the table's own target; and no new
    placement group where a reservation brings its own (``create_placement_group``)."""
    out: list[Finding] = []
    own_groups = [cap.placement_group_arn] + [g.placement_group_arn for g in cap.node_groups]
    if cap.create_placement_group and any(own_groups):
        out.append(
            _finding(
                CAPACITY,
                f"{prefix}.create_placement_group",
                True,
                "cannot be true with a placement_group_arn: a reservation made in a cluster "
                "placement group launches into it, and a second group fails with insufficient "
                "capacity",
                "remove create_placement_group, or the placement_group_arn",
            )
        )
    if not cap.node_groups or cap.kind is not CapacityKind.ODCR:
        return out
    key = f"{prefix}.node_groups"
    for name in ("reservation_id", "resource_group_arn", "placement_group_arn"):
        if getattr(cap, name) is not None:
            out.append(
                _finding(
                    CAPACITY,
                    f"{prefix}.{name}",
                    getattr(cap, name),
                    f"must be unset with {key}: each node group names its own reservation",
                    f"move it into the [[{key}]] tables",
                )
            )
    parts = node_groups_for(nodes)
    sizes = [size[2] for size in split_sizes(nodes, nodes, nodes, parts)]
    if len(cap.node_groups) != parts:
        out.append(
            _finding(
                CAPACITY,
                key,
                len(cap.node_groups),
                f"must list one reservation per managed node group of the pool: {parts} for "
                f"{nodes:,} nodes (EKS allows {NODES_PER_MANAGED_NODE_GROUP.value} nodes a "
                f"group; the groups hold {', '.join(map(str, sizes))} nodes, in this order)",
                f"give {parts} [[{key}]] tables, or change instance_count",
            )
        )
    for index, group in enumerate(cap.node_groups):
        entry = f"{key}[{index}]"
        if (group.reservation_id is None) == (group.resource_group_arn is None):
            out.append(
                _finding(
                    CAPACITY,
                    entry,
                    {
                        "reservation_id": group.reservation_id,
                        "resource_group_arn": group.resource_group_arn,
                    },
                    "needs exactly one of reservation_id ('cr-...') or resource_group_arn",
                )
            )
        entry_ids = _identifiers(
            group, ("reservation_id", "resource_group_arn", "placement_group_arn")
        )
        out += [f.under(f"{entry}.") for f in entry_ids]
        if (
            index < len(sizes)
            and group.instance_count is not None
            and group.instance_count < sizes[index]
        ):
            out.append(
                _finding(
                    CAPACITY,
                    f"{entry}.instance_count",
                    group.instance_count,
                    f"must hold node group {index + 1}'s {sizes[index]} nodes",
                    "give the reservation's real size, or lower instance_count",
                )
            )
    return out


#: The EC2 capacity ARNs of a capacity table (and of each of its node groups), by what they
#: name.
_CAPACITY_ARNS = {"resource_group_arn": "resource group", "placement_group_arn": "placement group"}


def _capacity_arns_at_home(
    cap: CapacityConfig, region: str, account: str | None, prefix: str
) -> list[Finding]:
    """FM315 for a resource group or placement group ARN of another region or account (a
    malformed one has its own finding)."""
    tables = [(prefix, cap)] + [
        (f"{prefix}.node_groups[{index}]", group) for index, group in enumerate(cap.node_groups)
    ]
    out: list[Finding] = []
    for where, table in tables:
        for key, what in _CAPACITY_ARNS.items():
            arn = getattr(table, key)
            if arn is None or capacity_rules.identifier(key, arn):
                continue
            out += workload_rules.capacity_arn_matches(
                arn, region, account, key=f"{where}.{key}", what=what
            )
    return out


def _identifiers(table: object, keys: tuple[str, ...]) -> list[Finding]:
    """The form of each identifier of ``table`` (a capacity table or one of its node groups)
    that is set, in the order of ``keys``."""
    out: list[Finding] = []
    for key in keys:
        value = getattr(table, key)
        if value is not None:
            out += capacity_rules.identifier(key, value)
    return out


def _check_pcs(w: WorkloadConfig) -> list[Finding]:
    """What AWS PCS cannot take: Kubernetes keys (it runs Slurm, no pods), reservations split
    by EKS node group (PCS has one accelerated node group), a Capacity Block of unknown size
    (PCS caps the node group at the block's size, so the size must be known), more nodes than
    a PCS cluster runs."""
    if w.orchestrator is not Orchestrator.PCS:
        return []
    out: list[Finding] = []
    if w.max_pods_per_node is not None:
        out.append(
            _finding(
                PCS_KEY,
                f"{w.name}.max_pods_per_node",
                w.max_pods_per_node,
                "is a Kubernetes (kubelet) setting; 'pcs' runs Slurm and no pods",
                "remove the key, or use orchestrator 'eks' or 'hyperpod-eks'",
            )
        )
    if w.rollout_group is not None:
        out.append(
            _finding(
                PCS_KEY,
                f"{w.name}.rollout.enabled",
                True,
                "the RL rollout group is not built on 'pcs' yet (a second node group and queue)",
                "set rollout.enabled = false, or use orchestrator 'eks' or 'hyperpod-slurm'",
            )
        )
    cap = w.capacity
    if cap.node_groups:
        out.append(
            _finding(
                PCS_KEY,
                f"{w.name}.capacity.node_groups",
                len(cap.node_groups),
                "'pcs' runs the accelerated nodes as one PCS node group on one launch "
                "template, which targets one reservation or one resource group",
                "give reservation_id (one ODCR), or resource_group_arn (a capacity-reservation "
                "resource group of several), instead of [[<workload>.capacity.node_groups]]",
            )
        )
    if cap.kind is CapacityKind.CAPACITY_BLOCK and cap.reserved_instance_count is None:
        out.append(
            _finding(
                PCS_KEY,
                f"{w.name}.capacity.reserved_instance_count",
                None,
                "PCS caps a Capacity Block's node group at the block's size, so 'pcs' needs it",
                "set reserved_instance_count to the block's instance count (aws ec2 "
                "describe-capacity-reservations)",
            )
        )
    most = MAX_NODES[PcsClusterSize.LARGE]
    if w.instance_count + 1 > most:  # the login node counts
        out.append(
            _finding(
                PCS_KEY,
                f"{w.name}.instance_count",
                w.instance_count,
                f"a PCS cluster runs at most {most} nodes, its login node included",
                f"use at most {most - 1} nodes, or two workloads",
            )
        )
    return out


def _check_storage(workload: str, s: StorageConfig) -> list[Finding]:
    if not s.enabled:
        return []
    prefix = f"{workload}.storage"
    out: list[Finding] = []
    explicit = s.storage_capacity_gib is not None or s.throughput_mb_s_per_tib is not None
    if explicit and s.is_sized:
        out.append(
            _text(
                STORAGE,
                f"{prefix}: give either storage_capacity_gib/throughput_mb_s_per_tib or a "
                "sizing request (checkpoint_size_gib or model_parameters_billion), not both",
            )
        )
    if s.checkpoint_size_gib is not None and s.model_parameters_billion is not None:
        out.append(
            _text(
                STORAGE,
                f"{prefix}: give checkpoint_size_gib or model_parameters_billion, not both, got "
                f"{s.checkpoint_size_gib!r} and {s.model_parameters_billion!r}",
            )
        )
    sizing_only = {
        "bytes_per_parameter": s.bytes_per_parameter,
        "checkpoint_write_seconds": s.checkpoint_write_seconds,
        "dataset_size_gib": s.dataset_size_gib,
        "checkpoints_to_keep": s.checkpoints_to_keep,
    }
    if not s.is_sized:
        out += _keys_set(
            STORAGE,
            prefix,
            sizing_only,
            "only applies to a sizing request (set checkpoint_size_gib or "
            "model_parameters_billion)",
        )
    if s.is_sized and s.checkpoint_write_seconds is None:
        out.append(
            _finding(
                STORAGE,
                f"{prefix}.checkpoint_write_seconds",
                None,
                "a sizing request needs the target time to write one checkpoint (e.g. 300)",
            )
        )
    if s.backup_retention_days:
        out.append(
            _finding(
                STORAGE,
                f"{prefix}.backup_retention_days",
                s.backup_retention_days,
                "FSx does not back up file systems linked to S3 by data repository associations "
                "(every file system here is: /datasets and /checkpoints); the data bucket is the "
                "durable copy",
                "set 0 or remove the key",
            )
        )
    out += [
        f.under(f"{prefix}.")
        for f in lustre_settings(
            deployment_type=PROFILE_DEPLOYMENT_TYPE,
            storage_capacity_gib=s.storage_capacity_gib,
            throughput_mb_s_per_tib=s.throughput_mb_s_per_tib,
            metadata_iops=s.metadata_iops,
            efa_enabled=s.efa_enabled and not s.is_sized,
        )
    ]
    if s.bytes_per_parameter is not None and s.checkpoint_size_gib is not None:
        out.append(
            _finding(
                STORAGE,
                f"{prefix}.bytes_per_parameter",
                s.bytes_per_parameter,
                "only applies with model_parameters_billion",
            )
        )
    return out
