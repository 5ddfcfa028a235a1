"""Floor 1: one pure function per rule, each returning coded findings (no aws_cdk import).

The rule modules (``platform``, ``workloads``, ``inference``, ...) are run on a profile by
``profile`` (the cross-key rules over the profile model, :mod:`fm_constructs.profile`), which
the loader (:mod:`fm_constructs.config.loader`) runs; the constructs run the same functions on
their own arguments (``hyperpod`` for HyperPod instance groups), and ``online`` holds the
checks of ``fmc preflight``. The finding type lives in :mod:`fm_constructs.domain.findings` (so that
:mod:`fm_constructs.errors`, the catalog and the planning math need no rules); this package
re-exports it with the registry of codes.
"""

from fm_constructs.rules.findings import RULES, Finding, RuleInfo, Severity, errors, warnings

__all__ = ["RULES", "Finding", "RuleInfo", "Severity", "errors", "warnings"]
