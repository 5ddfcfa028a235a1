"""boto3 sessions and AWS errors turned into one-line messages with a fix.

Every AWS call of the CLI goes through a client made here, so retries, the region and the
credentials check are the same everywhere, and every botocore error becomes a
:class:`~fm_constructs.cli.exit_codes.CliError` (exit 3) instead of a traceback.
"""

from __future__ import annotations

from typing import Any

import boto3
import botocore.exceptions
from botocore.config import Config

from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.rules.online.aws import AwsCallError, ask
from fm_constructs.rules.online.aws import error_code as error_code

#: Standard retry mode backs off on throttling; three attempts keep a stuck command short.
_CLIENT_CONFIG = Config(retries={"max_attempts": 3, "mode": "standard"}, connect_timeout=10)

THROTTLING_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "RequestThrottled",
        "SlowDown",
    }
)
ACCESS_DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnauthorizedOperation",
        "UnauthorizedException",
        "UnrecognizedClientException",
        "AuthFailure",
        "InvalidClientTokenId",
        "ExpiredToken",
        "ExpiredTokenException",
    }
)


class AwsSession:
    """A boto3 session for one region, checked for credentials before any call is made."""

    def __init__(self, *, region: str, profile_name: str | None = None) -> None:
        try:
            self._session = boto3.session.Session(profile_name=profile_name, region_name=region)
        except botocore.exceptions.ProfileNotFound:
            raise CliError(
                f"AWS profile {profile_name!r} not found in ~/.aws/config or ~/.aws/credentials; "
                "fix --aws-profile or AWS_PROFILE",
                ExitCode.AWS_ERROR,
            ) from None
        self.region = region
        try:
            credentials = self._session.get_credentials()
        except botocore.exceptions.BotoCoreError as error:
            raise CliError(
                f"cannot load AWS credentials: {error}; fix the profile or pass --aws-profile",
                ExitCode.AWS_ERROR,
            ) from None
        if credentials is None:
            raise CliError(
                "no AWS credentials found; configure them (aws configure / aws sso login) or pass "
                "--aws-profile",
                ExitCode.AWS_ERROR,
            )

    def client(self, service: str) -> Any:
        """A client for ``service`` in the session's region (typed Any: boto3 has no stubs here)."""
        return self._session.client(service, region_name=self.region, config=_CLIENT_CONFIG)


def describe_aws_error(error: BaseException, action: str) -> str:
    """One line saying what failed during ``action`` (e.g. 'ec2:DescribeCapacityReservations')
    and how to fix it."""
    code = error_code(error)
    if code in THROTTLING_CODES:
        return (
            f"{action}: AWS throttled the request ({code}) even after retries; wait a minute and "
            "run the command again"
        )
    if code in ACCESS_DENIED_CODES:
        return (
            f"{action}: access denied ({code}); the caller needs the IAM permission {action} "
            "(fmc preflight and capacity search only read)"
        )
    if isinstance(error, botocore.exceptions.ClientError):
        message = error.response.get("Error", {}).get("Message", "")
        return f"{action}: AWS returned {code}: {message}".rstrip(": ")
    if isinstance(error, botocore.exceptions.NoCredentialsError):
        return f"{action}: no AWS credentials found; configure them or pass --aws-profile"
    if isinstance(
        error, botocore.exceptions.EndpointConnectionError | botocore.exceptions.ConnectTimeoutError
    ):
        return f"{action}: cannot reach the AWS endpoint ({error}); check the network and region"
    return f"{action}: {type(error).__name__}: {error}"


def is_aws_error(error: BaseException) -> bool:
    """Whether ``error`` comes from botocore (and so maps to exit code 3)."""
    return isinstance(error, botocore.exceptions.BotoCoreError | botocore.exceptions.ClientError)


def call(client: Any, operation: str, action: str, **params: Any) -> dict[str, Any] | None:
    """``client.<operation>(**params)`` (:func:`fm_constructs.rules.online.aws.ask`, whose
    ``missing_codes`` it takes too).

    Returns None when AWS answers with one of ``missing_codes`` (the thing asked about does not
    exist: a finding, not an error); every other botocore error becomes CliError (exit 3).
    """
    try:
        return ask(client, operation, action, **params)
    except AwsCallError as error:
        raise CliError(describe_aws_error(error.error, action), ExitCode.AWS_ERROR) from None


def call_required(client: Any, operation: str, action: str, **params: Any) -> dict[str, Any]:
    """Like :func:`call` for operations whose answer always exists."""
    result = call(client, operation, action, **params)
    assert result is not None  # no missing_codes were given
    return result
