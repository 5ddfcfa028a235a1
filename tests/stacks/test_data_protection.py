"""Over every synthesized template: retry and redeploy never collide with a retained name,
every log group is encrypted with a key CloudWatch Logs may use, every retained resource can
outlive its stack, the teardown order (what each retained resource still uses in a stack
deleted after its own, and the guard that stops that deletion with what to do first), and
every Lambda function has reserved concurrency or a written reason."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

from tests.stacks.profiles import ROOT, profile_params, synthesize
from tests.template_walk import imported_names, referenced_ids

RETAINED = {"Retain", "RetainExceptOnCreate"}
#: Resources that cannot be deleted while something still uses them (the stack's deletion then
#: fails), or whose deletion breaks the retained resource's data (its encryption key).
BLOCKING_TYPES = {
    "AWS::EC2::SecurityGroup",
    "AWS::EC2::Subnet",
    "AWS::EC2::VPC",
    "AWS::KMS::Key",
}
#: The documented teardown order: retained resources that keep using another stack's resources.
TEARDOWN_DOC = ROOT / "docs" / "storage.md"
#: What the VPC teardown guard (fm_constructs/storage/teardown_guard/handler.py) lists and names
#: when the VPC's stack is deleted: a retained resource of another type that keeps a VPC or
#: subnet in use would make that stack's deletion fail with no word on what to do.
GUARDED_TYPES = {"AWS::FSx::FileSystem", "AWS::EC2::SecurityGroup"}
GUARD_TYPE = "Custom::VpcTeardownGuard"


def _primary_name_properties(resource_type: str) -> list[str]:
    """Properties that name the resource (its primaryIdentifier) and that a template can set."""
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", resource_type).schema
    read_only = set(schema.get("readOnlyProperties", []))
    return [
        pointer.removeprefix("/properties/")
        for pointer in schema.get("primaryIdentifier", [])
        if pointer not in read_only
    ]


@pytest.mark.parametrize("profile", profile_params())
def test_no_retained_resource_has_a_fixed_physical_name(profile: str) -> None:
    # A retained resource with a fixed name survives a rollback or `cdk destroy`, and the next
    # deploy then fails with "already exists".
    offenders = []
    for stack, template in synthesize(profile).templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            if resource.get("DeletionPolicy") not in RETAINED:
                continue
            if resource["Type"].startswith("Custom::"):
                continue
            names = _primary_name_properties(resource["Type"])
            props = resource.get("Properties", {})
            # A name built from another resource's generated name (a Ref) differs per creation.
            given = [n for n in names if n in props and not any(referenced_ids(props[n]))]
            if given:
                offenders.append(f"{stack}/{logical_id} ({resource['Type']}): {given}")
    assert offenders == []


@pytest.mark.parametrize("profile", profile_params())
def test_every_log_group_is_encrypted_with_a_key_logs_may_use(profile: str) -> None:
    unencrypted = []
    for stack, template in synthesize(profile).templates.items():
        resources = template.get("Resources", {})
        for logical_id, resource in resources.items():
            if resource["Type"] != "AWS::Logs::LogGroup":
                continue
            key = resource["Properties"].get("KmsKeyId")
            if not (isinstance(key, dict) and "Fn::GetAtt" in key):
                unencrypted.append(f"{stack}/{logical_id}")
                continue
            policy = resources[key["Fn::GetAtt"][0]]["Properties"]["KeyPolicy"]
            services = [
                s["Principal"].get("Service")
                for s in policy["Statement"]
                if isinstance(s.get("Principal"), dict)
            ]
            assert any(str(s).startswith("logs.") for s in services), f"{stack}/{logical_id}"
    assert unencrypted == []


@pytest.mark.parametrize("profile", profile_params())
def test_retained_resources_can_outlive_their_stack(profile: str) -> None:
    """What each retained resource still needs when its stack is deleted.

    Inside its own stack it may only use other retained resources: a deleted dependency that
    it keeps using (a security group, a key) makes the stack's deletion fail. What it uses
    from another stack (the VPC's subnets) must be deleted after it, in the order the
    teardown guide gives.
    """
    doc = TEARDOWN_DOC.read_text(encoding="utf-8")
    for stack, template in synthesize(profile).templates.items():
        resources = template.get("Resources", {})
        for logical_id, resource in resources.items():
            if resource.get("DeletionPolicy") not in RETAINED:
                continue
            # What it runs on, not what merely names it: policies and tags that mention a
            # resource do not keep it in use, nor does a name built from one.
            ignored = {
                "KeyPolicy",
                "PolicyDocument",
                "Tags",
                *_primary_name_properties(resource["Type"]),
            }
            props = {k: v for k, v in resource.get("Properties", {}).items() if k not in ignored}
            used = {r for r in referenced_ids(props) if r in resources}
            deleted = sorted(
                f"{r} ({resources[r]['Type']})"
                for r in used
                if resources[r].get("DeletionPolicy") not in RETAINED
                and resources[r]["Type"] in BLOCKING_TYPES
            )
            assert deleted == [], f"{stack}/{logical_id} keeps using {deleted}"
            if any(True for _ in imported_names(props)):
                assert f"`{resource['Type']}`" in doc.split("## Tear down", 1)[-1], (
                    f"{stack}/{logical_id} uses another stack's resources: document when to "
                    f"delete it in {TEARDOWN_DOC.relative_to(ROOT)}"
                )


def _exports(templates: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Export name -> (stack, logical id of the resource the export's value refers to)."""
    exports = {}
    for stack, template in templates.items():
        for output in template.get("Outputs", {}).values():
            name = output.get("Export", {}).get("Name")
            targets = list(referenced_ids(output.get("Value")))
            if isinstance(name, str) and len(targets) == 1:
                exports[name] = (stack, targets[0])
    return exports


def _still_needed(templates: dict[str, dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """(retained resource's stack/id and type, other stack, logical id it still uses there)
    for every resource of another stack a retained resource keeps using when its own stack is
    deleted: its stack goes first, the other one later (it exports to it)."""
    exports = _exports(templates)
    needs = []
    for stack, template in templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            if resource.get("DeletionPolicy") not in RETAINED:
                continue
            ignored = {"KeyPolicy", "PolicyDocument", "Tags"}
            props = {k: v for k, v in resource.get("Properties", {}).items() if k not in ignored}
            for name in imported_names(props):
                other, used = exports[name] if isinstance(name, str) else (None, None)
                assert other is not None, f"{stack}/{logical_id} imports {name!r}"
                needs.append((f"{stack}/{logical_id}", resource["Type"], other, str(used)))
    return needs


@pytest.mark.parametrize("profile", profile_params())
def test_teardown_order_of_retained_resources(profile: str) -> None:
    """What each retained resource still needs when its stack is deleted, and what stops the
    deletion of the stack that owns it.

    A retained file system keeps its subnet (its network interfaces) and its retained security
    group keeps the VPC. Both belong to the platform stack, deleted last by `cdk destroy
    --all`. That stack must hold a teardown guard that refers to each such VPC and subnet, so
    CloudFormation deletes the guard first and its failure says what to delete; and the guard
    must know the retained resource's type, or it would not name it.
    """
    templates = synthesize(profile).templates
    doc = TEARDOWN_DOC.read_text(encoding="utf-8").split("## Tear down", 1)[-1]
    for retained, kind, other, used in _still_needed(templates):
        resources = templates[other]["Resources"]
        target = resources[used]
        if target.get("DeletionPolicy") in RETAINED or target["Type"] not in BLOCKING_TYPES:
            continue  # outlives its stack too, or does not block its stack's deletion
        assert kind in GUARDED_TYPES, f"{retained} ({kind}) keeps {other}/{used}: guard it"
        guards = [r for r in resources.values() if r["Type"] == GUARD_TYPE]
        assert len(guards) == 1, f"{other} keeps {used} for {retained} and has no teardown guard"
        (guard,) = guards
        assert used in set(referenced_ids(guard["Properties"])), (
            f"{other}'s teardown guard must refer to {used} ({target['Type']}), which "
            f"{retained} keeps using, so CloudFormation deletes the guard before it"
        )
        assert f"`{kind}`" in doc, f"{TEARDOWN_DOC.relative_to(ROOT)} must say when {kind} goes"


@pytest.mark.parametrize("profile", profile_params())
def test_every_vpc_has_a_teardown_guard_that_is_deleted_first(profile: str) -> None:
    for stack, template in synthesize(profile).templates.items():
        resources = template.get("Resources", {})
        vpcs = {i for i, r in resources.items() if r["Type"] == "AWS::EC2::VPC"}
        if not vpcs:
            continue
        subnets = {i for i, r in resources.items() if r["Type"] == "AWS::EC2::Subnet"}
        (guard,) = [r for r in resources.values() if r["Type"] == GUARD_TYPE]
        assert vpcs | subnets <= set(referenced_ids(guard["Properties"])), stack


@pytest.mark.parametrize("profile", profile_params())
def test_every_lambda_has_reserved_concurrency_or_a_reason(profile: str) -> None:
    missing = []
    for stack, template in synthesize(profile).templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            if resource["Type"] != "AWS::Lambda::Function":
                continue
            if "ReservedConcurrentExecutions" in resource.get("Properties", {}):
                continue
            reason = resource.get("Metadata", {}).get("fm:reserved-concurrency")
            if not (isinstance(reason, str) and len(reason) > 40):
                missing.append(f"{stack}/{logical_id}")
    assert missing == []


def test_teardown_doc_exists() -> None:
    assert Path(TEARDOWN_DOC).is_file()


def test_deleting_an_association_keeps_the_file_system_data() -> None:
    """The compute stack owns the associations; deleting it must not delete files. The API
    deletes them only when asked (optional ``DeleteDataInFileSystem``), and the CloudFormation
    resource has no property that asks (docs/storage.md, Tear down)."""
    model = botocore.session.get_session().get_service_model("fsx")
    request = model.operation_model("DeleteDataRepositoryAssociation").input_shape
    assert "DeleteDataInFileSystem" in request.members
    assert "DeleteDataInFileSystem" not in request.required_members
    assert (
        "Set to <code>true</code> to delete"
        in request.members["DeleteDataInFileSystem"].documentation
    )
    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema(
        "us-east-1", "AWS::FSx::DataRepositoryAssociation"
    ).schema
    assert not [name for name in schema["properties"] if "delete" in name.lower()]
    doc = TEARDOWN_DOC.read_text(encoding="utf-8").split("## Tear down", 1)[-1]
    assert "DeleteDataInFileSystem" in doc and "AWS::FSx::DataRepositoryAssociation" in doc


def _destroy_order(outdir: Path) -> list[str]:
    """Stack names in the order `cdk destroy --all` deletes them: every stack after the
    stacks that depend on it (the reverse of the cloud assembly's deploy order)."""
    artifacts = json.loads((outdir / "manifest.json").read_text())["artifacts"]
    stacks = {
        artifact_id: a["properties"].get("stackName", artifact_id)
        for artifact_id, a in artifacts.items()
        if a["type"] == "aws:cloudformation:stack"
    }
    needs = {
        artifact_id: {d for d in artifacts[artifact_id].get("dependencies", []) if d in stacks}
        for artifact_id in stacks
    }
    order: list[str] = []
    while len(order) < len(stacks):
        ready = sorted(
            a
            for a in stacks
            if a not in order
            and not any(a in needs[other] for other in stacks if other not in order)
        )
        assert ready, f"dependency cycle among {sorted(set(stacks) - set(order))}"
        order += ready
    return [stacks[a] for a in order]


def _simulate_destroy(
    templates: dict[str, dict[str, Any]], order: list[str], gone: set[tuple[str, str]]
) -> tuple[str, str, list[str]] | None:
    """Delete the stacks as CloudFormation would, each resource after those that refer to it,
    a VPC, subnet or security group as early as that allows (so a guard that does not hold them
    back is caught). Retained resources stay, in ``gone`` once deleted by hand. Returns where
    the deletion stopped: (stack, resource, what it names or what still uses it), or None."""
    exports = _exports(templates)
    alive = {
        (stack, logical_id)
        for stack, template in templates.items()
        for logical_id in template.get("Resources", {})
    } - gone
    uses: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for stack, template in templates.items():
        for logical_id, resource in template.get("Resources", {}).items():
            kept = {
                k: v
                for k, v in resource.get("Properties", {}).items()
                if k not in {"KeyPolicy", "PolicyDocument", "Tags"}
            }
            used = {(stack, r) for r in referenced_ids(kept)}
            used |= {exports[name] for name in imported_names(kept) if name in exports}
            uses[(stack, logical_id)] = used
    for stack in order:
        resources = templates[stack]["Resources"]
        pending = {i for i in resources if (stack, i) in alive}
        depends = {
            i: set(referenced_ids(r)) | set(r.get("DependsOn", [])) for i, r in resources.items()
        }
        while pending:
            ready = [i for i in pending if not any(i in depends[o] for o in pending if o != i)]
            assert ready, f"{stack}: dependency cycle"
            ready.sort(key=lambda i: resources[i]["Type"] not in BLOCKING_TYPES)
            logical_id = ready[0]
            resource = resources[logical_id]
            pending.discard(logical_id)
            if resource.get("DeletionPolicy") in RETAINED:
                continue
            if resource["Type"] == GUARD_TYPE:
                guarded = set(referenced_ids(resource["Properties"]))
                left = sorted(
                    f"{s}/{i}"
                    for s, i in alive
                    if s != stack
                    and templates[s]["Resources"][i]["Type"] in GUARDED_TYPES
                    and any(u == (stack, g) for u in uses[(s, i)] for g in guarded)
                )
                if left:
                    return stack, logical_id, left
            if resource["Type"] in BLOCKING_TYPES:
                users = sorted(
                    f"{s}/{i}"
                    for s, i in alive
                    if (s, i) != (stack, logical_id) and (stack, logical_id) in uses[(s, i)]
                )
                if users:
                    return stack, logical_id, users
            alive.discard((stack, logical_id))
    return None


@pytest.mark.parametrize("profile", profile_params())
def test_cdk_destroy_all_stops_with_what_to_delete_then_succeeds(profile: str) -> None:
    """`cdk destroy --all` over the synthesized stacks (termination protection lifted): it
    either deletes everything, or stops at the teardown guard, which names the retained file
    systems and groups still in the VPC, never at a subnet or VPC CloudFormation cannot
    delete. Once those are deleted by hand, the same command deletes the rest."""
    synthesized = synthesize(profile)
    templates = synthesized.templates
    order = _destroy_order(synthesized.outdir)
    stopped = _simulate_destroy(templates, order, gone=set())
    has_file_system = any(
        r["Type"] == "AWS::FSx::FileSystem"
        for t in templates.values()
        for r in t["Resources"].values()
    )
    if not has_file_system:
        assert stopped is None
        return
    assert stopped is not None
    stack, logical_id, named = stopped
    assert templates[stack]["Resources"][logical_id]["Type"] == GUARD_TYPE, (
        f"cdk destroy stops at {stack}/{logical_id}, still used by {named}: the teardown guard "
        "must stop it first"
    )
    kinds = {templates[s]["Resources"][i]["Type"] for s, i in (n.split("/", 1) for n in named)}
    assert kinds == GUARDED_TYPES  # each file system and its security group, by name
    deleted_by_hand = {(n.split("/", 1)[0], n.split("/", 1)[1]) for n in named}
    assert _simulate_destroy(templates, order, gone=deleted_by_hand) is None
