"""GpuClusterVpc runs the profile's zone and CIDR rules on its own arguments."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from fm_constructs import FmValidationError, GpuClusterVpc
from tests.support import TEST_ENV


def test_zones_of_another_region_and_a_bad_cidr_are_reported_with_the_path() -> None:
    stack = cdk.Stack(cdk.App(), "Net", env=TEST_ENV)
    with pytest.raises(FmValidationError) as raised:
        GpuClusterVpc(
            stack, "Vpc", availability_zones=["eu-west-1a", "us-east-1g"], cidr="10.0.0.0/8"
        )
    error = raised.value
    assert error.context == "GpuClusterVpc Net/Vpc"
    assert error.codes == ("FM105", "FM102", "FM102")
    assert "must be a zone of the stack's region 'us-east-1'" in str(error)


def test_a_node_group_size_given_as_a_string_is_a_clear_error() -> None:
    from fm_constructs import EfaNodeGroup, GpuEksCluster
    from tests.support import imported_vpc

    stack = cdk.Stack(cdk.App(), "Ng", env=TEST_ENV)
    vpc = imported_vpc(stack)
    cluster = GpuEksCluster.from_gpu_eks_cluster_attributes(
        stack, "Cluster", cluster_name="gpu", vpc=vpc, cluster_security_group_id="sg-1"
    )
    with pytest.raises(FmValidationError, match=r"node_count: must be a whole number") as raised:
        EfaNodeGroup(
            stack,
            "Nodes",
            cluster=cluster,
            instance_type="p5.48xlarge",
            subnet=vpc.private_subnets[0],
            node_count="2",  # type: ignore[arg-type]
        )
    assert set(raised.value.codes) == {"FM832"}  # the node group's own code, not FM000


def test_block_errors_name_the_class_and_the_construct_path() -> None:
    """A user with several launch templates or file systems learns which one is wrong."""
    from fm_constructs import DataBucket, GpuLaunchTemplate, LustreFileSystem
    from tests.support import imported_vpc

    stack = cdk.Stack(cdk.App(), "Team", env=TEST_ENV)
    scope = stack
    vpc = imported_vpc(scope)
    data = DataBucket.from_data_bucket_attributes(scope, "Data", bucket_name="team-data")
    with pytest.raises(FmValidationError) as template_error:
        GpuLaunchTemplate(scope, "Trainers", instance_type="p5.96xlarge", vpc=vpc)
    assert template_error.value.context == "GpuLaunchTemplate Team/Trainers"
    with pytest.raises(FmValidationError) as fs_error:
        LustreFileSystem(
            scope,
            "Scratch",
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            data_bucket=data,
            storage_capacity_gib=1000,
        )
    assert fs_error.value.context == "LustreFileSystem Team/Scratch"
    assert "storage_capacity_gib" in str(fs_error.value)
    assert set(fs_error.value.codes) == {"FM822"}
    with pytest.raises(FmValidationError) as bucket_error:
        DataBucket.from_data_bucket_attributes(scope, "Bad", bucket_name="s3://team-data")
    assert set(bucket_error.value.codes) == {"FM821"}


def test_node_subnet_blocks_are_checked_like_secondary_blocks() -> None:
    stack = cdk.Stack(cdk.App(), "Nodes", env=TEST_ENV)
    with pytest.raises(FmValidationError) as raised:
        GpuClusterVpc(
            stack,
            "Vpc",
            availability_zones=["us-east-1a", "us-east-1b"],
            pod_cidr="100.64.0.0/16",
            pod_subnet_zone="us-east-1a",
            # overlaps the primary block; overlaps the pod CIDR
            node_subnet_cidrs=["10.0.0.0/16", "100.64.0.0/16"],
            node_subnet_zone="us-east-1c",
        )
    message = str(raised.value)
    assert "node_subnet_cidrs[0]" in message and "must not overlap platform.vpc_cidr" in message
    assert "node_subnet_cidrs[1]" in message and "must not overlap the pod CIDR" in message
    assert "node_subnet_zone" in message


def test_node_subnets_span_their_blocks_in_the_zone_they_are_given() -> None:
    stack = cdk.Stack(cdk.App(), "Wide", env=TEST_ENV)
    vpc = GpuClusterVpc(
        stack,
        "Vpc",
        availability_zones=["us-east-1a", "us-east-1b"],
        node_subnet_cidrs=["10.1.0.0/16", "10.2.0.0/16"],
        node_subnet_zone="us-east-1a",
    )
    assert [s.ipv4_cidr_block for s in vpc.node_subnets] == ["10.1.0.0/16", "10.2.0.0/16"]
    assert {s.availability_zone for s in vpc.node_subnets} == {"us-east-1a"}
    private = vpc.private_subnet("us-east-1a")
    assert {s.route_table.route_table_id for s in vpc.node_subnets} == {
        private.route_table.route_table_id
    }
