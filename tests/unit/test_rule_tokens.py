"""rules/tokens.is_unresolved agrees with aws_cdk's own Token.is_unresolved on every kind of
token and on plain values, so the floor-1 rules skip exactly what synthesis cannot check."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from aws_cdk import Fn, Token

from fm_constructs.rules.tokens import is_unresolved

#: Each case by a stable name (test ids must not depend on token numbers, which differ between
#: the processes that collect the tests); the value is made when the test runs.
VALUES: dict[str, Callable[[], object]] = {
    "string token": lambda: Token.as_string(Fn.ref("Bucket")),
    "string with a token inside": lambda: f"s3://{Token.as_string(Fn.ref('Bucket'))}/datasets/",
    "number token of a Ref": lambda: Token.as_number(Fn.ref("Size")),
    "number token of a GetAtt": lambda: Token.as_number(Fn.get_att("Fs", "Size")),
    "list token": lambda: Token.as_list(Fn.ref("Subnets")),
    "intrinsic": lambda: Fn.ref("Bucket"),
    "path": lambda: "/datasets",
    "s3 url": lambda: "s3://bucket/datasets/",
    "token-like text": lambda: "#{not a token}",
    "int": lambda: 1024,
    "float": lambda: 1024.0,
    "huge negative float": lambda: -1.5e289,
    "list": lambda: ["a"],
    "empty list": lambda: [],
    "None": lambda: None,
    "bool": lambda: True,
}


@pytest.mark.parametrize("case", sorted(VALUES))
def test_agrees_with_aws_cdk(case: str) -> None:
    value = VALUES[case]()
    assert is_unresolved(value) is Token.is_unresolved(value)
