"""Test helpers: synthesize a construct under test inside a stack with cdk-nag enabled."""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import yaml
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_eks_v2 as eks
from aws_cdk.assertions import Template
from cfnlint import version as cfn_lint_version
from cfnlint.config import ConfigMixIn, ManualArgs
from cfnlint.decode.decode import decode_str
from cfnlint.runner import Runner

from fm_constructs.orchestration import GpuEksCluster
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.policy import enable_nag
from fm_constructs.storage import ILustreFileSystem, LustreFileSystem

TEST_ENV = cdk.Environment(account="111122223333", region="us-east-1")


def synth_stack(build: Callable[[cdk.Stack], Any], *, nag: bool = True) -> Template:
    """Build constructs into a fresh stack via ``build(stack)`` and return its template.

    With ``nag`` the AwsSolutions pack runs and any unacknowledged finding fails the test.
    """
    app = cdk.App()
    stack = cdk.Stack(app, "TestStack", env=TEST_ENV)
    build(stack)
    if nag:
        enable_nag(app)
    app.synth()
    return Template.from_stack(stack)


_ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def _ignored_cfn_lint_rules() -> tuple[str, ...]:
    """Rules .cfnlintrc.yaml disables, each with its written reason there."""
    data = yaml.safe_load((_ROOT / ".cfnlintrc.yaml").read_text()) or {}
    return tuple(data.get("ignore_checks", []))


@functools.cache
def _cfn_lint_runner(region: str) -> Runner:
    """One cfn-lint runner per region: loading its rules costs more than linting a template,
    and the cfn-lint CLI itself reuses one runner for every template it is given."""
    config = ManualArgs(regions=[region], ignore_checks=list(_ignored_cfn_lint_rules()))
    return Runner(ConfigMixIn(**config))


def cfn_lint(template: str | Mapping[str, Any], region: str) -> list[str]:
    """cfn-lint findings for ``template`` in ``region``, under the repository's own settings
    (the same ones `cfn-lint cdk.out/*.template.json` uses)."""
    text = template if isinstance(template, str) else json.dumps(template)
    passed = _cfn_lint_passed(text, region)
    if passed is not None and passed.is_file():
        return []
    decoded, errors = decode_str(text)
    if errors:
        return [str(error) for error in errors]
    if decoded is None:
        return ["the template is empty"]
    findings = [str(match) for match in _cfn_lint_runner(region).validate_template(decoded)]
    if passed is not None and not findings:
        passed.parent.mkdir(parents=True, exist_ok=True)
        passed.touch()
    return findings


#: Templates cfn-lint has passed, one empty file each, named by a digest of everything that
#: decides the verdict: the template's exact text, the region, the cfn-lint version (its rules
#: and resource specifications ship with it) and the rules .cfnlintrc.yaml disables. A template
#: byte-for-byte identical to one already passed under the same linter and settings is not
#: linted again, so a warm run skips the linting of every template that has not changed; any
#: change to a template, the region, cfn-lint or its settings lints it afresh. Findings are never
#: recorded. ``FM_CFN_LINT_CACHE=off`` lints everything; ``make clean`` empties it.
CFN_LINT_CACHE = _ROOT / ".cache" / "cfn-lint"


def _cfn_lint_passed(text: str, region: str) -> Path | None:
    """Where a pass of ``text`` in ``region`` is recorded (None: the record is switched off)."""
    if os.environ.get("FM_CFN_LINT_CACHE", "on") == "off":
        return None
    digest = hashlib.sha256()
    for part in (cfn_lint_version.__version__, region, *_ignored_cfn_lint_rules(), text):
        digest.update(part.encode())
        digest.update(b"\0")
    return CFN_LINT_CACHE / digest.hexdigest()


#: The FSx for Lustre file system and the security groups the imported resources name.
IMPORTED_FS_ID = "fs-0123456789abcdef0"
IMPORTED_FS_GROUP = "sg-0f5f5f5f5f5f5f5f5"
IMPORTED_CLUSTER_GROUP = "sg-0c1c1c1c1c1c1c1c1"


#: The cluster security group of :func:`plain_eks_cluster`.
PLAIN_CLUSTER_GROUP = "sg-0c000000000000001"


def plain_eks_cluster(stack: cdk.Stack, vpc: ec2.IVpc) -> eks.ICluster:
    """The EKS cluster ``gpu`` as the CDK itself imports one (an ``eks.ICluster``, not an
    ``IGpuCluster``): what a node group takes from an app that did not build the cluster."""
    return eks.Cluster.from_cluster_attributes(
        stack,
        "Cluster",
        cluster_name="gpu",
        vpc=vpc,
        cluster_security_group_id=PLAIN_CLUSTER_GROUP,
    )


def imported_eks_cluster(
    stack: cdk.Stack, vpc: ec2.IVpc, kubernetes_version: str = "1.35"
) -> IGpuCluster:
    """The EKS cluster ``team-gpu`` created outside the app, in ``vpc`` (its GPU zone the
    VPC's first, us-east-1a), as ``from_gpu_eks_cluster_attributes`` imports it."""
    return GpuEksCluster.from_gpu_eks_cluster_attributes(
        stack,
        "Cluster",
        cluster_name="team-gpu",
        vpc=vpc,
        cluster_security_group_id=IMPORTED_CLUSTER_GROUP,
        gpu_availability_zone="us-east-1a",
        kubernetes_version=kubernetes_version,
    )


def imported_file_system(
    stack: cdk.Stack, *, storage_capacity_gib: int = 2400, **attributes: Any
) -> ILustreFileSystem:
    """The FSx for Lustre file system :data:`IMPORTED_FS_ID` created outside the app, as
    ``from_lustre_file_system_attributes`` imports it (``attributes``: its other keywords)."""
    return LustreFileSystem.from_lustre_file_system_attributes(
        stack,
        "Fsx",
        file_system_id=IMPORTED_FS_ID,
        dns_name=f"{IMPORTED_FS_ID}.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group_ids=[IMPORTED_FS_GROUP],
        storage_capacity_gib=storage_capacity_gib,
        **attributes,
    )


def imported_vpc(stack: cdk.Stack, zone: str = "us-east-1a") -> ec2.IVpc:
    """A two-zone VPC from attributes (``zone`` and the zone after it): no VPC resources in the
    template and no lookups, so assertions and cfn-lint see only what the construct adds."""
    other = zone[:-1] + chr(ord(zone[-1]) + 1)
    return ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        vpc_cidr_block="10.0.0.0/16",
        availability_zones=[zone, other],
        private_subnet_ids=["subnet-0a000000000000001", "subnet-0a000000000000002"],
        private_subnet_route_table_ids=["rtb-0a000000000000001", "rtb-0a000000000000002"],
        public_subnet_ids=["subnet-0b000000000000001", "subnet-0b000000000000002"],
        public_subnet_route_table_ids=["rtb-0b000000000000001", "rtb-0b000000000000002"],
    )
