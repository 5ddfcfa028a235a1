"""The deployment pattern builds a profile's parts into whatever scopes it is given (the shipped
stacks are one choice): here every part of the HyperPod Slurm profile goes into one stack."""

from __future__ import annotations

from pathlib import Path

import aws_cdk as cdk
import pytest
from aws_cdk.assertions import Template
from constructs import Construct

from fm_constructs.config import load_profile
from fm_constructs.config.options import deployment_options
from fm_constructs.patterns.deployment import Deployment

ROOT = Path(__file__).resolve().parents[2]


def test_one_stack_holds_every_part_under_its_scope() -> None:
    options = deployment_options(load_profile(ROOT / "config" / "hyperpod-slurm.toml"))
    assert not options.clusters  # HyperPod Slurm: no EKS cluster
    app = cdk.App()
    stack = cdk.Stack(app, "Everything", env=cdk.Environment(region=options.platform.region))
    platform = Construct(stack, "Platform")
    workloads = {name: Construct(stack, name) for name in options.workloads}
    deployment = Deployment(options)
    deployment.build(platform, None, {}, {}, {}, workloads, {})

    # The parts keep their ids under the scopes given (as they do in the shipped stacks).
    assert deployment.platform.network.node.path == "Everything/Platform/Network"
    storage = deployment.storage["pretraining"]
    assert storage.owns_file_system and storage.file_system is not None
    assert storage.file_system.node.path == "Everything/pretraining/FileSystem"
    assert storage.hyperpod is not None and storage.pcs is None
    assert storage.hyperpod.node.path == "Everything/pretraining/HyperPod"
    assert deployment.nodes == {} and deployment.scrapers == {}

    template = Template.from_stack(stack)
    template.resource_count_is("AWS::FSx::FileSystem", 1)
    template.resource_count_is("AWS::SageMaker::Cluster", 1)
    template.resource_count_is("AWS::EC2::VPC", 1)


def test_a_part_needs_the_platform_first() -> None:
    options = deployment_options(load_profile(ROOT / "config" / "hyperpod-slurm.toml"))
    stack = cdk.Stack(cdk.App(), "Stack")
    with pytest.raises(RuntimeError, match="build_platform"):
        Deployment(options).build_workload(stack, "pretraining")
