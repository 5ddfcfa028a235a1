"""The EKS workload rule called on plain arguments, without a construct or a synthesis."""

from __future__ import annotations

from fm_constructs.rules.constructs import EKS_WORKLOAD
from fm_constructs.rules.eks_workload import PoolGroups, eks_workload

_OK: dict[str, object] = {
    "name": "pretraining",
    "hyperpod_instance_type": None,
    "pools": [PoolGroups("gpu", 4)],
    "subnet_given": True,
    "data_prefixes": ["checkpoints/"],
    "read_prefixes": ["datasets/"],
    "data_bucket_given": True,
    "node_group_subnets": {},
}


def test_a_valid_workload_has_no_findings() -> None:
    assert eks_workload(**_OK) == []  # type: ignore[arg-type]
    hyperpod = {**_OK, "hyperpod_instance_type": "ml.p5.48xlarge", "pools": []}
    assert eks_workload(**hyperpod) == []  # type: ignore[arg-type]


def test_workload_findings_carry_its_code_and_keys() -> None:
    found = eks_workload(
        **{  # type: ignore[arg-type]
            **_OK,
            "name": "bad name!",
            "hyperpod_instance_type": "ml.p5.48xlarge",
            "pools": [PoolGroups("gpu", 4), PoolGroups("gpu", 4)],
            "data_prefixes": ["data/", "no-slash"],
            "read_prefixes": ["data/sets/"],
            "data_bucket_given": False,
            "node_group_subnets": {"cpu": 1},
        }
    )
    assert {f.code for f in found} == {EKS_WORKLOAD}
    assert [f.key for f in found] == [
        "name",
        "hyperpod_nodes",
        "node_pools",
        "data_prefixes[1]",
        "data_bucket",
        "read_prefixes",
        "node_group_subnets",
    ]


def test_node_pools_need_a_subnet_and_one_subnet_and_reservation_per_group() -> None:
    (subnet,) = eks_workload(**{**_OK, "subnet_given": False})  # type: ignore[arg-type]
    assert subnet.message() == "subnet: is needed for the node pools' node groups, got None"
    (none,) = eks_workload(**{**_OK, "pools": []})  # type: ignore[arg-type]
    assert none.key == "node_pools"
    found = eks_workload(
        **{  # type: ignore[arg-type]
            **_OK,
            "pools": [PoolGroups("gpu", 4, reservations=2)],
            "node_group_subnets": {"gpu": 3},
        }
    )
    assert [(f.key, f.value) for f in found] == [
        ("node_group_subnets['gpu']", 3),
        ("node_pools['gpu'].capacity.node_groups", 2),
    ]
    assert found[0].allowed.startswith("must list one subnet per managed node group of the pool")
