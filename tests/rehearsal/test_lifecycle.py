"""The default profile's whole life against one local account, with the real CDK CLI:

1. ``cdk deploy --all`` into a fresh account (bootstrap included) while one node group's
   creation fails: that stack rolls back, and the same command run again succeeds.
2. A no-op ``cdk deploy --all``: every stack reports no changes.
3. An update: more nodes in two node groups and a kubelet setting in the pre-training launch
   template (``max_pods_per_node``); the node groups scale in place and point at the new template
   version.
4. ``cdk destroy --all``: stopped first by the platform stack's termination protection, then
   (protection lifted) by its teardown guard naming the retained file systems and their
   groups; once those are deleted as docs/storage.md says, the rest goes. Retained buckets,
   keys, file systems and workspaces exist after the destroy; clusters and node groups do not.
5. A second ``cdk deploy --all`` into the same account: nothing collides with what was kept.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.rehearsal.account import client, modelled, stack_statuses
from tests.rehearsal.cdk import ROOT, Cdk
from tests.rehearsal.conftest import Assemblies, reset, stacks_of
from tests.rehearsal.local_aws import resources
from tests.rehearsal.local_aws.server import LocalAws

PROFILE = "default"
PLATFORM = "fm-platform"


def updated_profile(target: Path) -> Path:
    """config/default.toml with more pre-training and inference nodes and a kubelet
    ``max_pods_per_node`` for pre-training (rendered into its node group's launch template)."""
    text = (ROOT / "config" / f"{PROFILE}.toml").read_text()
    text = re.sub(r"(\[pretraining\][^\[]*?instance_count = )4", r"\g<1>6", text, count=1)
    text = re.sub(r"(\[inference\][^\[]*?instance_count = )2", r"\g<1>3", text, count=1)
    text = text.replace(
        'instance_type = "p5.48xlarge"', 'instance_type = "p5.48xlarge"\nmax_pods_per_node = 110', 1
    )
    assert "instance_count = 6" in text and "max_pods_per_node = 110" in text
    target.write_text(text)
    return target


def resources_of(local: LocalAws, region: str, stacks: list[str]) -> list[dict[str, Any]]:
    cloudformation = client(local, "cloudformation", region)
    found = []
    for name in stacks:
        found += cloudformation.list_stack_resources(StackName=name)["StackResourceSummaries"]
    return found


def retained_types(assembly: Path) -> dict[str, set[str]]:
    """Stateful type -> logical ids with ``DeletionPolicy: Retain`` over the assembly."""
    kept: dict[str, set[str]] = {}
    for template in assembly.glob("*.template.json"):
        for logical_id, body in json.loads(template.read_text())["Resources"].items():
            if body.get("DeletionPolicy") == "Retain":
                kept.setdefault(body["Type"], set()).add(logical_id)
    return kept


@pytest.fixture(autouse=True)
def _no_faults_left() -> Any:
    yield
    resources.FAULTS.clear()


def test_default_profile_lifecycle(
    local: LocalAws, cdk: Cdk, assemblies: Assemblies, tmp_path: Path
) -> None:
    assembly = assemblies.get(PROFILE)
    stacks = stacks_of(assembly)
    (region,) = set(stacks.values())
    reset(local)
    cdk.bootstrap(region)

    # 1. A first deploy that fails rolls back; the retry succeeds.
    resources.FAULTS["AWS::EKS::Nodegroup"] = 1
    first = cdk.deploy(assembly)
    assert first.returncode != 0
    assert "a transient fault the rehearsal injected" in first.output
    statuses = stack_statuses(local, region)
    rolled_back = [name for name, status in statuses.items() if status == "ROLLBACK_COMPLETE"]
    assert len(rolled_back) == 1, statuses
    assert not [
        g
        for g in modelled(local, region, "AWS::EKS::Nodegroup")
        if g.stack_id.split("/")[1] == rolled_back[0]
    ]
    cdk.deploy(assembly).check()
    statuses = stack_statuses(local, region)
    assert all(statuses[name] == "CREATE_COMPLETE" for name in stacks), statuses

    # 2. No-op redeploy.
    again = cdk.deploy(assembly).check()
    for name in stacks:
        assert f"✅  {name} (no changes)" in again.output, again.output[-3000:]

    # 3. Update node counts and the launch templates.
    def node_groups() -> dict[str, tuple[int, str | None]]:
        return {
            g.physical_id: (
                int(g.properties["ScalingConfig"]["DesiredSize"]),
                g.attributes.get("LaunchTemplateVersion"),
            )
            for g in modelled(local, region, "AWS::EKS::Nodegroup")
        }

    before = node_groups()
    update_assembly = tmp_path / "updated"
    cdk.synth(updated_profile(tmp_path / "default-updated.toml"), update_assembly)
    cdk.deploy(update_assembly).check()
    statuses = stack_statuses(local, region)
    assert statuses["fm-pretraining-compute"] == "UPDATE_COMPLETE", statuses
    assert statuses["fm-inference-compute"] == "UPDATE_COMPLETE", statuses
    after = node_groups()
    assert set(after) == set(before), "node groups were replaced instead of updated"
    changed = {k: (before[k], after[k]) for k in after if after[k] != before[k]}
    sizes = sorted((b[0], a[0]) for b, a in changed.values() if b[0] != a[0])
    assert sizes == [(2, 3), (4, 6)], changed
    versions = [(b[1], a[1]) for b, a in changed.values() if b[1] != a[1]]
    assert len(versions) == 1, changed

    # 4. Destroy: termination protection, then the teardown guard, then the rest.
    recorded = resources_of(local, region, list(stacks))
    kept = retained_types(update_assembly)
    blocked = cdk.destroy(update_assembly)
    assert blocked.returncode != 0
    assert f"Stack [{PLATFORM}] cannot be deleted while TerminationProtection is enabled" in (
        blocked.output
    )
    cloudformation = client(local, "cloudformation", region)
    cloudformation.update_termination_protection(
        StackName=PLATFORM, EnableTerminationProtection=False
    )
    guarded = cdk.destroy(update_assembly)
    assert guarded.returncode != 0
    assert "still holds resources this stack did not create" in guarded.output
    fsx = client(local, "fsx", region)
    systems = fsx.describe_file_systems()["FileSystems"]
    kept_systems = {
        r["PhysicalResourceId"] for r in recorded if r["ResourceType"] == "AWS::FSx::FileSystem"
    }
    assert kept_systems and kept_systems <= {s["FileSystemId"] for s in systems}
    for system in systems:
        assert system["FileSystemId"] in guarded.output
    ec2 = client(local, "ec2", region)
    vpc_id = systems[0]["VpcId"]
    for system in systems:
        fsx.delete_file_system(FileSystemId=system["FileSystemId"])
    for group in ec2.describe_security_groups(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])[
        "SecurityGroups"
    ]:
        tags = {t["Key"]: t["Value"] for t in group.get("Tags", [])}
        if (
            group["GroupName"] != "default"
            and tags.get("aws:cloudformation:stack-name") != PLATFORM
        ):
            assert group["GroupId"] in guarded.output
            ec2.delete_security_group(GroupId=group["GroupId"])
    last = cdk.destroy(update_assembly)
    left = ec2.describe_subnets(Filters=[{"Name": "vpc-id", "Values": [vpc_id]}])["Subnets"]
    assert last.returncode == 0, (left, last.output[-3000:])
    assert set(stack_statuses(local, region)) == {"CDKToolkit"}
    assert not modelled(local, region, "AWS::EKS::Cluster")
    assert not modelled(local, region, "AWS::EKS::Nodegroup")
    physical = {r["LogicalResourceId"]: r["PhysicalResourceId"] for r in recorded}
    s3 = client(local, "s3", region)
    for logical_id in kept.get("AWS::S3::Bucket", set()):
        s3.head_bucket(Bucket=physical[logical_id])
    kms = client(local, "kms", region)
    for logical_id in kept.get("AWS::KMS::Key", set()):
        assert kms.describe_key(KeyId=physical[logical_id])["KeyMetadata"]["KeyState"] == "Enabled"
    workspaces = {w.physical_id for w in modelled(local, region, "AWS::APS::Workspace")}
    for logical_id in kept.get("AWS::APS::Workspace", set()):
        assert physical[logical_id] in workspaces

    # 5. A second deploy into the same account.
    cdk.deploy(update_assembly).check()
    statuses = stack_statuses(local, region)
    assert all(statuses[name] == "CREATE_COMPLETE" for name in stacks), statuses
