"""The registry of every finding code: what it means, its fix and its severity.

A rule function registers its code with :func:`rule` (or :func:`define`/:func:`info` for a
code reported from several places); docs/reference/errors.md is rendered from
:data:`RULES`, so the page cannot drift from the codes the library reports. The finding type
itself is :mod:`fm_constructs.domain.findings` (re-exported here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fm_constructs.domain.findings import Finding, RuleInfo, Severity, errors, warnings

__all__ = [
    "RULES",
    "Finding",
    "RuleInfo",
    "Severity",
    "define",
    "errors",
    "info",
    "rule",
    "warnings",
]

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
