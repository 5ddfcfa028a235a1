"""Render docs/reference/errors.md: every finding code with what it means and its fix, from the
registry the rule functions fill, so the page cannot drift from the codes the library reports."""

from __future__ import annotations

import importlib

from fm_constructs.rules.findings import RULES, RuleInfo

#: Every module that registers codes (importing them fills :data:`RULES`).
RULE_MODULES = (
    "fm_constructs.errors",
    "fm_constructs.config.reader",
    "fm_constructs.config.rules",
    "fm_constructs.rules.profile",
    "fm_constructs.rules.platform",
    "fm_constructs.rules.workloads",
    "fm_constructs.rules.inference",
    "fm_constructs.rules.scale",
    "fm_constructs.rules.users",
    "fm_constructs.rules.storage",
    "fm_constructs.rules.capacity",
    "fm_constructs.rules.online.capacity",
    "fm_constructs.rules.online.ec2",
    "fm_constructs.rules.online.eks",
    "fm_constructs.rules.online.iam",
    "fm_constructs.rules.online.pcs",
    "fm_constructs.rules.online.quotas",
    "fm_constructs.rules.online.sagemaker",
    "fm_constructs.rules.constructs",
    "fm_constructs.cli.preflight",
    "fm_constructs.cli.plan",
)


def all_rules() -> dict[str, RuleInfo]:
    """Every registered code, sorted."""
    for module in RULE_MODULES:
        importlib.import_module(module)
    return dict(sorted(RULES.items()))


def _cell(text: str) -> str:
    """Markdown table cell text: placeholders such as <region> shown, not read as HTML."""
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def render_errors_page() -> str:
    lines = [
        "# Errors and warnings",
        "",
        "Every problem the library reports carries a stable code, the key it is about (a profile",
        "key path such as `platform.kubernetes_version` when a profile loads, a construct",
        "argument under the construct's path at synth), the value found, what is allowed and the",
        "fix. The profile loader, `cdk synth`, `fmc plan` and `fmc preflight` print the same",
        "line for the same input, for example:",
        "",
        "```text",
        "profile config/my.toml: platform.kubernetes_version: must be a Kubernetes version in",
        "EKS standard support: 1.34, 1.35, 1.36 (default 1.35), got '1.29'; pick one of them",
        "[FM201]",
        "```",
        "",
        "Errors stop the load (and synthesis); warnings are printed by `fmc plan` and",
        "`fmc preflight` and do not. `FmValidationError.findings` holds them for code that calls",
        "the library. The checks of `fmc preflight` (FM7xx) fail or warn by what AWS answers.",
        "A construct's own argument checks (FM8xx) carry the construct's code; FM000 is left",
        "for a message raised without a code (a caller's own checks).",
        "",
        "| Code | Severity | What it means | Fix |",
        "| --- | --- | --- | --- |",
    ]
    for code, rule in all_rules().items():
        lines.append(
            f"| `{code}` | {rule.severity_text} | {_cell(rule.summary)} | {_cell(rule.fix)} |"
        )
    lines += [
        "",
        "## API",
        "",
        "::: fm_constructs.errors",
        "    options:",
        "      show_root_heading: false",
        "",
    ]
    return "\n".join(lines)
