"""One CloudFormation model for every resource type moto's CloudFormation does not model.

A resource of such a type is created the way a registry resource handler creates it: its
resolved properties are validated against the type's published schema (``schemas``), the
service's own create-time rules run (``service_rules``), the physical id follows the schema's
primary identifier, and ``Fn::GetAtt`` answers the schema's read-only properties. On update a
change to a create-only property replaces the resource, and CloudFormation refuses to replace a
resource whose name the template fixes. The created resources live in ``STORE`` until deleted,
so a retained resource outlives its stack exactly like the real one.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from moto.cloudformation.exceptions import ValidationError
from moto.core.common_models import CloudFormationModel

from tests.rehearsal.local_aws import schemas


class ResourceFailedError(ValidationError):
    """A resource the handler refused; the message is the service's."""

    def __init__(self, message: str) -> None:
        super().__init__(message=message)


@dataclass
class Created:
    """A resource created through this model and not deleted yet."""

    resource_type: str
    physical_id: str
    properties: dict[str, Any]
    attributes: dict[str, Any] = field(default_factory=dict)
    account: str = ""
    region: str = ""
    logical_id: str = ""
    stack_id: str = ""


#: (account, region, type) -> physical id -> resource: what exists in the local account.
STORE: dict[tuple[str, str, str], dict[str, Created]] = {}

#: ``rule(resource)``: the service's create-time checks for a type; raises ResourceFailedError.
Rule = Callable[[Created], None]
CREATE_RULES: dict[str, list[Rule]] = {}
DELETE_RULES: dict[str, list[Rule]] = {}
#: ``hook(resource)``: fills attributes from a service backend (e.g. a real security group).
CREATE_HOOKS: dict[str, list[Rule]] = {}
DELETE_HOOKS: dict[str, list[Rule]] = {}

#: Resource type -> how many of its next creations fail with a transient service error: the
#: rehearsal's way to make a first deploy fail and see it roll back and succeed on retry.
FAULTS: dict[str, int] = {}

#: Physical id prefixes where the service's ids have one the other stacks' code relies on.
ID_PREFIX = {
    "AWS::FSx::FileSystem": "fs-",
    "AWS::FSx::DataRepositoryAssociation": "dra-",
    "AWS::EC2::SecurityGroupEgress": "sgr-",
    "AWS::APS::Workspace": "ws-",
    "AWS::APS::Scraper": "s-",
    "AWS::Grafana::Workspace": "g-",
}


#: Types whose primary identifier is their ARN though the schema names it ``Id``, with the
#: service's ARN shape: a Secrets Manager secret's ``Ref`` (and ``Id``) is the secret's ARN,
#: its name plus a six-character suffix (CloudFormation User Guide, AWS::SecretsManager::Secret,
#: "Return values"; Secrets Manager User Guide, "ARN of a secret").
ARN_IDENTIFIED: dict[str, str] = {
    "AWS::SecretsManager::Secret": "arn:aws:secretsmanager:{region}:{account}:secret:{name}-{tail}",
}


def existing(account: str, region: str, resource_type: str) -> dict[str, Created]:
    """The resources of ``resource_type`` that exist in the account and region."""
    return STORE.setdefault((account, region, resource_type), {})


def _arn(resource: Created, name: str) -> str:
    service = resource.resource_type.split("::")[1].lower()
    kind = resource.resource_type.split("::")[2].lower()
    return f"arn:aws:{service}:{resource.region}:{resource.account}:{kind}/{name}"


def _get_path(source: dict[str, Any], dotted: str) -> Any:
    value: Any = source
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


class SchemaResource(CloudFormationModel):
    """A resource of a type moto lacks, checked against its schema and service rules."""

    def __init__(self, created: Created) -> None:
        self.created = created

    @staticmethod
    def cloudformation_type() -> str:
        return "AWS::Rehearsal::SchemaResource"

    @staticmethod
    def cloudformation_name_type() -> str:
        return ""

    @property
    def physical_resource_id(self) -> str:
        return self.created.physical_id

    @classmethod
    def has_cfn_attr(cls, attr: str) -> bool:
        return True

    def get_cfn_attribute(self, attribute_name: str) -> Any:
        attributes = self.created.attributes
        if attribute_name in attributes:
            return attributes[attribute_name]
        if attribute_name in schemas.attribute_names(self.created.resource_type):
            value = _get_path(self.created.properties, attribute_name)
            if value is None and attribute_name.endswith("Name"):
                value = f"{self.created.logical_id}-{uuid.uuid4().hex[:12]}"
            if value is not None:
                attributes[attribute_name] = value
                return value
        raise ResourceFailedError(
            f"Template error: resource {self.created.logical_id} of type "
            f"{self.created.resource_type} does not support attribute {attribute_name}"
        )

    @classmethod
    def create_from_cloudformation_json(  # type: ignore[override]
        cls,
        resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
        **kwargs: Any,
    ) -> SchemaResource:
        resource_type = str(kwargs["ResourceType"])
        created = create(
            resource_type,
            copy.deepcopy(cloudformation_json.get("Properties") or {}),
            account_id,
            region_name,
            logical_id=str(kwargs["LogicalId"]),
            stack_id=str(kwargs["StackId"]),
        )
        return cls(created)

    @classmethod
    def update_from_cloudformation_json(  # type: ignore[override]
        cls,
        original_resource: SchemaResource,
        new_resource_name: str,
        cloudformation_json: dict[str, Any],
        account_id: str,
        region_name: str,
    ) -> SchemaResource:
        old = original_resource.created
        new_properties = copy.deepcopy(cloudformation_json.get("Properties") or {})
        document = schemas.schema(old.resource_type)
        replaced = [
            name
            for name in schemas.property_names(document.get("createOnlyProperties"))
            if _get_path(old.properties, name) != _get_path(new_properties, name)
        ]
        if not replaced:
            problems = schemas.violations(old.resource_type, new_properties)
            if problems:
                raise ResourceFailedError(
                    f"Properties validation failed for resource {old.logical_id} with "
                    f"message: {problems}"
                )
            old.properties = new_properties
            for rule in CREATE_RULES.get(old.resource_type, []):
                rule(old)
            return original_resource
        named = [n for n in _writable_identifiers(old.resource_type) if n in old.properties]
        if named:
            raise ResourceFailedError(
                f"CloudFormation cannot update a stack when a custom-named resource requires "
                f"replacing. Rename {old.properties[named[0]]} and update the stack again."
            )
        replacement = create(
            old.resource_type,
            new_properties,
            account_id,
            region_name,
            logical_id=old.logical_id,
            stack_id=old.stack_id,
        )
        remove(old)
        return cls(replacement)

    def delete(self, account_id: str, region_name: str) -> None:
        remove(self.created)

    def is_created(self) -> bool:
        return True


def _writable_identifiers(resource_type: str) -> list[str]:
    document = schemas.schema(resource_type)
    read_only = set(schemas.property_names(document.get("readOnlyProperties")))
    return [
        name
        for name in schemas.property_names(document.get("primaryIdentifier"))
        if name not in read_only
    ]


def create(
    resource_type: str,
    properties: dict[str, Any],
    account: str,
    region: str,
    logical_id: str = "",
    stack_id: str = "",
) -> Created:
    """Create one resource the way its handler would, or raise ResourceFailedError."""
    if FAULTS.get(resource_type, 0) > 0:
        FAULTS[resource_type] -= 1
        raise ResourceFailedError(
            f"InternalFailure: {resource_type} {logical_id}: the service could not complete "
            "the request (a transient fault the rehearsal injected)"
        )
    problems = schemas.violations(resource_type, properties)
    if problems:
        raise ResourceFailedError(
            f"Properties validation failed for resource {logical_id} with message: {problems}"
        )
    document = schemas.schema(resource_type)
    suffix = uuid.uuid4().hex[:17]
    stack_name = stack_id.split("/")[1] if stack_id.count("/") >= 2 else "stack"
    resource = Created(resource_type, "", properties, {}, account, region, logical_id, stack_id)
    identifiers = schemas.property_names(document.get("primaryIdentifier"))
    writable = _writable_identifiers(resource_type)
    short_id = f"{ID_PREFIX.get(resource_type, '')}{suffix}"
    values = []
    arn_shape = ARN_IDENTIFIED.get(resource_type)
    for name in identifiers:
        if arn_shape is not None:
            secret_name = str(properties.get("Name") or f"{logical_id}-{suffix[:12]}")
            tail = suffix[-6:]
            values.append(
                arn_shape.format(region=region, account=account, name=secret_name, tail=tail)
            )
        elif name in writable and name in properties:
            values.append(str(properties[name]))
        elif name in writable:
            # As CloudFormation names resources: the prefix is cut, the random part kept.
            generated = f"{f'{stack_name}-{logical_id}'[:50]}-{suffix[:12]}"
            resource.attributes[name] = generated
            values.append(generated)
        elif name.lower().endswith("arn"):
            values.append(_arn(resource, short_id))
        else:
            values.append(short_id)
    resource.physical_id = "|".join(values)
    taken = existing(account, region, resource_type)
    if writable and resource.physical_id in taken:
        raise ResourceFailedError(f"{resource.physical_id} already exists")
    for name in schemas.property_names(document.get("readOnlyProperties")):
        leaf = name.rsplit(".", 1)[-1]
        if name in identifiers:
            value: Any = resource.physical_id
        elif leaf.lower().endswith("arn"):
            value = _arn(resource, short_id)
        elif leaf.endswith("Id"):
            value = short_id
        else:
            value = f"{leaf.lower()}-{suffix}"
        resource.attributes[name] = value
    for name, value in properties.items():
        resource.attributes.setdefault(name, value)
    for rule in CREATE_RULES.get(resource_type, []):
        rule(resource)
    for hook in CREATE_HOOKS.get(resource_type, []):
        hook(resource)
    taken[resource.physical_id] = resource
    return resource


def remove(resource: Created) -> None:
    """Delete one resource the way its handler would, or raise ResourceFailedError."""
    for rule in DELETE_RULES.get(resource.resource_type, []):
        rule(resource)
    for hook in DELETE_HOOKS.get(resource.resource_type, []):
        hook(resource)
    existing(resource.account, resource.region, resource.resource_type).pop(
        resource.physical_id, None
    )


def set_attribute(resource: Created, dotted: str, value: Any) -> None:
    """Set a ``Fn::GetAtt`` attribute (dotted names as CloudFormation spells them)."""
    resource.attributes[dotted] = value
