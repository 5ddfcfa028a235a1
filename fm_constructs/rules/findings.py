"""The one result type of every rule: a coded finding on one key, with what is allowed and the fix.

A rule never raises; it returns findings. The profile loader reports them under profile key
paths (``platform.kubernetes_version``) with the file name, a construct under its own path
(``Platform/Cluster: kubernetes_version``), and ``fmc plan``/``fmc preflight`` print the same
lines, so every layer says the same thing about the same input.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any, TypeVar


class Severity(StrEnum):
    """An error stops the load (and synthesis); a warning is shown and the build goes on."""

    ERROR = "error"
    WARNING = "warning"


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
        """The same finding with ``prefix`` put before its key (``platform.`` + ``region``)."""
        return replace(self, key=f"{prefix}{self.key}") if prefix else self

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


#: Every rule code, registered by :func:`rule`.
RULES: dict[str, RuleInfo] = {}

F = TypeVar("F", bound=Callable[..., Any])


def rule(
    code: str, summary: str, fix: str, *, severity: Severity | None = Severity.ERROR
) -> Callable[[F], F]:
    """Register the code a rule function reports (codes are stable: never reuse one)."""

    def register(function: F) -> F:
        define(code, summary, fix, severity=severity)
        return function

    return register


def define(
    code: str, summary: str, fix: str, *, severity: Severity | None = Severity.ERROR
) -> RuleInfo:
    """Register a code with its meaning, fix and severity; its :meth:`RuleInfo.finding` builds
    the findings, so a rule names its code once."""
    if code in RULES and RULES[code] != RuleInfo(code, summary, fix, severity):
        raise ValueError(f"rule code {code} registered twice")
    RULES[code] = RuleInfo(code, summary, fix, severity)
    return RULES[code]


def info(code: str, summary: str, fix: str, *, severity: Severity | None = Severity.ERROR) -> str:
    """Register a code reported from several places (not by one function); returns it."""
    return define(code, summary, fix, severity=severity).code


def errors(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if f.is_error]


def warnings(findings: Iterable[Finding]) -> list[Finding]:
    return [f for f in findings if not f.is_error]
