"""A HyperPod EKS cluster on an EFA-enabled FSx for Lustre file system: its lifecycle prefix
gets the EKS node groups' LNet boot script beside the node scripts and its provisioning
parameters give each group its LNet interfaces, within every EFA node's share of the file
system's connections; cdk-nag and cfn-lint stay clean. (A Slurm cluster on an EFA-enabled file
system keeps its two sources: tests/constructs/test_hyperpod.py.) What the scripts do on a node
is tested in tests/unit/test_hyperpod_eks_lnet_efa.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import aws_cdk as cdk
from aws_cdk.assertions import Annotations, Match

from fm_constructs.compute.user_data import lnet_efa_boot_script
from fm_constructs.orchestration import GpuEksCluster, WorkloadOperators
from fm_constructs.orchestration.hyperpod import HyperPodCluster, InstanceGroup, Orchestrator
from fm_constructs.orchestration.hyperpod.lifecycle import LNET_EFA_BOOT
from fm_constructs.planning.kubernetes_versions import HYPERPOD_EKS_VERSIONS, SUPPORTED_VERSIONS
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket, LustreFileSystem
from tests.support import TEST_ENV, cfn_lint, imported_vpc

ZONE = "us-east-1a"
#: The newest Kubernetes version both HyperPod and the library support.
HYPERPOD_KUBERNETES = [v for v in HYPERPOD_EKS_VERSIONS if v in SUPPORTED_VERSIONS][-1]


def test_the_lifecycle_prefix_carries_the_lnet_boot_script_and_the_counts() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "HyperPodEksEfa", env=TEST_ENV)
    vpc = imported_vpc(stack, ZONE)
    subnet = vpc.private_subnets[0]
    # The smallest EFA-enabled file system at 1000 MB/s/TiB.
    efa: dict[str, Any] = {
        "efa_enabled": True,
        "storage_capacity_gib": 4800,
        "throughput_mb_s_per_tib": 1000,
    }
    data = DataBucket(stack, "Data")
    fs = LustreFileSystem(stack, "Fsx", vpc=vpc, subnet=subnet, data_bucket=data, **efa)
    eks_cluster = GpuEksCluster(
        stack,
        "Eks",
        vpc=vpc,
        gpu_availability_zone=ZONE,
        kubernetes_version=HYPERPOD_KUBERNETES,
        operators=WorkloadOperators(kueue=False),
    )
    cluster = HyperPodCluster(
        stack,
        "HyperPod",
        vpc=vpc,
        subnet=subnet,
        orchestrator=Orchestrator.EKS,
        eks_cluster=eks_cluster,
        lustre=fs,
        instance_groups=[
            InstanceGroup(name="p5", instance_type="ml.p5.48xlarge", instance_count=4)
        ],
        lustre_efa_clients=300,  # another cluster shares the file system
    )
    enable_nag(app)
    assembly = app.synth()
    template: dict[str, Any] = assembly.get_stack_by_name(stack.stack_name).template

    parameters = cluster.lifecycle.parameters
    assert parameters["workload_manager"] == "eks"
    assert parameters["fsx"]["efa_enabled"] is True
    # The FSx guide's 8 for p5, at most 1,024 // 300 = 3 with the other cluster's nodes.
    assert parameters["worker_groups"][0]["lnet_efa_interfaces"] == 3
    deployments = [
        r for r in template["Resources"].values() if r["Type"] == "Custom::CDKBucketDeployment"
    ]
    (deployment,) = deployments
    # The node scripts, the parameters and the boot script: three sources under one prefix.
    assert len(deployment["Properties"]["SourceObjectKeys"]) == 3
    assert deployment["Properties"]["DestinationBucketKeyPrefix"] == cluster.lifecycle.prefix
    # The boot script's asset holds the packaged script, byte for byte.
    (shipped,) = Path(assembly.directory).glob(f"asset.*/{LNET_EFA_BOOT}")
    assert shipped.read_text() == lnet_efa_boot_script()
    errors = Annotations.from_stack(stack).find_error("*", Match.any_value())
    assert errors == [], errors
    assert cfn_lint(template, "us-east-1") == []
