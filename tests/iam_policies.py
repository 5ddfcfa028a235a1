"""A small IAM evaluator over synthesized templates, for tests that ask "can this role do that
on this resource?" of the policies a profile deploys.

Intrinsics are rendered as strings with symbolic account, region and partition
(:data:`ACCOUNT`, :data:`REGION`, ``aws``): ``Ref`` of a resource reads as its logical id (a
bucket's name), ``Fn::GetAtt [id, Arn]`` as an ARN of the resource's type built from the logical
id, ``Fn::ImportValue`` as the value the exporting stack's output renders to, ``Fn::Join`` and
``Fn::Sub`` as they evaluate. Identity policies are read from ``AWS::IAM::Policy``,
``AWS::IAM::ManagedPolicy`` and a role's inline ``Policies``; AWS managed policies attached by
ARN are not expanded (the tests using this check they are not attached where it matters).

Allow statements are evaluated without their conditions (conditions only narrow an allow, so
"not allowed" here means not allowed for any request); Deny statements with conditions are
evaluated against the request's ``aws:PrincipalArn`` and its ``aws:PrincipalIsAWSService`` and
``aws:ViaAWSService`` (the condition keys the library uses on denies; a direct call by a
principal unless a test says otherwise); any other condition on a deny makes it not apply
(again the conservative reading). A role's ARN carries its IAM path.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

ACCOUNT = "111122223333"
REGION = "us-east-1"
PSEUDO = {
    "AWS::AccountId": ACCOUNT,
    "AWS::Region": REGION,
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
    "AWS::StackName": "stack",
    "AWS::NoValue": "",
}
#: How ``Fn::GetAtt [id, Arn]`` renders by resource type.
ARN_FORMATS = {
    "AWS::S3::Bucket": "arn:aws:s3:::{id}",
    "AWS::IAM::Role": "arn:aws:iam::" + ACCOUNT + ":role/{id}",
    "AWS::KMS::Key": "arn:aws:kms:" + REGION + ":" + ACCOUNT + ":key/{id}",
}


def role_arn(logical_id: str, path: str = "/") -> str:
    """How ``Fn::GetAtt [id, Arn]`` renders for a role (its IAM path included)."""
    return f"arn:aws:iam::{ACCOUNT}:role{path}{logical_id}"


#: The request context a Deny's ``Bool`` conditions are read against unless a test says
#: otherwise: a principal calling directly, not an AWS service.
DIRECT_CALL = {"aws:principalisawsservice": "false", "aws:viaawsservice": "false"}


class Templates:
    """The templates of one synthesized profile (stack name -> template), for rendering."""

    def __init__(self, templates: Mapping[str, dict[str, Any]]) -> None:
        self.templates = templates
        self._exports: dict[str, tuple[str, Any]] = {}
        for stack, template in templates.items():
            for output in template.get("Outputs", {}).values():
                export = output.get("Export", {}).get("Name")
                if isinstance(export, str):
                    self._exports[export] = (stack, output["Value"])

    def resource(self, stack: str, logical_id: str) -> dict[str, Any]:
        resource: dict[str, Any] = self.templates[stack]["Resources"][logical_id]
        return resource

    def render(self, stack: str, node: Any) -> Any:
        """``node`` with every intrinsic replaced by the string it evaluates to."""
        if isinstance(node, list):
            return [self.render(stack, v) for v in node]
        if not isinstance(node, dict):
            return node
        if "Ref" in node:
            name = node["Ref"]
            return PSEUDO.get(name, name)
        if "Fn::GetAtt" in node:
            target = node["Fn::GetAtt"]
            logical_id, attribute = target if isinstance(target, list) else target.split(".", 1)
            resource = self.templates[stack]["Resources"].get(logical_id, {})
            kind = resource.get("Type", "")
            if attribute == "Arn" and kind == "AWS::IAM::Role":
                return role_arn(logical_id, resource.get("Properties", {}).get("Path", "/"))
            if attribute == "Arn" and kind in ARN_FORMATS:
                return ARN_FORMATS[kind].format(id=logical_id)
            return f"{logical_id}.{attribute}"
        if "Fn::ImportValue" in node:
            name = self.render(stack, node["Fn::ImportValue"])
            exporter, value = self._exports[name]
            return self.render(exporter, value)
        if "Fn::Join" in node:
            separator, parts = node["Fn::Join"]
            return separator.join(str(self.render(stack, p)) for p in parts)
        if "Fn::Sub" in node:
            body = node["Fn::Sub"]
            text, variables = (body, {}) if isinstance(body, str) else body
            rendered = {k: self.render(stack, v) for k, v in variables.items()}

            def sub(match: re.Match[str]) -> str:
                name = match.group(1)
                if name in rendered:
                    return str(rendered[name])
                return str(self.render(stack, {"Ref": name}))

            return re.sub(r"\$\{([^}!]+)\}", sub, text)
        if "Fn::Select" in node:
            index, values = node["Fn::Select"]
            return self.render(stack, values)[int(index)]
        return {k: self.render(stack, v) for k, v in node.items()}


@dataclass(frozen=True)
class Statement:
    effect: str
    actions: tuple[str, ...]
    not_actions: tuple[str, ...]
    resources: tuple[str, ...]
    condition: Mapping[str, Any]

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> Statement:
        def listed(key: str) -> tuple[str, ...]:
            value = raw.get(key, [])
            return tuple(value if isinstance(value, list) else [value])

        return cls(
            raw["Effect"],
            listed("Action"),
            listed("NotAction"),
            listed("Resource"),
            raw.get("Condition", {}),
        )

    def matches(self, action: str, resource: str) -> bool:
        if self.not_actions:
            action_ok = not any(_like(action, a) for a in self.not_actions)
        else:
            action_ok = any(_like(action, a) for a in self.actions)
        return action_ok and any(_like(resource, r, case=True) for r in self.resources)

    def deny_applies(self, principal_arn: str, context: Mapping[str, str] | None = None) -> bool:
        """Whether this Deny's conditions hold for a request by ``principal_arn`` with the
        ``Bool`` context keys of ``context`` (lower-case keys; :data:`DIRECT_CALL` by
        default)."""
        request = {**DIRECT_CALL, **(context or {})}
        for operator, keys in self.condition.items():
            for key, values in keys.items():
                listed = values if isinstance(values, list) else [values]
                if operator in ("Bool", "BoolIfExists") and key.lower() in request:
                    if request[key.lower()] not in [str(v).lower() for v in listed]:
                        return False
                    continue
                if key.lower() != "aws:principalarn":
                    return False
                if operator in ("StringNotEquals", "ArnNotEquals"):
                    if principal_arn in listed:
                        return False
                elif operator in ("StringNotLike", "ArnNotLike"):
                    if any(_like(principal_arn, v, case=True) for v in listed):
                        return False
                elif operator in ("StringEquals", "ArnEquals"):
                    if principal_arn not in listed:
                        return False
                else:
                    return False
        return True


def _like(value: str, pattern: str, *, case: bool = False) -> bool:
    if not case:
        value, pattern = value.lower(), pattern.lower()
    return fnmatch.fnmatchcase(value, pattern.replace("[", "[[]"))


def statements(document: Mapping[str, Any]) -> list[Statement]:
    raw = document.get("Statement", [])
    return [Statement.parse(s) for s in (raw if isinstance(raw, list) else [raw])]


def role_statements(templates: Templates, stack: str, role_id: str) -> list[Statement]:
    """Every identity-policy statement the template attaches to role ``role_id``."""
    found: list[Statement] = []
    role = templates.resource(stack, role_id)
    for inline in role["Properties"].get("Policies", []):
        found += statements(templates.render(stack, inline["PolicyDocument"]))
    for resource in templates.templates[stack]["Resources"].values():
        if resource["Type"] not in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
            continue
        if {"Ref": role_id} in resource["Properties"].get("Roles", []):
            found += statements(templates.render(stack, resource["Properties"]["PolicyDocument"]))
    return found


def identity_allows(found: list[Statement], action: str, resource: str) -> bool:
    """Whether the identity statements allow ``action`` on ``resource`` (no explicit deny)."""
    if any(s.effect == "Deny" and s.matches(action, resource) for s in found):
        return False
    return any(s.effect == "Allow" and s.matches(action, resource) for s in found)


def resource_policy_denies(
    found: list[Statement],
    principal_arn: str,
    action: str,
    resource: str,
    context: Mapping[str, str] | None = None,
) -> bool:
    """Whether a Deny of a resource policy applies to ``principal_arn`` doing ``action``
    (``context``: the request's ``Bool`` condition keys, see :meth:`Statement.deny_applies`)."""
    return any(
        s.effect == "Deny"
        and s.matches(action, resource)
        and s.deny_applies(principal_arn, context)
        for s in found
    )


def roles(templates: Templates) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(stack, logical id, resource) of every IAM role of the profile."""
    for stack, template in templates.templates.items():
        for logical_id, resource in template["Resources"].items():
            if resource["Type"] == "AWS::IAM::Role":
                yield stack, logical_id, resource
