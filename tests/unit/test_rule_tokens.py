"""rules/tokens.is_unresolved agrees with aws_cdk's own Token.is_unresolved on every kind of
token and on plain values, so the floor-1 rules skip exactly what synthesis cannot check."""

from __future__ import annotations

import pytest
from aws_cdk import Fn, Token

from fm_constructs.rules.tokens import is_unresolved

VALUES: list[object] = [
    Token.as_string(Fn.ref("Bucket")),
    f"s3://{Token.as_string(Fn.ref('Bucket'))}/datasets/",
    Token.as_number(Fn.ref("Size")),
    Token.as_number(Fn.get_att("Fs", "Size")),
    Token.as_list(Fn.ref("Subnets")),
    Fn.ref("Bucket"),
    "/datasets",
    "s3://bucket/datasets/",
    "#{not a token}",
    1024,
    1024.0,
    -1.5e289,
    ["a"],
    [],
    None,
    True,
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_agrees_with_aws_cdk(value: object) -> None:
    assert is_unresolved(value) is Token.is_unresolved(value)
