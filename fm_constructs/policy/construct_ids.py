"""The identity of a construct in the CDK's JavaScript.

Two Python proxies of one JavaScript object are different Python objects, so what the guard
aspects remember about a construct (its CloudFormation type, whether it sits in a nested Stage)
is keyed by the JavaScript object's id instead.
"""

from __future__ import annotations

from typing import Any, cast

from constructs import IConstruct


def object_id(construct: IConstruct) -> str:
    """The id of ``construct``'s object in the CDK's JavaScript (read without a call into it)."""
    return str(cast(Any, construct).__jsii_ref__.ref)
