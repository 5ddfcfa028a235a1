"""One way to call AWS from an online rule: the answer, None for a "does not exist" error the
rule expects, and :class:`AwsCallError` (naming the IAM action) for every other error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import botocore.exceptions


class AwsCallError(Exception):
    """AWS did not answer ``action`` (denied, throttled, unreachable, ...): the check cannot
    tell, which is not a finding (``fmc preflight`` reports it as an error of the check)."""

    def __init__(self, error: BaseException, action: str) -> None:
        super().__init__(f"{action}: {error}")
        self.error = error
        self.action = action


def error_code(error: BaseException) -> str | None:
    """The AWS error code of a ClientError, else None."""
    if isinstance(error, botocore.exceptions.ClientError):
        code = error.response.get("Error", {}).get("Code")
        return str(code) if code else None
    return None


def ask(
    client: Any,
    operation: str,
    action: str,
    *,
    missing_codes: frozenset[str] = frozenset(),
    **params: Any,
) -> dict[str, Any] | None:
    """``client.<operation>(**params)``; None when AWS answers with one of ``missing_codes``
    (the thing asked about does not exist)."""
    try:
        result: dict[str, Any] = getattr(client, operation)(**params)
    except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError) as error:
        if error_code(error) in missing_codes:
            return None
        raise AwsCallError(error, action) from error
    return result


def ask_required(client: Any, operation: str, action: str, **params: Any) -> dict[str, Any]:
    """Like :func:`ask` for operations whose answer always exists."""
    result = ask(client, operation, action, **params)
    assert result is not None  # no missing_codes were given
    return result


def ask_pages(
    client: Any, operation: str, action: str, *, token: str = "NextToken", **params: Any
) -> Iterator[dict[str, Any]]:
    """Every page of ``operation``'s answer, following the ``token`` key (``NextToken``, or
    ``nextToken`` in the newer APIs)."""
    next_token: str | None = None
    while True:
        page = dict(params, **{token: next_token}) if next_token else params
        answer = ask_required(client, operation, action, **page)
        yield answer
        next_token = answer.get(token)
        if not next_token:
            return
