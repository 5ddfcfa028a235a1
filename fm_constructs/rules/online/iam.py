"""Online rule: each role of ``platform.admin_role_arns`` exists in the account, under exactly
that ARN (iam:GetRole)."""

from __future__ import annotations

import re
from typing import Any

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.rules.findings import define
from fm_constructs.rules.online.aws import ask

ADMIN_ROLE = define(
    "FM710",
    "An IAM role of platform.admin_role_arns does not exist in the account, or exists "
    "under another ARN (its path differs), so no one gets cluster-admin access through it.",
    "Write each role's ARN as iam get-role prints it (Role.Arn, path included).",
    severity=None,
)

_ROLE_ARN = re.compile(r"^arn:[^:]+:iam::(?P<account>\d{12}):role/(?:.*/)?(?P<name>[^/]+)$")
_ROLE_FIX = (
    "list roles that exist, by the ARN aws iam get-role --role-name NAME --query Role.Arn prints"
)


def _found(severity: Severity, detail: str, fix: str = "") -> list[Finding]:
    return [Finding(ADMIN_ROLE.code, severity, "", None, detail, fix)]


def admin_role(iam: Any, arn: str) -> list[Finding]:
    """The role ``arn`` names exists under that ARN: a role created with a path, such as IAM
    Identity Center's ``aws-reserved/sso.amazonaws.com/...``, is another principal without
    it."""
    match = _ROLE_ARN.match(arn)
    if match is None:  # the loader accepts only role ARNs; a guard for profiles in code
        return _found(Severity.ERROR, f"{arn} is not an IAM role ARN", _ROLE_FIX)
    answer = ask(
        iam,
        "get_role",
        "iam:GetRole",
        missing_codes=frozenset({"NoSuchEntity"}),
        RoleName=match["name"],
    )
    if answer is None:
        return _found(
            Severity.ERROR,
            f"{arn}: no role {match['name']} in account {match['account']}",
            _ROLE_FIX,
        )
    actual = str(answer["Role"]["Arn"])
    if actual != arn:
        return _found(
            Severity.ERROR,
            f"{arn}: the role {match['name']} is {actual}",
            f"write {actual} in platform.admin_role_arns",
        )
    return _found(Severity.INFO, f"{arn} exists")
