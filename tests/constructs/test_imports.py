"""Every resource a user may already have can be imported (``from_..._attributes``, returning
an interface) and used where the library's own construct goes."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template

from fm_constructs import (
    DataBucket,
    EfaSecurityGroup,
    FmValidationError,
    GpuEksCluster,
    HyperPodCluster,
    IDataBucket,
    IHyperPodCluster,
    ILustreFileSystem,
    IPrometheusWorkspace,
    LustreFileSystem,
    PrometheusWorkspace,
)
from tests.support import TEST_ENV, imported_vpc


def _stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Consumer", env=TEST_ENV)


def test_imports_return_the_interfaces() -> None:
    stack = _stack()
    vpc = imported_vpc(stack)
    fs = LustreFileSystem.from_lustre_file_system_attributes(
        stack,
        "Fs",
        file_system_id="fs-0123456789abcdef0",
        dns_name="fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group_ids=["sg-0fs"],
        storage_capacity_gib=2400,
    )
    cluster = GpuEksCluster.from_gpu_eks_cluster_attributes(
        stack, "Cluster", cluster_name="gpu", vpc=vpc, cluster_security_group_id="sg-0cluster"
    )
    hyperpod = HyperPodCluster.from_hyperpod_cluster_attributes(
        stack, "HyperPod", cluster_name="train", security_group_ids=["sg-0nodes"]
    )
    bucket = DataBucket.from_data_bucket_attributes(stack, "Data", bucket_name="my-data")
    workspace = PrometheusWorkspace.from_prometheus_workspace_attributes(
        stack, "Amp", workspace_id="ws-12345678-abcd-1234-abcd-123456789012"
    )
    efa = EfaSecurityGroup.from_efa_security_group_attributes(
        stack, "Efa", security_group_id="sg-0efa"
    )
    assert isinstance(fs, ILustreFileSystem)
    assert cluster.cluster_name == "gpu" and cluster.vpc.vpc_id == vpc.vpc_id
    assert isinstance(hyperpod, IHyperPodCluster)
    assert isinstance(bucket, IDataBucket)
    assert isinstance(workspace, IPrometheusWorkspace)
    assert efa.security_group_id == "sg-0efa"
    assert "fs-0123456789abcdef0.fsx.us-east-1.amazonaws.com@tcp:/abcdefgh" in fs.mount_command()
    (pv, pvc) = fs.kubernetes_static_volume()
    assert pv["spec"]["csi"]["volumeHandle"] == "fs-0123456789abcdef0"
    assert pvc["kind"] == "PersistentVolumeClaim"

    # Clients of an imported file system are allowed into its security group.
    fs.connections.allow_default_port_from(hyperpod)
    template = Template.from_stack(stack)
    template.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {"GroupId": "sg-0fs", "FromPort": 988, "SourceSecurityGroupId": "sg-0nodes"},
    )
    assert stack.resolve(hyperpod.cluster_arn) == {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, ":sagemaker:us-east-1:111122223333:cluster/train"],
        ]
    } or "cluster/train" in str(stack.resolve(hyperpod.cluster_arn))
    # No resource is created for the imports themselves.
    assert template.find_resources("AWS::FSx::FileSystem") == {}
    assert template.find_resources("AWS::EKS::Cluster") == {}
    assert template.find_resources("AWS::SageMaker::Cluster") == {}


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (
            lambda s: LustreFileSystem.from_lustre_file_system_attributes(
                s, "Fs", file_system_id="x", dns_name="", mount_name="m", security_group_ids=[]
            ),
            "file_system_id",
        ),
        (
            lambda s: HyperPodCluster.from_hyperpod_cluster_attributes(
                s, "Hp", cluster_name="not a name"
            ),
            "cluster_name",
        ),
        (
            lambda s: GpuEksCluster.from_gpu_eks_cluster_attributes(
                s, "C", cluster_name="-bad", vpc=imported_vpc(s), cluster_security_group_id="sg-1"
            ),
            "cluster_name",
        ),
    ],
)
def test_bad_import_attributes_are_reported(call: Any, fragment: str) -> None:
    with pytest.raises(FmValidationError, match=fragment):
        call(_stack())
