"""The data perimeter's profile keys (FM209, FM210) and the DataBucket construct's perimeter:
the denies it adds to the bucket and key policies, what it lets in, the opt-out, and the
warning for a role granted from outside. The templates of every shipped profile are checked in
tests/stacks/test_isolation.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from aws_cdk import App, Stack
from aws_cdk import aws_iam as iam
from aws_cdk.assertions import Annotations, Match, Template

from fm_constructs.config.loader import parse_profile
from fm_constructs.errors import FmValidationError
from fm_constructs.storage import DataBucket, DataPerimeter
from fm_constructs.storage.data_perimeter import perimeter_role_path
from tests.profile_data import profile_with

ROLE = "arn:aws:iam::123456789012:role/DataBreakGlass"


def test_the_perimeter_is_on_by_default_and_takes_its_principals_from_the_profile() -> None:
    profile = parse_profile(
        profile_with(
            **{
                "platform.account": "123456789012",
                "platform.break_glass_role_arn": ROLE,
                "platform.data_perimeter_principals": ["arn:aws:iam::123456789012:role/Eval"],
            }
        )
    )
    assert profile.platform.data_perimeter is True
    assert profile.platform.break_glass_role_arn == ROLE
    assert "FM210" not in {w.code for w in profile.warnings}


def test_opting_out_warns() -> None:
    profile = parse_profile(profile_with(**{"platform.data_perimeter": False}))
    (warning,) = [w for w in profile.warnings if w.code == "FM210"]
    assert warning.key == "platform.data_perimeter"


GLASS = "platform.break_glass_role_arn"
PRINCIPALS = ["arn:aws:iam::123456789012:role/A", "B"]


@pytest.mark.parametrize(
    ("key", "value", "where"),
    [
        ("break_glass_role_arn", "DataBreakGlass", GLASS),
        ("break_glass_role_arn", "arn:aws:iam::123456789012:user/ops", GLASS),
        ("break_glass_role_arn", "arn:aws:iam::210987654321:role/Ops", GLASS),
        ("data_perimeter_principals", PRINCIPALS, "platform.data_perimeter_principals[1]"),
    ],
    ids=["bare-name", "user", "other-account", "list"],
)
def test_a_principal_that_is_not_a_role_of_the_account_is_refused(
    key: str, value: Any, where: str
) -> None:
    data = profile_with(**{"platform.account": "123456789012", f"platform.{key}": value})
    with pytest.raises(FmValidationError) as caught:
        parse_profile(data)
    (finding,) = [f for f in caught.value.findings if f.code == "FM209"]
    assert finding.key == where


def _bucket(**options: Any) -> tuple[Stack, DataBucket]:
    stack = Stack(App(), "fm-platform", env={"account": "123456789012", "region": "us-west-2"})
    return stack, DataBucket(stack, "Data", **options)


def _data_policy(template: Template) -> dict[str, Any]:
    """The data bucket's policy (not its log bucket's)."""
    (policy,) = [
        resource
        for logical_id, resource in template.find_resources("AWS::S3::BucketPolicy").items()
        if logical_id.startswith("DataPolicy")
    ]
    return policy


def _denies(document: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in document["Statement"] if s["Effect"] == "Deny" and "Sid" in s]


def test_the_bucket_and_key_policies_deny_data_actions_outside_the_perimeter() -> None:
    stack, data = _bucket(perimeter=DataPerimeter.of_deployment("fm", [ROLE]))
    assert data.role_path == "/fm-constructs/fm/data/"
    template = Template.from_stack(stack)
    policy = _data_policy(template)
    bucket_denies = _denies(policy["Properties"]["PolicyDocument"])
    assert [s["Sid"] for s in bucket_denies] == [
        "DenyDataOutsidePerimeter",
        "DenyDataDeployerOnlyThroughServices",
    ]
    outside = json.dumps(bucket_denies[0]["Condition"])
    assert ":role/fm-constructs/fm/data/*" in outside
    assert "AWSServiceRoleForFSxS3Access_*" in outside and ROLE in outside
    assert "cfn-exec-role" in outside
    assert bucket_denies[0]["Condition"]["BoolIfExists"] == {"aws:PrincipalIsAWSService": "false"}
    assert bucket_denies[1]["Condition"]["BoolIfExists"] == {"aws:ViaAWSService": "false"}
    assert "s3:GetObject*" in bucket_denies[0]["Action"]
    assert "s3:PutBucketPolicy" not in bucket_denies[0]["Action"]  # administrators keep it
    (key,) = [
        k for k in template.find_resources("AWS::KMS::Key").values() if "Data " in json.dumps(k)
    ]
    key_denies = _denies(key["Properties"]["KeyPolicy"])
    assert [s["Sid"] for s in key_denies] == [
        "DenyKeyUseOutsidePerimeter",
        "DenyKeyUseDeployerOnlyThroughServices",
    ]
    assert "kms:PutKeyPolicy" not in key_denies[0]["Action"]
    assert "kms:Decrypt" in key_denies[0]["Action"]


def test_the_default_perimeter_is_the_stacks() -> None:
    _stack, data = _bucket()
    assert data.role_path == perimeter_role_path("fm-platform")


def test_opted_out_the_policies_deny_nothing_but_plain_http() -> None:
    stack, data = _bucket(perimeter=False)
    assert data.perimeter is None and data.role_path is None
    template = Template.from_stack(stack)
    policy = _data_policy(template)
    assert not _denies(policy["Properties"]["PolicyDocument"])


def test_a_role_granted_from_outside_the_perimeter_is_warned_about() -> None:
    stack, data = _bucket()
    principal = iam.ServicePrincipal("pods.eks.amazonaws.com")
    outside = iam.Role(stack, "Outside", assumed_by=principal)
    inside = iam.Role(stack, "Inside", assumed_by=principal, path=data.role_path)
    data.grant_read(outside)
    data.grant_read_write(inside)
    warnings = Annotations.from_stack(stack).find_warning(
        "*", Match.string_like_regexp("data-perimeter-outside")
    )
    assert [w.id for w in warnings] == ["/fm-platform/Outside"]
