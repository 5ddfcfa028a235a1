"""The constructs check what the profile checks when a library user calls them directly: each
bad argument is an FmValidationError under the construct's class and path, with the argument,
the value and a code, never a TypeError or an error that names no construct; a default the
construct picks for a missing argument is said, not silent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Annotations, Match

from fm_constructs.catalog import get_instance_type
from fm_constructs.compute import CapacitySource, GpuLaunchTemplate, OnDemandCapacityReservation
from fm_constructs.domain.kinds import Orchestrator
from fm_constructs.errors import FmValidationError
from fm_constructs.network import GpuClusterVpc
from fm_constructs.orchestration import EfaNodeGroup, GpuEksCluster
from fm_constructs.orchestration.hyperpod import HyperPodCluster, InstanceGroup
from fm_constructs.patterns import HyperPodAcceleratedWorkload
from fm_constructs.planning.fsx_sizing import DEFAULT_STORAGE_CAPACITY_GIB
from fm_constructs.storage import DataBucket, LustreFileSystem
from tests.support import TEST_ENV, imported_vpc, plain_eks_cluster


def _stack(env: cdk.Environment | None = TEST_ENV) -> cdk.Stack:
    return cdk.Stack(cdk.App(), "S", env=env)


def _vpc(**kwargs: Any) -> Callable[[], object]:
    return lambda: GpuClusterVpc(_stack(), "Network", **kwargs)


def _agnostic_vpc(**kwargs: Any) -> Callable[[], object]:
    """A stack without a region: the zones cannot be checked against it, only with each
    other."""
    return lambda: GpuClusterVpc(_stack(None), "Network", **kwargs)


def _one_zone_cluster() -> object:
    stack = _stack()
    network = GpuClusterVpc(stack, "Network", availability_zones=["us-east-1a"])
    return GpuEksCluster(stack, "Cluster", vpc=network.vpc)


def _node_group(**kwargs: Any) -> Callable[[], object]:
    def build() -> object:
        stack = _stack()
        vpc = imported_vpc(stack)
        cluster = plain_eks_cluster(stack, vpc)
        arguments = {"instance_type": "p5.48xlarge", "node_count": 2, **kwargs}
        return EfaNodeGroup(
            stack, "Nodes", cluster=cluster, subnet=vpc.private_subnets[0], **arguments
        )

    return build


def _launch_template(instance_type: str) -> Callable[[], object]:
    return lambda: GpuLaunchTemplate(_stack(), "LaunchTemplate", instance_type=instance_type)


def _reservation(**kwargs: Any) -> Callable[[], object]:
    arguments = {
        "instance_type": "p5.48xlarge",
        "availability_zone": "us-east-1a",
        "instance_count": 2,
        **kwargs,
    }
    return lambda: OnDemandCapacityReservation(_stack(), "Reservation", **arguments)


def _hyperpod_workers(instance_count: object) -> object:
    stack = _stack()
    vpc = imported_vpc(stack)
    group = InstanceGroup(
        name="workers", instance_type="p5.48xlarge", instance_count=instance_count
    )
    return HyperPodCluster(
        stack, "HyperPod", vpc=vpc, subnet=vpc.private_subnets[0], instance_groups=[group]
    )


def _hyperpod_eks_workload(instance_type: str) -> object:
    stack = _stack()
    network = GpuClusterVpc(stack, "Network", availability_zones=["us-east-1a", "us-east-1b"])
    return HyperPodAcceleratedWorkload(
        stack,
        "Workload",
        vpc=network.vpc,
        gpu_subnet=network.vpc.private_subnets[0],
        orchestrator=Orchestrator.HYPERPOD_EKS,
        instance_type=instance_type,
        node_count=2,
    )


#: (case, build, construct class and path, code, argument, a fragment of the line)
BAD_ARGUMENTS: list[tuple[str, Callable[[], object], str, str, str, str]] = [
    (
        "vpc-zones-of-another-region",
        _vpc(availability_zones=["eu-west-1a", "eu-west-1b"]),
        "GpuClusterVpc S/Network",
        "FM102",
        "availability_zones[0]",
        "must be a zone of the stack's region 'us-east-1'",
    ),
    (
        "vpc-zone-letter-the-region-lacks",
        _vpc(availability_zones=["us-east-1a", "us-east-1g"]),
        "GpuClusterVpc S/Network",
        "FM102",
        "availability_zones[1]",
        "us-east-1f",
    ),
    (
        "vpc-zones-as-one-string",
        _vpc(availability_zones="us-east-1a"),
        "GpuClusterVpc S/Network",
        "FM801",
        "availability_zones",
        "must be a list of zone names, such as ['us-east-1a']",
    ),
    (
        "vpc-zones-of-two-regions-without-a-stack-region",
        _agnostic_vpc(availability_zones=["us-east-1a", "eu-west-1b"]),
        "GpuClusterVpc S/Network",
        "FM801",
        "availability_zones",
        "must all be zones of one region (these span eu-west-1, us-east-1)",
    ),
    (
        "vpc-zone-id-without-a-stack-region",
        _agnostic_vpc(availability_zones=["use1-az1", "use1-az2"]),
        "GpuClusterVpc S/Network",
        "FM801",
        "availability_zones[0]",
        "must be an availability zone name such as 'us-east-1a'",
    ),
    (
        "vpc-cidr-not-a-string",
        _vpc(availability_zones=["us-east-1a", "us-east-1b"], cidr=16),
        "GpuClusterVpc S/Network",
        "FM105",
        "cidr",
        "must be a string such as '10.0.0.0/16'",
    ),
    (
        "vpc-cidr-too-large",
        _vpc(availability_zones=["us-east-1a", "us-east-1b"], cidr="10.0.0.0/12"),
        "GpuClusterVpc S/Network",
        "FM105",
        "cidr",
        "must have a prefix between /16 and /24",
    ),
    (
        "eks-cluster-in-a-one-zone-vpc",
        _one_zone_cluster,
        "GpuEksCluster S/Cluster",
        "FM831",
        "vpc",
        "at least two availability zones",
    ),
    (
        "node-count-as-a-string",
        _node_group(node_count="2"),
        "EfaNodeGroup S/Nodes",
        "FM832",
        "node_count",
        "must be a whole number (an int, not a string)",
    ),
    (
        "reservation-count-as-a-string",
        _reservation(instance_count="2"),
        "OnDemandCapacityReservation S/Reservation",
        "FM812",
        "instance_count",
        "must be a whole number from 1 to",
    ),
    (
        "reservation-type-not-in-the-catalog",
        _reservation(instance_type="p9.48xlarge"),
        "OnDemandCapacityReservation S/Reservation",
        "FM301",
        "instance_type",
        "did you mean 'p5.48xlarge'",
    ),
    (
        "capacity-count-as-a-string",
        lambda: CapacitySource.odcr("cr-0123456789abcdef0", instance_count="2"),
        "CapacitySource",
        "FM811",
        "instance_count",
        "must be a whole number of at least 1",
    ),
    (
        "hyperpod-count-as-a-string",
        lambda: _hyperpod_workers("2"),
        "HyperPodCluster S/HyperPod",
        "FM841",
        "instance_groups['workers'].instance_count",
        "instances (a whole number), got '2'",
    ),
    (
        "node-group-type-not-in-the-catalog",
        _node_group(instance_type="p9.96xlarge"),
        "EfaNodeGroup S/Nodes",
        "FM301",
        "instance_type",
        "did you mean",
    ),
    (
        "node-group-type-without-efa",
        _node_group(instance_type="g6e.xlarge"),
        "EfaNodeGroup S/Nodes",
        "FM302",
        "instance_type",
        "must support EFA",
    ),
    (
        "hyperpod-workload-type-not-in-the-catalog",
        lambda: _hyperpod_eks_workload("p9.96xlarge"),
        "HyperPodAcceleratedWorkload S/Workload",
        "FM301",
        "instance_type",
        "did you mean",
    ),
    (
        "launch-template-type-not-in-the-catalog",
        _launch_template("p9.96xlarge"),
        "GpuLaunchTemplate S/LaunchTemplate",
        "FM301",
        "instance_type",
        "did you mean",
    ),
]


@pytest.mark.parametrize(
    ("case", "build", "where", "code", "argument", "fragment"),
    BAD_ARGUMENTS,
    ids=[row[0] for row in BAD_ARGUMENTS],
)
def test_a_bad_argument_is_reported_under_the_construct(
    case: str,
    build: Callable[[], object],
    where: str,
    code: str,
    argument: str,
    fragment: str,
) -> None:
    with pytest.raises(FmValidationError) as raised:
        build()
    error = raised.value
    assert error.context == where, f"{case}: {error}"
    matching = [f for f in error.findings if f.key == argument and f.code == code]
    assert matching, f"{case}: {argument} [{code}] not in {error}"
    assert fragment in matching[0].line(), matching[0].line()
    assert str(error).startswith(f"{where}: ")


def test_a_string_of_zones_is_one_line_not_one_per_letter() -> None:
    with pytest.raises(FmValidationError) as raised:
        GpuClusterVpc(_stack(), "Network", availability_zones="us-east-1a")
    assert len(raised.value.findings) == 1, raised.value


def test_zones_of_one_region_need_no_stack_region() -> None:
    vpc = GpuClusterVpc(_stack(None), "Network", availability_zones=["eu-west-1a", "eu-west-1b"])
    assert vpc.vpc.availability_zones == ["eu-west-1a", "eu-west-1b"]


def test_a_two_zone_vpc_takes_an_eks_cluster() -> None:
    stack = _stack()
    network = GpuClusterVpc(stack, "Network", availability_zones=["us-east-1a", "us-east-1b"])
    assert GpuEksCluster(stack, "Cluster", vpc=network.vpc).kubernetes_version


def test_a_catalog_lookup_outside_a_construct_names_the_catalog() -> None:
    with pytest.raises(FmValidationError) as raised:
        get_instance_type("p9.96xlarge")
    assert raised.value.context == "instance catalog"
    assert str(raised.value).startswith("instance catalog: instance_type: ")


def _size_infos(**size: Any) -> list[str]:
    """The info messages about its size of a LustreFileSystem given ``size``."""
    stack = _stack()
    vpc = imported_vpc(stack)
    LustreFileSystem(
        stack,
        "Fsx",
        vpc=vpc,
        subnet=vpc.private_subnets[0],
        data_bucket=DataBucket(stack, "Data"),
        **size,
    )
    found = Annotations.from_stack(stack).find_info(
        "/S/Fsx", Match.string_like_regexp("No storage_capacity_gib or sizing")
    )
    return [str(message.entry.data) for message in found]


def test_an_unsized_file_system_says_which_size_it_takes() -> None:
    """Without storage_capacity_gib or sizing the file system is the smallest one; the
    synthesis says so and how to size it."""
    (info,) = _size_infos()
    assert info.startswith(f"No storage_capacity_gib or sizing: {DEFAULT_STORAGE_CAPACITY_GIB} GiB")
    assert "sizing=FsxSizingRequest" in info


def test_a_sized_file_system_says_nothing_of_its_size() -> None:
    assert _size_infos(storage_capacity_gib=2400) == []


def test_zones_known_only_at_deploy_time_are_not_checked() -> None:
    stack = _stack(None)
    vpc = GpuClusterVpc(stack, "Network", availability_zones=cdk.Fn.get_azs())
    assert vpc.vpc is not None
