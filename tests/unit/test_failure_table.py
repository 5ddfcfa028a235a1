"""The failure table and the shipped rules agree.

Every shipped alert belongs to a failure of ``fm_constructs.observability.failures``; every
alert a failure names is shipped (or is a CloudWatch alarm the library creates, with a construct
test); every Prometheus alert of the table has a promtool case in which it fires; the stated
time to page is no shorter than the rule's own ``for``; and the failures the stack's users meet
in their first month all have a row.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import yaml

from fm_constructs import pins
from fm_constructs.observability import alarms, data, failures

ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = Path(__file__).parent / "rule_tests"

RULES: dict[str, tuple[str, dict[str, Any]]] = failures._alert_rules()
PROMETHEUS = [d for d in failures.detections() if not d.cloudwatch]
CLOUDWATCH = [d for d in failures.detections() if d.cloudwatch]

#: The failures the table must cover (the first month of a training or inference cluster).
REQUIRED = {
    "GPU fallen off the bus",
    "XID by class",
    "ECC errors",
    "Thermal and power (GPU and HBM temperature, throttling)",
    "NVLink errors",
    "EFA link errors and retransmits",
    "Hung collective (no step progress)",
    "Slow steps against the run's own baseline",
    "Node NotReady or gone",
    "Scheduler down (slurmctld, Kueue, Kubeflow Trainer)",
    "FSx capacity",
    "FSx throughput saturation",
    "FSx metadata saturation",
    "AMP ingestion stopped",
    "Alert delivery failing",
}


def _minutes(duration: str) -> float:
    match = re.fullmatch(r"(\d+)([smh])", duration)
    assert match, duration
    return int(match.group(1)) * {"s": 1 / 60, "m": 1, "h": 60}[match.group(2)]


def test_every_required_failure_has_a_row_with_detections() -> None:
    names = [f.name for f in failures.FAILURES]
    assert len(names) == len(set(names))
    assert set(names) >= REQUIRED, REQUIRED - set(names)
    assert all(f.detections for f in failures.FAILURES)


def test_every_shipped_alert_is_in_the_table_and_every_table_alert_is_shipped() -> None:
    in_table = {d.alert for d in PROMETHEUS}
    assert set(RULES) - in_table == set(), "alerts without a failure"
    assert in_table - set(RULES) == set(), "the table names alerts no rule file ships"


def test_cloudwatch_rows_name_alarms_the_library_creates_and_their_tests() -> None:
    source = Path(alarms.__file__).read_text(encoding="utf-8")
    for detection in CLOUDWATCH:
        assert f'"{detection.alert}"' in source, detection.alert
        assert detection.series, detection.alert
        path, _, function = detection.test.partition("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert function in functions, detection.test
        assert detection.alert in (ROOT / path).read_text(encoding="utf-8"), detection.test


def test_every_prometheus_row_has_a_promtool_case_where_it_fires() -> None:
    fires: set[tuple[str, str]] = set()
    for path in CASES_DIR.glob("*.test.yaml"):
        for test in yaml.safe_load(path.read_text(encoding="utf-8"))["tests"]:
            for check in test.get("alert_rule_test", []):
                if check.get("exp_alerts"):
                    fires.add((path.name, str(check["alertname"])))
    for detection in PROMETHEUS:
        stem, _ = RULES[detection.alert]
        assert (f"{stem}.test.yaml", detection.alert) in fires, detection.alert


def test_time_to_page_is_no_shorter_than_the_rules_own_delay() -> None:
    for detection in PROMETHEUS:
        _, rule = RULES[detection.alert]
        # for, plus one evaluation interval and the alert manager's 30 s group wait.
        assert detection.page_minutes >= _minutes(str(rule.get("for", "0m"))) + 1.5, detection
    for detection in CLOUDWATCH:
        assert detection.page_minutes >= 5, detection


def test_the_hung_job_pages_within_10_minutes_of_its_last_step() -> None:
    (stalled,) = [d for d in PROMETHEUS if d.alert == "TrainingStalled"]
    stall = data.DEFAULT_RULE_THRESHOLDS["training_stall_minutes"]
    # The window, one evaluation interval and the alert manager's group wait.
    assert stalled.page_minutes == stall + 1.5
    assert stalled.page_minutes <= 10


def test_the_rendered_table_names_every_detection_with_series_and_versions() -> None:
    table = failures.markdown_table()
    lines = table.splitlines()[2:]
    assert len(lines) == len(failures.detections())
    for line, detection in zip(lines, failures.detections(), strict=True):
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert f"`{detection.alert}`" in cells[1]
        assert cells[3], detection.alert  # series
        assert cells[4], detection.alert  # exporter and version
    # Exporter versions come from the pins, so a bump changes the table.
    by_alert = {line.split(" | ")[1].strip(): line for line in lines}
    slurm = by_alert["`SlurmCommandsFailing`"]
    assert (
        f"Slurm exporter (HyperPod Slurm: binary {pins.binary('slurm_exporter').version}" in slurm
    )
    xid = by_alert["`GpuXidError`"]
    assert f"chart {pins.chart('dcgm-exporter').version}" in xid
    assert f"image {pins.image('dcgm-exporter').tag}" in xid
