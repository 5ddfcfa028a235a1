"""The AWS PCS rules called on plain arguments, without a construct or a synthesis."""

from __future__ import annotations

from fm_constructs.domain.kinds import CapacityKind
from fm_constructs.planning.pcs_limits import PcsClusterSize
from fm_constructs.rules import pcs
from fm_constructs.rules.constructs import PCS

_GROUP: dict[str, object] = {
    "group_name": "gpu",
    "counts": (0, 4),
    "ami_id": "ami-0123456789abcdef0",
    "capacity_kind": CapacityKind.CAPACITY_BLOCK,
    "training_plan_arn": None,
    "capacity_instance_count": 4,
}


def test_valid_pcs_arguments_have_no_findings() -> None:
    assert (
        pcs.pcs_cluster(
            node_count=4,
            size=None,
            cluster_name="training",
            slurm_settings=["Prolog"],
            scale_down_idle_seconds=600,
        )
        == []
    )
    assert pcs.compute_node_group(**_GROUP) == []  # type: ignore[arg-type]
    assert pcs.queue(node_group_count=1, queue_name="gpu") == []
    assert pcs.imported_id("cluster_id", "pcs_abc", "must be the cluster's id (pcs_...)") == []


def test_pcs_cluster_findings() -> None:
    found = pcs.pcs_cluster(
        node_count=0,
        size=None,
        cluster_name="",
        slurm_settings=["MaxNodeCount", "Prolog"],
        scale_down_idle_seconds=0,
    )
    assert {f.code for f in found} == {PCS}
    assert [f.key for f in found] == [
        "node_count",
        "cluster_name",
        "slurm_settings",
        "scale_down_idle_seconds",
    ]
    (too_small,) = pcs.pcs_cluster(
        node_count=10_000,
        size=PcsClusterSize.SMALL,
        cluster_name=None,
        slurm_settings=[],
        scale_down_idle_seconds=600,
    )
    assert too_small.key == "node_count"
    assert too_small.fix == "split the nodes over two clusters"


def test_a_size_too_small_for_the_nodes_names_the_size_that_fits() -> None:
    (size,) = pcs.pcs_cluster(
        node_count=1000,
        size=PcsClusterSize.SMALL,
        cluster_name=None,
        slurm_settings=[],
        scale_down_idle_seconds=600,
    )
    assert (size.key, size.value) == ("size", "SMALL")
    assert size.fix.endswith("or leave size unset")


def test_compute_node_group_and_queue_findings() -> None:
    found = pcs.compute_node_group(
        **{  # type: ignore[arg-type]
            **_GROUP,
            "group_name": "",
            "counts": (6, 5),
            "ami_id": "ami-1",
        }
    )
    assert [f.key for f in found] == ["min_count", "group_name", "ami_id", "max_count"]
    (plan,) = pcs.compute_node_group(
        **{**_GROUP, "capacity_kind": CapacityKind.TRAINING_PLAN, "training_plan_arn": "arn"}  # type: ignore[arg-type]
    )
    assert plan.key == "capacity"
    assert [f.key for f in pcs.queue(node_group_count=0, queue_name="")] == [
        "node_groups",
        "queue_name",
    ]
    (empty,) = pcs.imported_id("compute_node_group_id", "", "must be the node group's id")
    assert empty.message() == "compute_node_group_id: must be the node group's id, got ''"
