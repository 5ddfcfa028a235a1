"""The one result type of every check: a coded finding on one key, with what is allowed and the fix.

A check never raises; it returns findings. The profile loader reports them under profile key
paths (``platform.kubernetes_version``) with the file name, a construct under its own path
(``Platform/Cluster: kubernetes_version``), and ``fmc plan``/``fmc preflight`` print the same
lines, so every layer says the same thing about the same input.

The type lives on the ground floor so that :mod:`fm_constructs.errors`, the catalog and the
planning math can carry findings without importing the rules; the registry of codes and
their meanings is :mod:`fm_constructs.rules.findings`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any


class Severity(StrEnum):
    """An error stops the load (and synthesis); a warning is shown and the build goes on; an
    info is what an online check saw when it passed (``fmc preflight`` prints it)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Finding:
    """One problem: a stable ``code`` (see docs/reference/errors.md), its ``severity``, the
    ``key`` it is about (a profile key path or a construct argument), the ``value`` found,
    what is ``allowed`` and the ``fix``."""

    code: str
    severity: Severity
    key: str
    value: Any
    allowed: str
    fix: str = ""

    @property
    def is_error(self) -> bool:
        return self.severity is Severity.ERROR

    def under(self, prefix: str) -> Finding:
        """The same finding with ``prefix`` put before its key (``platform.`` + ``region``); a
        finding without a key (phrased in full) stays as it is."""
        return replace(self, key=f"{prefix}{self.key}") if prefix and self.key else self

    def message(self) -> str:
        """``key: allowed, got value; fix``; a finding without a key is its text alone."""
        if not self.key:
            return self.allowed
        fix = f"; {self.fix}" if self.fix else ""
        return f"{self.key}: {self.allowed}, got {self.value!r}{fix}"

    def line(self) -> str:
        """:meth:`message` with the code, as every layer prints it:
        ``key: allowed, got value; fix [FM201]``."""
        return f"{self.message()} [{self.code}]"


@dataclass(frozen=True)
class RuleInfo:
    """What a code means and how to fix it, for docs/reference/errors.md, and the severity
    its findings carry."""

    code: str
    summary: str
    fix: str
    #: None: an error or a warning, by the outcome of the (online) check.
    severity: Severity | None = Severity.ERROR

    def finding(self, key: str, value: Any, allowed: str, fix: str = "") -> Finding:
        """A finding of this code at its severity: ``key`` holds ``value``, ``allowed`` says
        what may be there and ``fix`` how to get there."""
        return Finding(self.code, self.severity or Severity.ERROR, key, value, allowed, fix)

    @property
    def severity_text(self) -> str:
        return self.severity.value if self.severity else "error or warning"


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.is_error]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.WARNING]
