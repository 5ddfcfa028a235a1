"""Plan and template agree: the FSx capacity and per-unit throughput ``fmc plan`` prints are
the ones LustreFileSystem synthesizes for the same profile (one small stack, synthesized once)."""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template

from fm_constructs.cli.plan import build_plan
from fm_constructs.cli.pricing import load_prices
from fm_constructs.config import load_profile
from fm_constructs.config.sizing import fsx_sizing_request
from fm_constructs.storage import DataBucket, LustreFileSystem
from tests.support import TEST_ENV
from tests.unit.cli_stubs import DEFAULT_PROFILE


def test_fsx_in_template_equals_plan() -> None:
    profile = load_profile(DEFAULT_PROFILE)
    plan = {w.name: w for w in build_plan(profile, load_prices()).workloads}
    app = cdk.App()
    stack = cdk.Stack(app, "PlanVsTemplate", env=TEST_ENV)
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0123456789abcdef0"],
    )
    data = DataBucket(stack, "Data")
    expected = []
    for workload in profile.enabled_workloads:
        storage = workload.storage
        if not storage.enabled:
            continue
        fs = LustreFileSystem(
            stack,
            f"Fsx-{workload.name}",
            vpc=vpc,
            subnet=vpc.private_subnets[0],
            data_bucket=data,
            sizing=fsx_sizing_request(storage),
            storage_capacity_gib=storage.storage_capacity_gib,
            throughput_mb_s_per_tib=storage.throughput_mb_s_per_tib,
        )
        planned = plan[workload.name].storage
        assert planned is not None
        assert fs.storage_capacity_gib == planned.storage_capacity_gib
        assert fs.throughput_mb_s_per_tib == planned.throughput_mb_s_per_tib
        expected.append((planned.storage_capacity_gib, planned.throughput_mb_s_per_tib))
    template = Template.from_stack(stack)
    synthesized = sorted(
        (
            r["Properties"]["StorageCapacity"],
            r["Properties"]["LustreConfiguration"]["PerUnitStorageThroughput"],
        )
        for r in template.find_resources("AWS::FSx::FileSystem").values()
    )
    assert synthesized == sorted(expected) == [(4800, 250), (9600, 500)]
