"""Exit codes scripts can rely on, and the exception that carries one to ``main``."""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit status of every ``fmc`` command."""

    OK = 0
    #: A plan or preflight check failed: do not deploy as configured.
    CHECK_FAILED = 1
    #: Bad command line or profile (nothing was asked of AWS, nothing was bought).
    USAGE = 2
    #: AWS could not answer: credentials, access denied, throttling, network.
    AWS_ERROR = 3


EPILOG = """\
exit codes:
  0  ok
  1  a plan or preflight check failed (the output names the fix); capacity search: no offering
  2  usage or profile error (also: purchase refused without --yes); nothing was bought
  3  AWS error: no credentials, access denied, throttled, or unreachable
  preflight: 1 wins over 3 when both happen (a definite failure is the more useful answer)
"""


class CliError(Exception):
    """A problem that ends the command with a message (no traceback) and an exit code."""

    def __init__(self, message: str, exit_code: ExitCode) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
