"""The CloudFormation resource schema of a type, as the registry publishes it (the copy cfn-lint
ships), and validation of a resource's resolved properties against it.

CloudFormation's resource handlers reject, at create time, a resource whose properties miss a
``required`` property, carry one the schema does not define (``additionalProperties: false``),
or break a type, enum, pattern, length or range. Values reach the handler as JSON after
intrinsic functions are resolved; CloudFormation converts the strings "3" and "true" of a
template to numbers and booleans where the schema asks for them, so this validation accepts
those strings too.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import regex
from cfnlint.schema import PROVIDER_SCHEMA_MANAGER
from jsonschema import Draft7Validator

SCHEMA_REGION = "us-west-2"


def _is_integer(checker: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, str) and value.lstrip("-").isdigit()


def _is_number(checker: Any, value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    if isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return False
        return True
    return False


def _is_boolean(checker: Any, value: Any) -> bool:
    return isinstance(value, bool) or value in ("true", "false", "True", "False")


_TYPES = Draft7Validator.TYPE_CHECKER.redefine_many(
    {"integer": _is_integer, "number": _is_number, "boolean": _is_boolean}
)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Any:
    """Registry schemas use ECMA-262 patterns such as ``\\p{L}``: ``regex`` (a cfn-lint
    dependency) reads them, Python's ``re`` does not."""
    if isinstance(instance, str) and not regex.search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


Validator = jsonschema.validators.extend(
    Draft7Validator, validators={"pattern": _pattern}, type_checker=_TYPES
)


@functools.cache
def schema(resource_type: str) -> dict[str, Any]:
    """The registry schema of ``resource_type`` (KeyError-free: raises LookupError)."""
    try:
        return dict(
            PROVIDER_SCHEMA_MANAGER.get_resource_schema(SCHEMA_REGION, resource_type).schema
        )
    except Exception as error:  # cfn-lint raises its own ResourceNotFoundError
        raise LookupError(f"no CloudFormation schema for {resource_type}") from error


@functools.cache
def attribute_names(resource_type: str) -> frozenset[str]:
    """The ``Fn::GetAtt`` names the type supports (dotted)."""
    return frozenset(
        PROVIDER_SCHEMA_MANAGER.get_resource_schema(SCHEMA_REGION, resource_type).get_atts
    )


def property_names(pointers: list[str] | None) -> list[str]:
    """``/properties/A/B`` pointers as dotted names ``A.B``."""
    return [p.removeprefix("/properties/").replace("/", ".") for p in pointers or []]


def violations(resource_type: str, properties: dict[str, Any]) -> list[str]:
    """Each way ``properties`` break ``resource_type``'s schema, worded like the handlers'
    ``#: required key [X] not found`` / ``#/Path: ...`` messages; empty when they conform."""
    document = schema(resource_type)
    body = {
        "type": "object",
        "properties": document.get("properties", {}),
        "required": document.get("required", []),
        "additionalProperties": document.get("additionalProperties", True),
        "definitions": document.get("definitions", {}),
    }
    for keyword in ("oneOf", "anyOf", "allOf", "dependencies", "dependentRequired"):
        if keyword in document:
            body[keyword] = document[keyword]
    read_only = set(property_names(document.get("readOnlyProperties")))
    messages = [
        f"#: extraneous key [{name}] is not permitted (read-only)"
        for name in properties
        if name in read_only
    ]
    for error in sorted(Validator(body).iter_errors(properties), key=lambda e: list(e.path)):
        path = "/".join(str(p) for p in error.absolute_path)
        if error.validator == "required":
            missing = str(error.message).split("'")[1]
            where = f"#/{path}" if path else "#"
            messages.append(f"{where}: required key [{missing}] not found")
        elif error.validator == "additionalProperties":
            where = f"#/{path}" if path else "#"
            for name in regex.findall(r"'([^']+)'", error.message.split("(", 1)[-1]):
                messages.append(f"{where}: extraneous key [{name}] is not permitted")
        else:
            messages.append(f"#/{path}: {error.message}")
    return messages
