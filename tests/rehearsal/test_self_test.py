"""The rehearsal proves it can fail: the default profile's own templates, each changed in one
place, are deployed with the CDK CLI and must fail with the service's message. The same
templates unchanged deploy (the control), so each failure comes from its one change.

The pre-training storage stack is the subject: it imports from the platform stack, and its
file system names its log group by a literal ARN with a ``DependsOn`` as the only ordering.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.rehearsal.account import stack_statuses
from tests.rehearsal.cdk import Cdk
from tests.rehearsal.conftest import Assemblies, reset, scratch_copy, stacks_of
from tests.rehearsal.local_aws.server import LocalAws

PROFILE = "default"
STACK = "fm-pretraining"

Template = dict[str, Any]


def _of_type(template: Template, resource_type: str) -> str:
    (logical_id,) = [k for k, v in template["Resources"].items() if v["Type"] == resource_type]
    return logical_id


def missing_reference(template: Template) -> str:
    """Delete the file system's KMS key; its references stay."""
    key = next(
        k
        for k, v in template["Resources"].items()
        if v["Type"] == "AWS::KMS::Key" and "FileSystem" in k
    )
    del template["Resources"][key]
    return f"Unresolved resource dependencies [{key}] in the Resources block of the template"


def import_before_export(template: Template) -> str:
    """Import an export of a stack that is not deployed yet (the cluster stack's)."""
    for body in template["Resources"].values():
        text = json.dumps(body)
        if '"Fn::ImportValue": "fm-platform:' in text:
            name = text.split('"Fn::ImportValue": "', 1)[1].split('"', 1)[0]
            changed = text.replace(name, name.replace("fm-platform:", "fm-cluster:", 1), 1)
            body.clear()
            body.update(json.loads(changed))
            return f"No export named {name.replace('fm-platform:', 'fm-cluster:', 1)} found"
    raise AssertionError("no import of a platform export")


def dependency_removed(template: Template) -> str:
    """Drop the file system's DependsOn on the log group its LogConfiguration names."""
    system = template["Resources"][_of_type(template, "AWS::FSx::FileSystem")]
    group = _of_type(template, "AWS::Logs::LogGroup")
    system["DependsOn"] = [d for d in system["DependsOn"] if d != group]
    return "log group does not exist"


def property_refused(template: Template) -> str:
    """A file system property the FSx schema does not define."""
    system = template["Resources"][_of_type(template, "AWS::FSx::FileSystem")]
    system["Properties"]["StorageCapacityGiB"] = 1200
    return "#: extraneous key [StorageCapacityGiB] is not permitted"


MUTATIONS: dict[str, Callable[[Template], str]] = {
    "missing-reference": missing_reference,
    "import-before-export": import_before_export,
    "dependency-removed": dependency_removed,
    "property-refused": property_refused,
}


@pytest.fixture(scope="module")
def platform_deployed(local: LocalAws, cdk: Cdk, assemblies: Assemblies) -> Path:
    """A fresh account holding the default profile's platform stack."""
    assembly = assemblies.get(PROFILE)
    (region,) = set(stacks_of(assembly).values())
    reset(local)
    cdk.bootstrap(region)
    cdk.deploy(assembly, ["fm-platform", "--exclusively"]).check()
    return assembly


def _mutated(assembly: Path, mutation: Callable[[Template], str]) -> tuple[Path, str]:
    """A copy of the assembly with the stack's template changed, and the message expected.
    The template is a file asset keyed by its hash: the copy gets the new hash, or the CLI
    would find the unchanged template already uploaded under the old key."""
    copy = scratch_copy(assembly)
    path = copy / f"{STACK}.template.json"
    template = json.loads(path.read_text())
    expected = mutation(template)
    text = json.dumps(template, indent=1)
    path.write_text(text)
    assets_path = copy / f"{STACK}.assets.json"
    assets = json.loads(assets_path.read_text())
    (old_hash,) = [
        key for key, entry in assets["files"].items() if entry["source"].get("path") == path.name
    ]
    new_hash = hashlib.sha256(text.encode()).hexdigest()
    for manifest in (assets_path, copy / "manifest.json"):
        manifest.write_text(manifest.read_text().replace(old_hash, new_hash))
    return copy, expected


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_mutated_template_fails_with_the_service_message(
    name: str, platform_deployed: Path, local: LocalAws, cdk: Cdk
) -> None:
    assembly, expected = _mutated(platform_deployed, MUTATIONS[name])
    result = cdk.deploy(assembly, [STACK, "--exclusively"])
    assert result.returncode != 0, result.output[-3000:]
    assert expected in result.output, result.output[-3000:]
    region = stacks_of(assembly)[STACK]
    assert stack_statuses(local, region).get(STACK) in (None, "ROLLBACK_COMPLETE")


def test_unmutated_template_deploys(platform_deployed: Path, local: LocalAws, cdk: Cdk) -> None:
    """The control: the same stack, unchanged, deploys (after any rolled-back attempt)."""
    cdk.deploy(platform_deployed, [STACK, "--exclusively"]).check()
    region = stacks_of(platform_deployed)[STACK]
    assert stack_statuses(local, region)[STACK] == "CREATE_COMPLETE"
