"""The one exception type the library raises for bad input, and a collector for problems.

Every check in the library reports *all* of its problems at once, each naming the field, the
bad value, what is allowed and the fix, with a stable code (listed with its fix in
docs/reference/errors.md), so a user fixes a profile in one pass instead of one error per synth.
Problems are :class:`~fm_constructs.domain.findings.Finding` values; the rule functions of
:mod:`fm_constructs.rules` return them and the profile loader, the constructs and the CLI
report them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import replace
from typing import Any

from fm_constructs.domain.findings import Finding, Severity

#: Code of a problem raised by code that names none (a library user's own checks); its
#: meaning is registered with the construct codes (:mod:`fm_constructs.rules.constructs`).
GENERIC_CODE = "FM000"


def as_finding(problem: str | Finding, code: str = GENERIC_CODE) -> Finding:
    """A finding for ``problem``; a plain message becomes an error finding of ``code``."""
    if isinstance(problem, Finding):
        return problem
    return Finding(code, Severity.ERROR, "", None, problem)


class FmValidationError(ValueError):
    """Raised at synth time (or config load) when input cannot produce a valid deployment.

    ``findings`` holds every problem (code, key, value, what is allowed, the fix);
    ``problems`` holds one human-readable line per problem; ``str(error)`` lists them all with
    their codes. ``context`` names where: the profile file, or the construct path.
    """

    def __init__(
        self,
        problems: Iterable[str | Finding],
        *,
        context: str | None = None,
        code: str = GENERIC_CODE,
    ) -> None:
        self.findings: tuple[Finding, ...] = tuple(as_finding(p, code) for p in problems)
        if not self.findings:
            raise ValueError("FmValidationError needs at least one problem")
        self.problems: tuple[str, ...] = tuple(f.message() for f in self.findings)
        self.context = context
        header = f"{context}: " if context else ""
        lines = [f.line() for f in self.findings]
        if len(lines) == 1:
            message = f"{header}{lines[0]}"
        else:
            listed = "\n".join(f"  - {line}" for line in lines)
            message = f"{header}{len(lines)} problems:\n{listed}"
        super().__init__(message)

    @property
    def codes(self) -> tuple[str, ...]:
        return tuple(f.code for f in self.findings)


class Problems:
    """Collects validation problems so that a check can report every one of them together.

    Usage: ``problems = Problems()``, ``problems.add("field", value, "must be ...")`` (or
    ``problems.add_finding(finding)`` for a rule's result), then ``problems.raise_if_any()``.
    Only error findings are kept; warnings are the caller's to show.
    """

    def __init__(
        self, context: str | None = None, *, field_prefix: str = "", code: str = GENERIC_CODE
    ) -> None:
        self._items: list[Finding] = []
        self._context = context
        #: The construct whose path :attr:`context` names, read only when asked (see :meth:`of`).
        self._construct: Any = None
        self.field_prefix = field_prefix
        #: The code of problems added without one of their own.
        self.code = code

    @property
    def context(self) -> str | None:
        """Where the problems are: the profile file, or a construct's class and path."""
        if self._context is None and self._construct is not None:
            self._context = f"{type(self._construct).__name__} {self._construct.node.path}"
        return self._context

    @classmethod
    def of(cls, construct: Any) -> Problems:
        """Problems of a construct's arguments, reported under its class and construct path
        (``GpuLaunchTemplate Stack/Workload/LaunchTemplate``), so a user finds which one,
        with the code the construct's class declares as ``problem_code`` (a subclass inherits
        it; a class that declares none reports :data:`GENERIC_CODE`). The path is read when
        a problem is reported: reading it is two calls into the CDK's JavaScript, and most
        constructs have no problem to report."""
        problems = cls(code=getattr(type(construct), "problem_code", GENERIC_CODE))
        problems._construct = construct
        return problems

    def add(
        self,
        field: str,
        value: object,
        requirement: str,
        *,
        code: str | None = None,
        fix: str = "",
    ) -> None:
        """Record that ``field`` holds ``value`` which breaks ``requirement`` (under
        ``code``, else the collector's own).

        ``field_prefix`` (e.g. ``"pretraining.storage."``) lets a check written for a
        construct's own props report problems under a profile's key paths.
        """
        self._items.append(
            Finding(
                code or self.code,
                Severity.ERROR,
                f"{self.field_prefix}{field}",
                value,
                requirement,
                fix,
            )
        )

    def add_finding(self, finding: Finding) -> None:
        """Record a rule's finding (under ``field_prefix``) if it is an error."""
        if finding.is_error:
            self._items.append(finding.under(self.field_prefix))

    def add_findings(self, findings: Iterable[Finding]) -> None:
        for finding in findings:
            self.add_finding(finding)

    def adopt(self, findings: Iterable[Finding]) -> None:
        """Record a shared rule's error findings under this collector's own code (a construct
        reports the rules it runs on its arguments as its own problems)."""
        for finding in findings:
            if finding.is_error:
                self._items.append(replace(finding, code=self.code).under(self.field_prefix))

    def add_message(self, message: str, *, code: str | None = None) -> None:
        """Record a problem already phrased in full (for rules spanning several fields)."""
        self._items.append(Finding(code or self.code, Severity.ERROR, "", None, message))

    def extend(self, other: Iterable[str | Finding]) -> None:
        for problem in other:
            finding = as_finding(problem, self.code)
            if finding.is_error:
                self._items.append(finding)

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(self._items)

    def __bool__(self) -> bool:
        return bool(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(f.message() for f in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def raise_if_any(self) -> None:
        """Raise one FmValidationError listing every recorded problem, if there are any."""
        if self._items:
            raise FmValidationError(self._items, context=self.context)
