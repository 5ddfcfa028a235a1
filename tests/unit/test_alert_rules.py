"""Every shipped alert fires on the failure it names and resolves when it clears.

The cases live in ``tests/unit/rule_tests/<rule file stem>.test.yaml`` (promtool's unit-test
format). Pure checks (always run): every alert has a case where it fires and a later one where
it is gone, every expected alert carries the cluster and workload labels, the alert manager's
inhibit rules name real alerts and labels the alerts carry. ``promtool test rules`` (Debian
package ``prometheus``, installed by ``.ci/run``) runs the cases against the rendered rules.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fm_constructs.observability import data
from fm_constructs.observability.rules import INHIBIT_RULES

CASES_DIR = Path(__file__).parent / "rule_tests"
RULES = {
    p.name: data.load_rule_file(p, data.rule_thresholds(None)) for p in data.shipped_rule_files()
}
ALERTS = {
    rule["alert"]: rule
    for _, document in RULES.values()
    for group in document["groups"]
    for rule in group["rules"]
    if "alert" in rule
}
CASE_FILES = sorted(CASES_DIR.glob("*.test.yaml"))
PROMTOOL = shutil.which("promtool")
NEEDS_PROMTOOL = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not installed (Debian package 'prometheus'; .ci/run installs it); the "
    "case coverage checks still run",
)


def _load(path: Path) -> dict[str, Any]:
    return dict(yaml.safe_load(path.read_text(encoding="utf-8")))


def _checks() -> list[tuple[str, str, int, list[dict[str, str]]]]:
    """(case file, alert, eval time in seconds, expected label sets) across every case."""
    found = []
    for path in CASE_FILES:
        for test in _load(path)["tests"]:
            for check in test.get("alert_rule_test", []):
                found.append(
                    (
                        path.name,
                        str(check["alertname"]),
                        _seconds(str(check["eval_time"])),
                        [dict(a["exp_labels"]) for a in check.get("exp_alerts") or []],
                    )
                )
    return found


def _seconds(duration: str) -> int:
    units = {"s": 1, "m": 60, "h": 3600}
    return int(duration[:-1]) * units[duration[-1]]


def test_every_rule_file_with_alerts_has_cases() -> None:
    with_alerts = {
        name.removesuffix(".yaml")
        for name, (_, document) in RULES.items()
        if any("alert" in r for g in document["groups"] for r in g["rules"])
    }
    assert {p.name.removesuffix(".test.yaml") for p in CASE_FILES} == with_alerts


def test_every_alert_fires_and_then_resolves() -> None:
    checks = _checks()
    for alert in ALERTS:
        fired = [t for _, name, t, expected in checks if name == alert and expected]
        assert fired, f"{alert}: no case where it fires"
        resolved = [t for _, name, t, expected in checks if name == alert and not expected]
        assert any(t > min(fired) for t in resolved), f"{alert}: no case where it resolves"
    unknown = {name for _, name, _, _ in checks} - set(ALERTS)
    assert not unknown, f"cases name alerts that do not exist: {unknown}"


def test_every_expected_alert_names_its_cluster_workload_and_severity() -> None:
    for case, alert, _, expected in _checks():
        for labels in expected:
            for label in ("cluster", "workload"):
                assert labels.get(label), f"{case}: {alert} lacks {label}"
            assert labels["severity"] == ALERTS[alert]["labels"]["severity"], (case, alert)


def test_inhibit_rules_name_real_alerts_and_labels_both_sides_carry() -> None:
    import re

    def matches(matchers: list[str], alert: str) -> bool:
        labels = {"alertname": alert, **ALERTS[alert]["labels"]}
        for matcher in matchers:
            name, op, value = re.fullmatch(r'(\w+)(=~|=)"(.*)"', matcher).groups()  # type: ignore[union-attr]
            actual = labels.get(name, "")
            if not (re.fullmatch(value, actual) if op == "=~" else actual == value):
                return False
        return True

    by_alert: dict[str, list[dict[str, str]]] = {}
    for _, alert, _, expected in _checks():
        by_alert.setdefault(alert, []).extend(expected)
    for rule in INHIBIT_RULES:
        sources = [a for a in ALERTS if matches(rule["source_matchers"], a)]  # type: ignore[arg-type]
        targets = [a for a in ALERTS if matches(rule["target_matchers"], a)]  # type: ignore[arg-type]
        assert sources and targets, rule
        for alert in {*sources, *targets}:
            for labels in by_alert.get(alert, []):
                missing = set(rule["equal"]) - set(labels)  # type: ignore[arg-type]
                # An inhibit rule only applies where both sides carry the equal labels; a
                # target without them (e.g. a cluster-wide alert) is never silenced.
                if alert in sources:
                    assert not missing, (alert, rule)
    # The replace-node XID alert silences its warning twin on the same GPU.
    (xid,) = [
        r for r in INHIBIT_RULES if r["source_matchers"] == ['alertname="GpuXidErrorReplaceNode"']
    ]
    assert "GpuXidError" in [a for a in ALERTS if matches(xid["target_matchers"], a)]  # type: ignore[arg-type]


def _write_rules(directory: Path, *, annotations: bool) -> None:
    for name, (text, document) in RULES.items():
        if annotations:
            (directory / name).write_text(text)
            continue
        stripped = {
            "groups": [
                {
                    **g,
                    "rules": [
                        {k: v for k, v in r.items() if k != "annotations"} for r in g["rules"]
                    ],
                }
                for g in document["groups"]
            ]
        }
        (directory / name).write_text(yaml.safe_dump(stripped, sort_keys=False))


@NEEDS_PROMTOOL
@pytest.mark.parametrize("case_file", [p.name for p in CASE_FILES])
def test_promtool_rule_cases_pass(case_file: str, tmp_path: Path) -> None:
    # Labels and timing are compared here; annotation templates are checked by promtool
    # check rules on the unmodified files (test_observability_data).
    _write_rules(tmp_path, annotations=False)
    shutil.copy(CASES_DIR / case_file, tmp_path / case_file)
    result = subprocess.run(
        [str(PROMTOOL), "test", "rules", case_file],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@NEEDS_PROMTOOL
def test_promtool_rule_cases_can_fail(tmp_path: Path) -> None:
    """A case expecting the wrong thing fails: the harness does not pass vacuously."""
    _write_rules(tmp_path, annotations=False)
    case = _load(CASES_DIR / "gpu-alerts.test.yaml")
    first = case["tests"][0]["alert_rule_test"][1]
    assert first["exp_alerts"], "the second check of the first case expects an alert"
    first["exp_alerts"] = []
    (tmp_path / "broken.test.yaml").write_text(yaml.safe_dump(case))
    result = subprocess.run(
        [str(PROMTOOL), "test", "rules", "broken.test.yaml"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0 and "FAILED" in result.stdout + result.stderr


# Healthy change: every scenario in rule_tests/healthy/ runs against every shipped rule file,
# and no warning or critical alert may fire at any of its quiet_at times. Each scenario also
# names an unhealthy twin (the same series with the failure in them) that must fail, so a
# scenario cannot pass because its series are simply not what the rules read.
HEALTHY_DIR = CASES_DIR / "healthy"
HEALTHY = sorted(HEALTHY_DIR.glob("*.yaml"))
PAGING = sorted(a for a, r in ALERTS.items() if r["labels"]["severity"] in ("warning", "critical"))


def _scenario_case(scenario: dict[str, Any], series: list[dict[str, str]]) -> dict[str, Any]:
    return {
        "rule_files": sorted(RULES),
        "evaluation_interval": "1m",
        "tests": [
            {
                "name": scenario["description"],
                "interval": scenario["interval"],
                "input_series": series,
                "alert_rule_test": [
                    {"eval_time": t, "alertname": alert, "exp_alerts": []}
                    for t in scenario["quiet_at"]
                    for alert in PAGING
                ],
            }
        ],
    }


def _unhealthy_series(scenario: dict[str, Any]) -> list[dict[str, str]]:
    twin = scenario["unhealthy"]
    series = []
    for item in scenario["input_series"]:
        if any(part in item["series"] for part in twin.get("drop", [])):
            continue
        values = item["values"]
        for part, replacement in twin.get("replace", {}).items():
            if part in item["series"]:
                values = replacement
        series.append({"series": item["series"], "values": values})
    assert series != scenario["input_series"], "the unhealthy twin changes nothing"
    return series


def _promtool(directory: Path, case: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    _write_rules(directory, annotations=False)
    (directory / "case.test.yaml").write_text(yaml.safe_dump(case, sort_keys=False))
    return subprocess.run(
        [str(PROMTOOL), "test", "rules", "case.test.yaml"],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )


def test_healthy_scenarios_exist_and_name_an_unhealthy_twin_alert() -> None:
    assert {p.stem for p in HEALTHY} >= {
        "finished-trainjob",
        "hyperpod-node-replaced",
        "capacity-block-ends",
        "model-rollout",
    }
    for path in HEALTHY:
        scenario = _load(path)
        assert scenario["unhealthy"]["alert"] in PAGING, path.name
        assert scenario["quiet_at"], path.name


@NEEDS_PROMTOOL
@pytest.mark.parametrize("scenario_file", [p.name for p in HEALTHY])
def test_healthy_change_raises_nothing_above_info(scenario_file: str, tmp_path: Path) -> None:
    scenario = _load(HEALTHY_DIR / scenario_file)
    result = _promtool(tmp_path, _scenario_case(scenario, scenario["input_series"]))
    assert result.returncode == 0, result.stdout + result.stderr


@NEEDS_PROMTOOL
@pytest.mark.parametrize("scenario_file", [p.name for p in HEALTHY])
def test_the_unhealthy_twin_of_each_scenario_pages(scenario_file: str, tmp_path: Path) -> None:
    scenario = _load(HEALTHY_DIR / scenario_file)
    result = _promtool(tmp_path, _scenario_case(scenario, _unhealthy_series(scenario)))
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert f"alertname: {scenario['unhealthy']['alert']}" in output, output
