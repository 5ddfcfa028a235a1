"""Floor 1: one pure function per rule, each returning coded findings (no aws_cdk import).

The rule modules (``platform``, ``workloads``, ``inference``, ...) are run together on a
profile by :func:`fm_constructs.rules.profile.check_profile`; the constructs run the same
functions on their own arguments. This package's ``__init__`` exports only the finding type,
so that :mod:`fm_constructs.errors` can use it without import cycles.
"""

from fm_constructs.rules.findings import RULES, Finding, RuleInfo, Severity, errors, warnings

__all__ = ["RULES", "Finding", "RuleInfo", "Severity", "errors", "warnings"]
