"""Rules on one accelerated workload: its instance type (catalogued, EFA where the kind needs
it, offered by HyperPod), its orchestrator and its capacity source.

Training needs EFA on every node (multi-node collectives); inference needs EFA only where a
replica spans nodes (see :mod:`fm_constructs.rules.inference`).
"""

from __future__ import annotations

from fm_constructs.catalog import InstanceSpec, efa_instance_types
from fm_constructs.catalog.lookup import find_instance_type, uncatalogued
from fm_constructs.planning.fsx_sizing import EFA_CONNECTIONS
from fm_constructs.rules.findings import Finding, Severity, define, rule


@rule(
    "FM301",
    "The instance type is not in the library's accelerator catalog.",
    "Fix the spelling (the message suggests the closest names), or choose a GPU/Trainium type "
    "from the catalog.",
)
def catalogued(name: str, *, key: str = "instance_type") -> list[Finding]:
    """``name`` is in the catalog (:func:`fm_constructs.catalog.lookup.find_instance_type`
    gives its spec); otherwise a finding that says why and names the closest types."""
    return [] if find_instance_type(name) is not None else [uncatalogued(name, key=key)]


@rule(
    "FM302",
    "A training workload (pre-training, post-training, the rollout group) needs an EFA-capable "
    "instance type for multi-node collectives.",
    "Choose an EFA-capable type from the list in the message.",
)
def efa_for_training(spec: InstanceSpec, *, key: str = "instance_type") -> list[Finding]:
    if spec.efa_supported:
        return []
    return [
        Finding(
            "FM302",
            Severity.ERROR,
            key,
            spec.name,
            "must support EFA (Elastic Fabric Adapter): training spans nodes, and "
            f"{spec.name!r} has no EFA",
            f"choose one of {', '.join(efa_instance_types())}",
        )
    ]


@rule(
    "FM303",
    "SageMaker HyperPod does not offer the instance type.",
    "Choose a type HyperPod offers, or orchestrator 'eks'.",
)
def offered_by_hyperpod(
    spec: InstanceSpec, orchestrator: str, *, key: str = "instance_type"
) -> list[Finding]:
    if spec.hyperpod_name is not None:
        return []
    return [
        Finding(
            "FM303",
            Severity.ERROR,
            key,
            spec.name,
            f"SageMaker HyperPod does not offer {spec.name!r}",
            f"choose a type HyperPod offers or orchestrator 'eks' (got orchestrator "
            f"{orchestrator!r})",
        )
    ]


@rule(
    "FM315",
    "A capacity ARN (a training plan, a capacity reservation resource group, a placement "
    "group) names another region or account than the platform: HyperPod and EC2 only use "
    "capacity of their own region and account.",
    "Use the training plan, resource group or placement group of platform.region and "
    "platform.account.",
)
def capacity_arn_matches(
    arn: str,
    region: str,
    account: str | None,
    *,
    key: str = "training_plan_arn",
    what: str = "training plan",
) -> list[Finding]:
    """``arn`` (of a ``what``: training plan, resource group, placement group) is of the
    platform's region and, when it is set, account."""
    parts = arn.split(":")
    if len(parts) < 6 or not region:
        return []
    broken: list[tuple[str, str]] = []
    plan_region, plan_account = parts[3], parts[4]
    plan = what == "training plan"
    if plan_region != region:
        broken.append(
            (
                f"must be a {what} of platform.region {region!r} (this one is in {plan_region!r})",
                "buy or pick a plan in the platform's region"
                if plan
                else f"use a {what} in the platform's region",
            )
        )
    if account is not None and plan_account != account:
        broken.append(
            (
                f"must belong to platform.account {account!r} (this one is in {plan_account!r})",
                "use a plan of the deploying account"
                if plan
                else f"use a {what} of the deploying account",
            )
        )
    return [Finding("FM315", Severity.ERROR, key, arn, allowed, fix) for allowed, fix in broken]


@rule(
    "FM316",
    "More nodes would use LNet over EFA to one FSx for Lustre file system than it has EFA "
    "connections (1,024 across all clients; every node takes at least one).",
    "Split the nodes over two workloads with a file system each, or turn EFA off for the file "
    "system (storage.efa_enabled = false, Lustre over TCP).",
)
def fsx_efa_connections(
    efa_nodes: int, *, key: str = "instance_count", value: object = None
) -> list[Finding]:
    if efa_nodes <= EFA_CONNECTIONS:
        return []
    return [
        Finding(
            "FM316",
            Severity.WARNING,
            key,
            efa_nodes if value is None else value,
            f"more nodes (HyperPod Slurm or EKS, AWS PCS, EKS) would mount the EFA-enabled file "
            f"system over EFA (at least one connection each) than its {EFA_CONNECTIONS} EFA "
            f"connections across all clients",
            "split the nodes over two file systems, or set storage.efa_enabled = false",
        )
    ]


MFU = define(
    "FM320",
    "The model FLOPs utilization of a training goal is not a fraction above 0 and at most 1.",
    "Give a fraction such as 0.4 (40 % of the accelerators' peak FLOPS).",
)


def target_mfu(value: float, *, key: str = "target_mfu") -> list[Finding]:
    """The profile's ``target_mfu`` and ``fmc plan --mfu`` read this one range."""
    if 0 < value <= 1:
        return []
    return [MFU.finding(key, value, "must be above 0 and at most 1", "a fraction such as 0.4")]
