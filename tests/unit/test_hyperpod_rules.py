"""The HyperPod instance-group rules (rules/hyperpod.py) on plain arguments, with no construct:
each group's own arguments, what its orchestrator accepts, and the group list as a whole; a
deploy-time token (None) is left unchecked. The construct reports the same lines."""

from __future__ import annotations

import dataclasses

import pytest

from fm_constructs.domain.hyperpod import DeepHealthCheck, SlurmNodeType
from fm_constructs.domain.kinds import CapacityKind, Orchestrator
from fm_constructs.domain.users import ClusterUser
from fm_constructs.errors import FmValidationError
from fm_constructs.rules import hyperpod
from fm_constructs.rules.compute import Placement
from fm_constructs.rules.constructs import HYPERPOD_CLUSTER
from fm_constructs.rules.hyperpod import (
    GroupArguments,
    group_layout,
    hyperpod_instance_type,
    instance_group,
    scheduled_update,
)

CONTROLLER = GroupArguments(
    name="controller",
    instance_type="ml.m5.2xlarge",
    instance_count=1,
    slurm_node_type=SlurmNodeType.CONTROLLER,
)
WORKERS = GroupArguments(name="workers", instance_type="p5.48xlarge", instance_count=4)
LOGIN = dataclasses.replace(
    CONTROLLER, name="login", instance_type="ml.m5.4xlarge", slurm_node_type=SlurmNodeType.LOGIN
)


def _lines(group: GroupArguments, *, slurm: bool = True) -> list[str]:
    return [f.line() for f in instance_group(group, slurm=slurm)]


def test_a_valid_slurm_layout_has_no_findings() -> None:
    assert group_layout([CONTROLLER, WORKERS], slurm=True) == []
    assert group_layout([WORKERS], slurm=False) == []


def test_group_arguments_out_of_bounds() -> None:
    group = dataclasses.replace(
        WORKERS,
        name="-workers",
        instance_count=0,
        threads_per_core=4,
        ebs_volume=True,
        ebs_volume_size_gib=20000,
        image_id="ami-1",
    )
    assert _lines(group) == [
        "instance_groups['-workers'].name: must be 1-63 letters, digits and hyphens, starting "
        "and ending with a letter or digit, got '-workers' [FM841]",
        "instance_groups['-workers'].instance_count: a worker group needs between 1 and 6758 "
        "instances (a whole number), got 0 [FM841]",
        "instance_groups['-workers'].threads_per_core: must be 1 (multithreading off) or 2 "
        "(on), got 4 [FM841]",
        "instance_groups['-workers'].ebs_volume_size_gib: must be 1-16384, got 20000 [FM841]",
        "instance_groups['-workers'].image_id: must be an AMI id such as "
        "ami-0123456789abcdef0, got 'ami-1' [FM841]",
    ]


def test_unknown_values_are_left_to_deploy_time() -> None:
    """None stands for a token: no count, size or AMI rule fires on it."""
    group = GroupArguments(
        name="workers",
        instance_type="p5.48xlarge",
        instance_count=None,
        ebs_volume=True,
        ebs_volume_size_gib=None,
        deep_health_checks=[DeepHealthCheck.INSTANCE_CONNECTIVITY],
    )
    assert _lines(group) == []


def test_an_instance_type_hyperpod_does_not_offer() -> None:
    (finding,) = hyperpod_instance_type("m5.weird", key="instance_groups['w'].instance_type")
    assert finding.code == "FM841" and finding.value == "m5.weird"
    assert "ml.p5.48xlarge" in finding.allowed and "ml.m5.2xlarge" in finding.allowed
    assert hyperpod_instance_type("ml.t3.medium") == [] == hyperpod_instance_type("p5.48xlarge")
    # an unknown type skips the rules that need its spec (health checks, capacity)
    group = GroupArguments(
        name="w",
        instance_type="m5.weird",
        instance_count=1,
        deep_health_checks=["Bogus"],
        capacity_kind=CapacityKind.TRAINING_PLAN,
    )
    assert [f.key for f in instance_group(group, slurm=True)] == [
        "instance_groups['w'].instance_type"
    ]


def test_health_checks_need_accelerators_efa_and_two_instances() -> None:
    cpu = dataclasses.replace(LOGIN, deep_health_checks=[DeepHealthCheck.INSTANCE_STRESS])
    assert "use them on GPU/Trainium groups only" in _lines(cpu)[0]
    lone = GroupArguments(
        name="w",
        instance_type="p5.48xlarge",
        instance_count=1,
        deep_health_checks=[DeepHealthCheck.INSTANCE_CONNECTIVITY],
    )
    assert "needs at least 2 in the group" in _lines(lone)[0]


def test_capacity_of_a_hyperpod_group() -> None:
    odcr = GroupArguments(
        name="w", instance_type="p5.48xlarge", instance_count=2, capacity_kind=CapacityKind.ODCR
    )
    assert "cannot use EC2 capacity reservations" in _lines(odcr)[0]
    plan_on_cpu = GroupArguments(
        name="c",
        instance_type="ml.m5.2xlarge",
        instance_count=1,
        slurm_node_type=SlurmNodeType.CONTROLLER,
        capacity_kind=CapacityKind.TRAINING_PLAN,
        training_plan_arn="arn:plan",
        capacity_placement=Placement(count=0),
    )
    assert _lines(plan_on_cpu) == [
        "instance_groups['c'].capacity: a training plan reserves accelerated capacity; "
        "ml.m5.2xlarge is a CPU type, so leave capacity unset for this group, got 'arn:plan' "
        "[FM841]",
        "instance_groups['c'].capacity: node_count: 1 nodes exceed the training-plan "
        "reservation of 0 instances; lower the node count or enlarge the reservation, got 1 "
        "[FM841]",
    ]


def test_what_each_orchestrator_accepts() -> None:
    labelled = GroupArguments(
        name="w",
        instance_type="p5.48xlarge",
        instance_count=2,
        kubernetes_labels={"team": "a"},
        partition_name="gpu",
    )
    (slurm,) = _lines(labelled, slurm=True)
    assert "apply to EKS-orchestrated clusters only" in slurm
    assert _lines(labelled, slurm=False) == [
        "instance_groups['w'].partition_name: is a Slurm setting; remove it for EKS, got 'gpu' "
        "[FM841]"
    ]
    assert "have worker groups only" in _lines(CONTROLLER, slurm=False)[0]


def test_the_group_list_as_a_whole() -> None:
    login = dataclasses.replace(LOGIN, instance_count=2)
    assert [f.message() for f in group_layout([login, login], slurm=True)] == [
        "instance_groups: group names must be unique, got ['login']",
        "instance_groups: a Slurm cluster needs exactly one controller group "
        "(slurm_node_type=CONTROLLER), got []",
        "instance_groups: a Slurm cluster takes at most one login group, got ['login', 'login']",
        "instance_groups['login'].instance_count: the Slurm login group runs exactly one "
        "instance, got 2",
        "instance_groups['login'].instance_count: the Slurm login group runs exactly one "
        "instance, got 2",
        "instance_groups: the cluster needs at least one worker group with instances; got "
        "groups ['login', 'login']",
    ]
    assert [f.message() for f in group_layout([], slurm=False)] == [
        "instance_groups: a cluster needs at least one instance group, got []",
        "instance_groups: the cluster needs at least one worker group with instances; got "
        "groups []",
    ]


def test_scheduled_update_bounds() -> None:
    assert scheduled_update("cron(0 4 ? * SUN *)", 20, 300) == []
    assert scheduled_update(None, 20, 300) == []  # a token
    keys = [f.key for f in scheduled_update("weekly", 0, 7200, prefix="g.")]
    assert keys == [
        "g.scheduled_update.cron",
        "g.scheduled_update.batch_percentage",
        "g.scheduled_update.wait_interval_seconds",
    ]


def test_the_construct_reports_the_rules_findings() -> None:
    from fm_constructs.orchestration.hyperpod import InstanceGroup, check_layout

    group = InstanceGroup(name="workers", instance_type="p5.48xlarge", instance_count=0)
    rules = instance_group(group.rule_arguments(), slurm=False)
    assert check_layout([group], Orchestrator.HYPERPOD_EKS) == rules
    with pytest.raises(FmValidationError, match=r"instance_type: must be an instance type"):
        InstanceGroup(name="w", instance_type="m5.weird").spec  # noqa: B018


_CLUSTER: dict[str, object] = {
    "orchestrator": Orchestrator.HYPERPOD_SLURM,
    "eks_cluster_given": False,
    "eks_kubernetes_version": None,
    "eks_gpu_zone": None,
    "subnet_zone": "us-east-1a",
    "group_reservation_zones": [("workers", CapacityKind.CAPACITY_BLOCK, "us-east-1a")],
    "cluster_name": "training",
    "lustre_mount_point": "/fsx",
    "users": [],
    "lustre_given": True,
}


def test_a_valid_hyperpod_cluster_has_no_findings() -> None:
    assert hyperpod.hyperpod_cluster(**_CLUSTER) == []  # type: ignore[arg-type]


def test_hyperpod_cluster_arguments() -> None:
    found = hyperpod.hyperpod_cluster(
        **{  # type: ignore[arg-type]
            **_CLUSTER,
            "orchestrator": Orchestrator.HYPERPOD_EKS,
            "eks_gpu_zone": "us-east-1b",
            "group_reservation_zones": [("workers", CapacityKind.ODCR, "us-east-1c")],
            "cluster_name": "-bad-",
            "lustre_mount_point": "fsx",
            "users": [ClusterUser(name="alice", uid=2001)],
        }
    )
    assert {f.code for f in found} == {HYPERPOD_CLUSTER}
    assert [f.key or f.allowed.split(":")[0] for f in found] == [
        "eks_cluster",
        "subnet",
        "instance_groups['workers'].capacity",
        "cluster_name",
        "lustre_mount_point",
        "users",
    ]
    assert found[2].message() == (
        "instance_groups['workers'].capacity: subnet_availability_zone: the odcr reservation is "
        "in us-east-1c; nodes must launch in a subnet of that zone, got 'us-east-1a'"
    )


def test_hyperpod_cluster_eks_version_and_slurm_users_need_lustre() -> None:
    (version,) = hyperpod.hyperpod_cluster(
        **{  # type: ignore[arg-type]
            **_CLUSTER,
            "orchestrator": Orchestrator.HYPERPOD_EKS,
            "eks_cluster_given": True,
            "eks_kubernetes_version": "1.20",
        }
    )
    assert version.message().startswith("eks_cluster.kubernetes_version: SageMaker HyperPod")
    slurm_eks, users = hyperpod.hyperpod_cluster(
        **{  # type: ignore[arg-type]
            **_CLUSTER,
            "eks_cluster_given": True,
            "lustre_given": False,
            "users": [ClusterUser(name="alice", uid=2001)],
        }
    )
    assert (slurm_eks.key, slurm_eks.value) == ("eks_cluster", "<GpuEksCluster>")
    assert "need lustre" in users.allowed


def test_an_imported_cluster_name() -> None:
    assert hyperpod.imported_cluster_name("training") == []
    assert hyperpod.imported_cluster_name("${Token[N.1]}") == []
    (bad,) = hyperpod.imported_cluster_name("-training")
    assert (bad.code, bad.key) == (HYPERPOD_CLUSTER, "cluster_name")
