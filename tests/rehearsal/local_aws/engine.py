"""Where moto's CloudFormation engine is laxer than CloudFormation, made as strict as the
service for what the rehearsal relies on. Each patch names the service behaviour it gives:

- An unknown resource type fails the change set (moto would skip it with a warning); the types
  moto lacks are modelled by ``resources.SchemaResource``, custom resources by
  ``custom_resources.InProcessCustomResource``.
- Template validation at ``CreateChangeSet``: every ``Ref``, ``Fn::GetAtt``, ``Fn::Sub``
  reference and ``DependsOn`` names a resource, parameter or pseudo parameter
  ("Template format error: Unresolved resource dependencies [X] in the Resources block").
- ``ExecuteChangeSet`` failures: a resource that fails marks ``CREATE_FAILED`` with the
  service's reason and the new stack rolls back (created resources deleted, retained ones
  included as on a create rollback) to ``ROLLBACK_COMPLETE``; a failed update ends in
  ``UPDATE_ROLLBACK_COMPLETE`` with its template restored. moto raised instead.
- An update that removes an export another stack imports fails ("Cannot delete export X as it
  is in use by Y"); so does deleting that stack. moto removed it.
- ``DeleteStack`` refuses a stack with termination protection; ``UpdateTerminationProtection``
  exists. A resource that fails to delete leaves the stack ``DELETE_FAILED`` with the reason.
- A ``CREATE`` change set for a stack left in ``REVIEW_IN_PROGRESS`` reuses that stack.
- FSx ``DescribeFileSystems`` reports ``VpcId`` (moto leaves it out).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import threading
import traceback
from collections.abc import Callable, Iterator
from typing import Any

from moto.cloudformation import models, parsing, responses
from moto.cloudformation.exceptions import CloudFormationError, ValidationError
from moto.core.common_models import CloudFormationModel
from moto.core.responses import EmptyResult
from moto.fsx import models as fsx_models

from tests.rehearsal.local_aws.custom_resources import InProcessCustomResource
from tests.rehearsal.local_aws.resources import STORE, ResourceFailedError, SchemaResource, remove

PSEUDO = {
    "AWS::AccountId",
    "AWS::NotificationARNs",
    "AWS::NoValue",
    "AWS::Partition",
    "AWS::Region",
    "AWS::StackId",
    "AWS::StackName",
    "AWS::URLSuffix",
}

_installed: list[bool] = []

#: The first resource failure of the running operation. moto's ``Fn::GetAtt`` resolution reads
#: the resource map with ``Mapping.get``, which turns any KeyError while creating the target
#: into "references undefined resource"; the stack event reports this root cause instead.
ROOT_CAUSE: list[Exception] = []

#: moto's server answers requests on threads and its CloudFormation backend is not safe for
#: concurrent change sets (``cdk deploy --concurrency``): every stack operation holds this lock,
#: as CloudFormation applies each stack operation atomically with respect to exports.
LOCK = threading.RLock()


def resource_class(resource_type: str) -> type[CloudFormationModel] | None:
    """The model for ``resource_type``: moto's where it has one, ours otherwise."""
    if resource_type in parsing.NULL_MODELS:
        return None
    if (
        resource_type.startswith("Custom::")
        or resource_type == "AWS::CloudFormation::CustomResource"
    ):
        return InProcessCustomResource
    if resource_type == "AWS::CDK::Metadata":
        return None
    model = parsing.get_model_map().get(resource_type)
    if model is not None:
        return model
    try:
        from tests.rehearsal.local_aws import schemas

        schemas.schema(resource_type)
    except LookupError as error:
        raise ValidationError(
            message=f"Template format error: Unrecognized resource types: [{resource_type}]"
        ) from error
    return SchemaResource


def _walk(node: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key, value
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def unresolved(template: dict[str, Any]) -> dict[str, list[str]]:
    """Names each block of ``template`` refers to that the template does not define."""
    resources = template.get("Resources", {})
    known = set(resources) | set(template.get("Parameters", {})) | PSEUDO
    found: dict[str, list[str]] = {}
    for block in ("Resources", "Outputs"):
        missing: set[str] = set()
        for key, value in _walk(template.get(block, {})):
            if key == "Ref" and isinstance(value, str):
                names = [value]
            elif key == "Fn::GetAtt":
                target = value.split(".")[0] if isinstance(value, str) else value[0]
                names = [target] if isinstance(target, str) else []
            elif key == "Fn::Sub":
                text = value if isinstance(value, str) else value[0]
                local = set(value[1]) if isinstance(value, list) and len(value) > 1 else set()
                names = [
                    m.split(".")[0]
                    for m in re.findall(r"\$\{([^!][^}]*)\}", text)
                    if m.split(".")[0] not in local
                ]
            elif key == "DependsOn" and block == "Resources":
                names = [value] if isinstance(value, str) else list(value)
            else:
                continue
            missing.update(n for n in names if n not in known)
        if missing:
            found[block] = sorted(missing)
    return found


def imports_of(template: dict[str, Any]) -> set[str]:
    """The export names ``template`` imports with a literal ``Fn::ImportValue``."""
    return {
        value
        for key, value in _walk(template.get("Resources", {}) | template.get("Outputs", {}))
        if key == "Fn::ImportValue" and isinstance(value, str)
    }


def exports_of(template: dict[str, Any]) -> set[str]:
    """The literal export names of ``template``'s outputs."""
    names = set()
    for output in template.get("Outputs", {}).values():
        name = output.get("Export", {}).get("Name")
        if isinstance(name, str):
            names.add(name)
    return names


def _in_use(backend: Any, stack: Any, remaining: set[str]) -> None:
    """Fail if another stack imports an export of ``stack`` not in ``remaining``."""
    mine = {e.name for e in stack.exports} - remaining
    for other in backend.stacks.values():
        if other is stack or other.status.startswith("DELETE_COMPLETE"):
            continue
        used = imports_of(getattr(other, "template_dict", None) or {}) & mine
        if used:
            name = sorted(used)[0]
            raise ValidationError(
                message=f"Cannot delete export {name} as it is in use by {other.name}."
            )


def _parse(template: str) -> dict[str, Any]:
    return dict(models.Stack.parse_template(template) or {})


def _validate(template: str) -> None:
    missing = unresolved(_parse(template))
    for block, names in missing.items():
        raise ValidationError(
            message=f"Template format error: Unresolved resource dependencies "
            f"[{', '.join(names)}] in the {block} block of the template"
        )
    for resource in _parse(template).get("Resources", {}).values():
        resource_class(str(resource.get("Type")))


def _failed_resource(stack: Any, error: Exception, status: str) -> None:
    if ROOT_CAUSE:
        error = ROOT_CAUSE[0]
    reason = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
    logical = getattr(error, "logical_id", None) or stack.name
    stack.events.append(
        models.Event(
            stack_id=stack.stack_id,
            stack_name=stack.name,
            logical_resource_id=logical,
            physical_resource_id="",
            resource_type=getattr(error, "resource_type", "AWS::CloudFormation::Stack"),
            resource_status=status,
            resource_status_reason=str(reason),
            resource_properties=None,
        )
    )


def _patch_parse_and_create() -> None:
    original = parsing.parse_and_create_resource

    @functools.wraps(original)
    def parse_and_create(
        logical_id: str, resource_json: dict[str, Any], *args: Any, **kw: Any
    ) -> Any:
        try:
            return original(logical_id, resource_json, *args, **kw)
        except Exception as error:
            if os.environ.get("REHEARSAL_TRACEBACKS"):
                traceback.print_exc()
            if not hasattr(error, "logical_id"):
                error.logical_id = logical_id  # type: ignore[attr-defined]
                error.resource_type = resource_json.get("Type")  # type: ignore[attr-defined]
                if not ROOT_CAUSE:
                    ROOT_CAUSE.append(error)
            raise

    parsing.parse_and_create_resource = parse_and_create


def _tag_ec2(stack: Any) -> None:
    """CloudFormation tags what it creates with ``aws:cloudformation:stack-name`` (and id,
    logical id); moto does so only on its CreateStack path, not for change sets."""
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.core import TaggedEC2Resource

    backend = ec2_backends[stack.account_id][stack.region_name]
    for logical_id, resource in stack.resource_map._parsed_resources.items():
        if isinstance(resource, TaggedEC2Resource):
            backend.create_tags(
                [resource.physical_resource_id],
                {
                    "aws:cloudformation:stack-name": stack.name,
                    "aws:cloudformation:stack-id": stack.stack_id,
                    "aws:cloudformation:logical-id": logical_id,
                },
            )


def _publish_outputs(backend: Any, stack: Any) -> None:
    """Resolve the stack's outputs and publish its exports, refusing an export name another
    stack already exports ("Export with name X is already exported by stack Y")."""
    stack._parse_template()
    stack.description = stack.template_dict.get("Description")
    stack.output_map = stack._create_output_map()
    for key in stack.output_map:
        stack.output_map[key]
    exports = stack.exports
    for export in exports:
        owner = backend.exports.get(export.name)
        if owner is not None and owner.exporting_stack_id != stack.stack_id:
            holder = backend.stacks.get(owner.exporting_stack_id)
            raise ValidationError(
                message=f"Export with name {export.name} is already exported by stack "
                f"{holder.name if holder else owner.exporting_stack_id}"
            )
    for name, export in list(backend.exports.items()):
        if export.exporting_stack_id == stack.stack_id:
            del backend.exports[name]
    for export in exports:
        backend.exports[export.name] = export


class FrozenOutputs(dict[str, Any]):
    """A stack's outputs and exports as they were before a deletion started: a stack left
    ``DELETE_FAILED`` still shows them, though some resources they name are gone."""

    def __init__(self, stack: Any) -> None:
        super().__init__({key: stack.output_map[key] for key in stack.output_map})
        self.exports = list(stack.exports)


def _forget_resources(stack: Any) -> None:
    """A stack whose resources are gone has no outputs. moto's maps are lazy: reading an
    output (``DescribeStacks``) would create again each resource it refers to."""
    stack.output_map = parsing.OutputMap(stack.resource_map, {}, stack.stack_id)
    stack.resource_map._resource_json_map = {}


def _rollback_create(stack: Any) -> None:
    resource_map = stack.resource_map
    bodies = dict(resource_map._resource_json_map)
    for logical_id in list(resource_map._parsed_resources):
        resource = resource_map._parsed_resources[logical_id]
        body = resource_map._resource_json_map.get(logical_id, {})
        if body.get("DeletionPolicy") == "Retain":
            # DeletionPolicy Retain holds on a create rollback too (RetainExceptOnCreate
            # exists for that reason): the resource stays behind.
            resource_map._parsed_resources.pop(logical_id, None)
            continue
        if logical_id in resource_map._resource_json_map and isinstance(
            resource, CloudFormationModel
        ):
            with contextlib.suppress(Exception):
                resource_map._delete_resource(resource, resource_map._resource_json_map[logical_id])
            resource_map._parsed_resources.pop(logical_id, None)
    _forget_resources(stack)
    # A resource that moto created while resolving a reference but never recorded in the map
    # (its creation raised further up) is still the stack's: delete it too.
    for created in [c for store in STORE.values() for c in store.values()]:
        if created.stack_id != stack.stack_id:
            continue
        if bodies.get(created.logical_id, {}).get("DeletionPolicy") == "Retain":
            continue
        with contextlib.suppress(Exception):
            remove(created)


class ChangeSetNotFoundError(CloudFormationError):
    """CloudFormation's ``ChangeSetNotFound`` (HTTP 404), which the CDK CLI expects when it
    looks for a change set left over from an earlier deploy."""

    code = "ChangeSetNotFoundException"

    def __init__(self, name: str) -> None:
        super().__init__(f"ChangeSet [{name}] does not exist")


def find_change_set(backend: Any, name: str, stack_name: str | None) -> Any:
    """The change set ``name`` (an ARN, or a name within ``stack_name``). moto matches the
    name alone, and the CDK CLI names every stack's change set the same."""
    if name in backend.change_sets:
        return backend.change_sets[name]
    for change_set in reversed(list(backend.change_sets.values())):
        stack = change_set.stack
        if (
            change_set.change_set_name == name
            and stack_name in (stack.name, stack.stack_id)
            and stack.stack_id in backend.stacks
        ):
            return change_set
    raise ChangeSetNotFoundError(name)


def _locked(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def under_lock(*args: Any, **kwargs: Any) -> Any:
        with LOCK:
            return method(*args, **kwargs)

    return under_lock


def _patch_backend() -> None:
    backend_class = models.CloudFormationBackend

    create_change_set = backend_class.create_change_set

    def strict_create_change_set(
        self: Any, stack_name: str, change_set_name: str, template: str, *args: Any, **kw: Any
    ) -> Any:
        _validate(template)
        change_set_type = kw.get("change_set_type", args[3] if len(args) > 3 else "")
        if change_set_type == "CREATE":
            for stack_id, stack in list(self.stacks.items()):
                if stack.name == stack_name and stack.status == "REVIEW_IN_PROGRESS":
                    del self.stacks[stack_id]
                elif stack.name == stack_name:
                    raise ValidationError(message=f"Stack [{stack_name}] already exists")
        return create_change_set(self, stack_name, change_set_name, template, *args, **kw)

    backend_class.create_change_set = _locked(strict_create_change_set)  # type: ignore[method-assign]

    def execute_change_set(self: Any, change_set: Any, stack: Any) -> None:
        kind = change_set.change_set_type
        stack._add_stack_event(f"{kind}_IN_PROGRESS", resource_status_reason="User Initiated")
        APPLYING.append(True)
        try:
            change_set.apply()
        finally:
            APPLYING.pop()
        stack._add_stack_event(f"{kind}_COMPLETE")
        change_set.execution_status = "EXECUTE_COMPLETE"
        stack.status = f"{kind}_COMPLETE"
        stack.template = change_set.template

    def strict_execute(self: Any, change_set_name: str, stack_name: str | None = None) -> None:
        change_set = find_change_set(self, change_set_name, stack_name)
        stack = self.stacks[change_set.stack_id]
        ROOT_CAUSE.clear()
        # moto's change-set path gives a new stack no view of the account's exports, and never
        # publishes the stack's own exports: CloudFormation does both.
        stack.cross_stack_resources = self.exports
        stack.resource_map.cross_stack_resources = self.exports
        if change_set.change_set_type == "UPDATE":
            _in_use(self, stack, exports_of(_parse(change_set.template)))
            old_template = stack.template
            try:
                execute_change_set(self, change_set, stack)
                _tag_ec2(stack)
                _publish_outputs(self, stack)
            except Exception as error:
                if os.environ.get("REHEARSAL_TRACEBACKS"):
                    traceback.print_exc()
                _failed_resource(stack, error, "UPDATE_FAILED")
                stack.template = old_template
                stack._parse_template()
                stack.status = "UPDATE_ROLLBACK_COMPLETE"
                stack._add_stack_event("UPDATE_ROLLBACK_COMPLETE")
                change_set.execution_status = "EXECUTE_FAILED"
            return
        try:
            execute_change_set(self, change_set, stack)
            _tag_ec2(stack)
            _publish_outputs(self, stack)
        except Exception as error:
            _failed_resource(stack, error, "CREATE_FAILED")
            stack._add_stack_event(
                "ROLLBACK_IN_PROGRESS",
                resource_status_reason=(
                    "The following resource(s) failed to create: "
                    f"[{getattr(error, 'logical_id', stack.name)}]. Rollback requested by user."
                ),
            )
            _rollback_create(stack)
            stack.status = "ROLLBACK_COMPLETE"
            stack._add_stack_event("ROLLBACK_COMPLETE")
            change_set.execution_status = "EXECUTE_FAILED"

    backend_class.execute_change_set = _locked(strict_execute)  # type: ignore[method-assign]

    def strict_delete_stack(self: Any, name_or_stack_id: str) -> None:
        stacks = [s for s in self.stacks.values() if name_or_stack_id in (s.stack_id, s.name)]
        for stack in stacks:
            if stack.enable_termination_protection:
                raise ValidationError(
                    message=f"Stack [{stack.name}] cannot be deleted while TerminationProtection "
                    "is enabled"
                )
            _in_use(self, stack, set())
            export_names = [export.name for export in stack.exports]
            frozen = FrozenOutputs(stack)
            stack._add_stack_event("DELETE_IN_PROGRESS", resource_status_reason="User Initiated")
            ROOT_CAUSE.clear()
            try:
                stack.resource_map.delete()
            except Exception as error:
                _failed_resource(stack, error, "DELETE_FAILED")
                stack.status = "DELETE_FAILED"
                stack.output_map = frozen
                stack._add_stack_event(
                    "DELETE_FAILED", resource_status_reason=str(getattr(error, "message", error))
                )
                continue
            stack._add_stack_event("DELETE_COMPLETE")
            stack.status = "DELETE_COMPLETE"
            _forget_resources(stack)
            self.stacks.pop(stack.stack_id, None)
            self.deleted_stacks[stack.stack_id] = stack
            for change_set_id, change_set in list(self.change_sets.items()):
                if change_set.stack_id == stack.stack_id:
                    del self.change_sets[change_set_id]
            for export_name in export_names:
                self.exports.pop(export_name, None)

    backend_class.delete_stack = _locked(strict_delete_stack)  # type: ignore[method-assign]
    for name in (
        "describe_stacks",
        "list_exports",
        "describe_stack_events",
        "list_stack_resources",
        "describe_stack_resources",
        "describe_change_set",
        "get_template",
    ):
        if hasattr(backend_class, name):
            setattr(backend_class, name, _locked(getattr(backend_class, name)))


def dependencies(template: dict[str, Any]) -> dict[str, set[str]]:
    """Each resource's logical id -> the resources it refers to (Ref, GetAtt, Sub, DependsOn)."""
    resources = template.get("Resources", {})
    graph: dict[str, set[str]] = {}
    for logical_id, body in resources.items():
        graph[logical_id] = set(unresolved({"Resources": {logical_id: body}}).get("Resources", []))
        graph[logical_id] &= set(resources)
    return graph


def _ordered_delete(self: Any) -> None:
    """Delete a stack's resources as CloudFormation does: a resource only after every resource
    that refers to it is gone, ``DeletionPolicy: Retain`` kept; a failure keeps everything the
    failed resource refers to and fails the stack with the first reason."""
    template = {"Resources": self._resource_json_map}
    graph = dependencies(template)
    referrers: dict[str, set[str]] = {name: set() for name in graph}
    for name, targets in graph.items():
        for target in targets:
            referrers[target].add(name)
    pending = set(graph)
    blocked: set[str] = set()
    first_error: Exception | None = None
    while pending:
        ready = sorted(n for n in pending if not (referrers[n] & pending))
        if not ready:
            break
        for name in ready:
            pending.discard(name)
            if name in blocked:
                continue
            body = self._resource_json_map[name]
            resource = self._parsed_resources.get(name)
            if body.get("DeletionPolicy") == "Retain" or not isinstance(
                resource, CloudFormationModel
            ):
                self._parsed_resources.pop(name, None)
                continue
            try:
                self._delete_resource(resource, body)
            except Exception as error:
                first_error = first_error or error
                stack = [name]
                while stack:
                    for target in graph[stack.pop()]:
                        if target not in blocked:
                            blocked.add(target)
                            stack.append(target)
                continue
            self._parsed_resources.pop(name, None)
    if first_error is not None:
        raise first_error


def _diff_in_creation_order(
    original: Callable[..., dict[str, Any]],
) -> Callable[..., dict[str, Any]]:
    """moto's change-set path creates the added resources in template order and ignores
    ``DependsOn``; order them as ``creation_order`` does."""

    @functools.wraps(original)
    def diff(self: Any, other_template: dict[str, Any], *args: Any, **kw: Any) -> dict[str, Any]:
        result = original(self, other_template, *args, **kw)
        order = _order(other_template.get("Resources", {}))
        result["Add"] = sorted(result["Add"], key=order.index)
        return result

    return diff


def creation_order(self: Any) -> list[str]:
    """See ``_order``: moto's own create path."""
    return _order(self._resource_json_map)


def _order(resource_json_map: dict[str, Any]) -> list[str]:
    """The order moto creates a stack's resources in: every resource after what it refers to
    (Ref, GetAtt, Sub, DependsOn), and otherwise the *last* in the template first.
    CloudFormation creates resources without a dependency between them at the same time, in
    no order; a template usually declares what is used before its user, so the reverse
    order is the one that shows a missing dependency (a property that names a resource by a
    literal ARN carries none)."""
    graph = dependencies({"Resources": resource_json_map})
    order: list[str] = []
    done: set[str] = set()

    def visit(name: str) -> None:
        if name in done:
            return
        done.add(name)
        for target in sorted(graph[name]):
            visit(target)
        order.append(name)

    for name in reversed(list(resource_json_map)):
        visit(name)
    return order


#: Non-empty while a change set is being applied: only then may moto's lazy resource map
#: create a resource it is asked for.
APPLYING: list[bool] = []


def _patch_lazy_map() -> None:
    """moto creates a resource the first time anything reads it from the map, even a
    ``DescribeStackResources`` after a failure or a deletion: the CDK CLI's read of a failed
    stack would create again what was rolled back or deleted. Outside a change set the map
    shows only the resources that exist."""
    get_item = parsing.ResourceMap.__getitem__
    iterate = parsing.ResourceMap.__iter__

    def getitem(self: Any, key: str) -> Any:
        if not APPLYING and key not in self._parsed_resources and key in self._resource_json_map:
            raise KeyError(key)
        return get_item(self, key)

    def iterate_existing(self: Any) -> Iterator[str]:
        if APPLYING:
            return iterate(self)  # type: ignore[no-any-return]
        return iter([k for k in self._resource_json_map if k in self._parsed_resources])

    parsing.ResourceMap.__getitem__ = getitem  # type: ignore[method-assign]
    parsing.ResourceMap.__iter__ = iterate_existing  # type: ignore[method-assign]


def _patch_delete_failure_reason() -> None:
    """moto's ResourceMap.delete raises its last exception; keep which resource it was."""
    original: Callable[..., None] = parsing.ResourceMap._delete_resource

    def delete_resource(self: Any, parsed_resource: Any, resource_json: dict[str, Any]) -> None:
        try:
            original(self, parsed_resource, resource_json)
        except Exception as error:
            error.logical_id = getattr(parsed_resource, "logical_resource_id", "")  # type: ignore[attr-defined]
            error.resource_type = resource_json.get("Type")  # type: ignore[attr-defined]
            raise

    parsing.ResourceMap._delete_resource = delete_resource  # type: ignore[method-assign]
    parsing.ResourceMap.delete = _ordered_delete  # type: ignore[method-assign]
    parsing.ResourceMap._ResourceMap__get_resources_in_dependency_order = creation_order  # type: ignore[attr-defined]
    parsing.ResourceMap.build_resource_diff = _diff_in_creation_order(  # type: ignore[method-assign]
        parsing.ResourceMap.build_resource_diff
    )


def _patch_responses() -> None:
    def describe_change_set(self: Any) -> Any:
        with LOCK:
            found = find_change_set(
                self.cloudformation_backend,
                self._get_param("ChangeSetName"),
                self._get_param("StackName"),
            )
        from moto.core.responses import ActionResult

        return ActionResult(found)

    def delete_change_set(self: Any) -> Any:
        """Deleting a change set by a name that no change set has succeeds, as on
        CloudFormation (the CDK CLI deletes its change set name before every deploy)."""
        with LOCK:
            backend = self.cloudformation_backend
            try:
                found = find_change_set(
                    backend, self._get_param("ChangeSetName"), self._get_param("StackName")
                )
            except ChangeSetNotFoundError:
                return EmptyResult()
            del backend.change_sets[found.change_set_id]
        return EmptyResult()

    from moto.cloudtrail import responses as cloudtrail_responses

    def lookup_events(self: Any) -> str:
        """CloudTrail ``LookupEvents`` (the CDK CLI asks it who changed a failed resource):
        the local account records no management events, so the answer is none."""
        return json.dumps({"Events": []})

    cloudtrail_responses.CloudTrailResponse.lookup_events = lookup_events  # type: ignore[attr-defined]
    responses.CloudFormationResponse.describe_change_set = describe_change_set  # type: ignore[method-assign]
    responses.CloudFormationResponse.delete_change_set = delete_change_set  # type: ignore[method-assign]

    def update_termination_protection(self: Any) -> Any:
        name = self._get_param("StackName")
        enabled = str(self._get_param("EnableTerminationProtection")).lower() == "true"
        stack = self.cloudformation_backend.get_stack(name)
        stack.enable_termination_protection = enabled
        from moto.core.responses import ActionResult

        return ActionResult({"StackId": stack.stack_id})

    responses.CloudFormationResponse.update_termination_protection = update_termination_protection  # type: ignore[attr-defined]


def _patch_kms_tags() -> None:
    """moto bugs: ``AWS::KMS::Key`` passes CloudFormation's ``Key``/``Value`` tags to a tagger
    that wants KMS's ``TagKey``/``TagValue`` (KeyError 'TagKey'), and keeps the key policy as
    an object where ``DescribeKey`` expects JSON text."""
    from moto.kms.models import Key

    original = Key.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create(
        cls: Any, resource_name: str, cloudformation_json: dict[str, Any], *args: Any, **kw: Any
    ) -> Any:
        properties = cloudformation_json.get("Properties", {})
        if isinstance(properties.get("KeyPolicy"), dict):
            # moto keeps the template's policy object; KMS (and moto's DescribeKey) hold JSON.
            properties["KeyPolicy"] = json.dumps(properties["KeyPolicy"])
        if properties.get("Tags"):
            properties["Tags"] = [
                {"TagKey": t["Key"], "TagValue": t["Value"]} if "Key" in t else t
                for t in properties["Tags"]
            ]
        return original(cls, resource_name, cloudformation_json, *args, **kw)

    Key.create_from_cloudformation_json = classmethod(create)  # type: ignore[method-assign,assignment]


def _patch_ssm_name() -> None:
    """moto bug: an ``AWS::SSM::Parameter`` without ``Name`` fails (None.lower()); CloudFormation
    names it ``CFN-<logical id>-<suffix>``."""
    from moto.ssm.models import Parameter

    original = Parameter.create_from_cloudformation_json.__func__  # type: ignore[attr-defined]

    def create(
        cls: Any, resource_name: str, cloudformation_json: dict[str, Any], *args: Any, **kw: Any
    ) -> Any:
        properties = cloudformation_json.setdefault("Properties", {})
        if not properties.get("Name"):
            logical_id = str(kw.get("LogicalId", "Parameter"))
            properties["Name"] = f"CFN-{logical_id}-{resource_name.rsplit('-', 1)[-1]}"
        return original(cls, resource_name, cloudformation_json, *args, **kw)

    Parameter.create_from_cloudformation_json = classmethod(create)  # type: ignore[method-assign,assignment]


def _patch_previous_ssm_parameter() -> None:
    """moto bug: on an update with ``UsePreviousValue`` (the CDK CLI's ``BootstrapVersion``)
    moto feeds the previously *resolved* value of an SSM-typed parameter back in as if it
    were the parameter's path, and fails (None.value). CloudFormation resolves the previous
    path again; here the previous value is kept when it is not a path."""
    original = parsing.ResourceMap.parse_ssm_parameter

    def parse(self: Any, value: str, value_type: str) -> Any:
        from moto.ssm.models import ssm_backends

        backend = ssm_backends[self._account_id][self._region_name]
        if not str(value).startswith("/") and backend.get_parameter(value) is None:
            return value
        return original(self, value, value_type)

    parsing.ResourceMap.parse_ssm_parameter = parse  # type: ignore[method-assign]


def _patch_route_table_delete() -> None:
    """moto gap: ``AWS::EC2::RouteTable`` has no CloudFormation delete, so a destroyed stack
    left its route tables and the VPC could never be deleted. Deleted here as EC2 would, its
    routes and associations (deleted before it, in dependency order) with it."""
    from moto.ec2.models import ec2_backends
    from moto.ec2.models.route_tables import RouteTable

    def delete(
        cls: Any, resource_name: str, cloudformation_json: Any, account_id: str, region_name: str
    ) -> None:
        backend = ec2_backends[account_id][region_name]
        table = backend.route_tables.get(resource_name)
        if table is not None:
            table.associations.clear()
            backend.route_tables.pop(resource_name, None)

    RouteTable.delete_from_cloudformation_json = classmethod(delete)  # type: ignore[method-assign,assignment]


def _patch_fsx() -> None:
    to_dict = fsx_models.FileSystem.to_dict

    def with_vpc(self: Any) -> dict[str, Any]:
        result = dict(to_dict(self))
        if getattr(self, "vpc_id", None):
            result["VpcId"] = self.vpc_id
        return result

    fsx_models.FileSystem.to_dict = with_vpc  # type: ignore[method-assign]


def install() -> None:
    """Apply every patch once per process."""
    if _installed:
        return
    parsing.resource_class_from_type = resource_class  # type: ignore[assignment]
    _patch_parse_and_create()
    _patch_backend()
    _patch_delete_failure_reason()
    _patch_responses()
    _patch_fsx()
    _patch_kms_tags()
    _patch_ssm_name()
    _patch_lazy_map()
    _patch_previous_ssm_parameter()
    _patch_route_table_delete()
    _installed.append(True)


__all__ = ["ResourceFailedError", "install", "unresolved"]
