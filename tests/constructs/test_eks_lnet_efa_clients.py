"""An EKS workload mounting an EFA-enabled file system sizes its nodes' LNet EFA interfaces
over every EFA node that shares the file system's 1,024 EFA connections, and never over fewer
than its own: a ``file_system_efa_clients`` below the workload's own EFA nodes would let each
node take more interfaces than the file system has connections for them all. HyperPod takes
the larger of the two the same way (``efa_interface_cap`` in
``fm_constructs.orchestration.hyperpod.lifecycle``)."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from fm_constructs.patterns import PretrainingWorkload
from fm_constructs.planning.fsx_sizing import EFA_CONNECTIONS
from fm_constructs.storage import DataBucket
from tests.support import TEST_ENV, imported_eks_cluster, imported_file_system, imported_vpc

NODES = 200  # p5.48xlarge: the FSx guide's 8 interfaces each would need 1,600 connections


def _workload(file_system_efa_clients: int | None) -> PretrainingWorkload:
    stack = cdk.Stack(cdk.App(), "Lnet", env=TEST_ENV)
    vpc = imported_vpc(stack)
    cluster = imported_eks_cluster(stack, vpc)
    file_system = imported_file_system(stack, storage_capacity_gib=4800, efa_enabled=True)
    return PretrainingWorkload(
        stack,
        "Pretraining",
        cluster=cluster,
        subnet=vpc.private_subnets[0],
        file_system=file_system,
        data_bucket=DataBucket.from_data_bucket_attributes(stack, "Data", bucket_name="data"),
        instance_type="p5.48xlarge",
        node_count=NODES,
        file_system_efa_clients=file_system_efa_clients,
    )


@pytest.mark.parametrize(
    ("given", "interfaces"),
    [
        (None, EFA_CONNECTIONS // NODES),  # the workload's own 200 nodes: 5 each
        (400, EFA_CONNECTIONS // 400),  # 200 more nodes elsewhere share it: 2 each
        (10, EFA_CONNECTIONS // NODES),  # fewer than its own: still its own 200
    ],
)
def test_interfaces_are_shared_over_at_least_the_workloads_own_efa_nodes(
    given: int | None, interfaces: int
) -> None:
    groups = _workload(given).workload.all_node_groups
    assert sum(g.max_node_count for g in groups) == NODES
    assert {g.lnet_efa_interfaces for g in groups} == {interfaces}
    # Within the file system's connections, whatever was given.
    assert sum(g.max_node_count * g.lnet_efa_interfaces for g in groups) <= EFA_CONNECTIONS
