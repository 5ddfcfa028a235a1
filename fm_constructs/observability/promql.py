"""Metric names referenced by a PromQL expression, and the metrics a scrape config collects.

Used to check that every rule and dashboard query only reads metrics that the scrape
configuration keeps or a recording rule defines: a renamed exporter metric or a typo then fails
a test instead of silently showing "No data" in production. Not a full PromQL parser: it
removes what cannot be a metric name (strings, label matchers, range and subquery brackets,
grouping clauses, Grafana variables, numbers, durations) and keeps identifiers that are not
function calls or keywords.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

_KEYWORDS = frozenset(
    {
        # binary and set operators, modifiers
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
        "atan2",
        # aggregation operators (they may be followed by a grouping clause, not "(")
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
        # literals
        "inf",
        "nan",
    }
)

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GRAFANA_VARIABLE = re.compile(r"\$\{[^}]*\}|\$__\w+|\$\w+")
_BRACES = re.compile(r"\{[^{}]*\}")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)")
_IDENTIFIER = re.compile(r"(?<![\w.:])([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?")
_NUMBER_LIKE = re.compile(r"^(?:\d|0x)")
# Grafana template-variable query: label_values(<selector>, <label name>)
_LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$", re.S)


def balanced(expr: str) -> bool:
    """Whether (), [] and {} are balanced in ``expr`` outside string literals."""
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for char in _STRING.sub('""', expr):
        if char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack


def metric_names(expr: str) -> set[str]:
    """The metric names an expression (PromQL, possibly with Grafana variables) reads."""
    label_values = _LABEL_VALUES.match(expr)
    text = _STRING.sub(" ", label_values.group(1) if label_values else expr)
    text = _GRAFANA_VARIABLE.sub(" ", text)
    text = _BRACES.sub(" ", text)
    text = _BRACKETS.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    names: set[str] = set()
    for match in _IDENTIFIER.finditer(text):
        name, call = match.group(1), match.group(2)
        if call or name.lower() in _KEYWORDS or _NUMBER_LIKE.match(name):
            continue
        names.add(name)
    return names


def recorded_metrics(rule_documents: Iterable[Mapping[str, Any]]) -> set[str]:
    """Names defined by ``record:`` rules across rule documents."""
    return {
        str(rule["record"])
        for document in rule_documents
        for group in document.get("groups", [])
        for rule in group.get("rules", [])
        if "record" in rule
    }


def rule_expressions(rule_documents: Iterable[Mapping[str, Any]]) -> dict[str, str]:
    """``{rule name: expr}`` across rule documents."""
    return {
        str(rule.get("alert") or rule.get("record")): str(rule["expr"])
        for document in rule_documents
        for group in document.get("groups", [])
        for rule in group.get("rules", [])
    }


def collected_metric_patterns(scrape_config: Mapping[str, Any]) -> dict[str, re.Pattern[str]]:
    """``{job_name: keep pattern}``: what each scrape job keeps by metric name.

    A job without a ``__name__`` keep rule keeps everything and maps to ``.+``. Prometheus
    regexes are fully anchored, hence ``fullmatch`` when testing a name.
    """
    patterns: dict[str, re.Pattern[str]] = {}
    for job in scrape_config.get("scrape_configs", []):
        regex = ".+"
        for relabel in job.get("metric_relabel_configs", []) or []:
            if relabel.get("action") == "keep" and relabel.get("source_labels") == ["__name__"]:
                regex = str(relabel["regex"])
        patterns[str(job["job_name"])] = re.compile(regex)
    return patterns


def is_collected(name: str, patterns: Mapping[str, re.Pattern[str]]) -> bool:
    """Whether some job keeps ``name``; histogram/summary series map to their family too."""
    candidates = {name}
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            candidates.add(name[: -len(suffix)])
    return any(p.fullmatch(c) for p in patterns.values() for c in candidates)
