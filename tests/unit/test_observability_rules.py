"""The observability rules called on plain arguments, without a construct or a synthesis."""

from __future__ import annotations

from fm_constructs.rules import observability as rules
from fm_constructs.rules.constructs import (
    ALERT_RULES,
    DASHBOARDS,
    FSX_ALARMS,
    GRAFANA,
    OBSERVABILITY_DATA,
    PROMETHEUS,
    SCRAPER,
)

_ARN = "arn:aws:eks:us-east-1:111122223333:cluster/gpu"
_ALARMS: dict[str, object] = {
    "file_system_id": "fs-0123456789abcdef0",
    "storage_capacity_gib": 4800,
    "per_unit_storage_throughput_mb_s_per_tib": 250,
    "evaluation_periods": 3,
    "ratios": {
        "free_capacity_min_ratio": 0.1,
        "throughput_utilization_max_ratio": 0.9,
        "metadata_utilization_max_ratio": 0.9,
    },
    "metadata_iops": None,
}


def test_valid_arguments_have_no_findings() -> None:
    assert rules.prometheus_workspace(alias="fm", retention_period_days=150) == []
    assert (
        rules.managed_scraper(
            cluster_arn=_ARN,
            subnet_ids=["A", "B"],
            subnet_zones=["us-east-1a", "us-east-1b"],
            scrape_interval_seconds=30,
        )
        == []
    )
    assert rules.fsx_alarms(**_ALARMS) == []  # type: ignore[arg-type]
    assert (
        rules.alert_rules(workspace_type=None, workspace_has_alert_manager=False, rule_files=None)
        == []
    )
    assert (
        rules.grafana_workspace(
            authentication_count=1,
            uses_saml=False,
            saml_configured=False,
            prometheus_workspace_count=1,
            name="fm",
        )
        == []
    )
    assert (
        rules.grafana_dashboards(files_given_empty=False, file_names=["a.json"], folder_uid="fm")
        == []
    )


def test_prometheus_and_scraper_findings() -> None:
    found = rules.prometheus_workspace(alias="", retention_period_days=0)
    assert [(f.code, f.key) for f in found] == [
        (PROMETHEUS, "alias"),
        (PROMETHEUS, "retention_period_days"),
    ]
    found = rules.managed_scraper(
        cluster_arn="gpu", subnet_ids=["A"], subnet_zones=[], scrape_interval_seconds=10.5
    )
    assert {f.code for f in found} == {SCRAPER}
    assert [(f.key, f.value) for f in found] == [
        ("cluster_arn", "gpu"),
        ("subnets", ["A"]),
        ("scrape_interval", "10.5s"),
    ]
    (one_zone,) = rules.managed_scraper(
        cluster_arn=_ARN,
        subnet_ids=["A", "B"],
        subnet_zones=["us-east-1a", "us-east-1a"],
        scrape_interval_seconds=60,
    )
    assert one_zone.allowed == "must span at least two Availability Zones"


def test_fsx_alarm_findings() -> None:
    found = rules.fsx_alarms(
        **{  # type: ignore[arg-type]
            **_ALARMS,
            "file_system_id": "vol-1",
            "evaluation_periods": 0,
            "ratios": {"free_capacity_min_ratio": 1, "metadata_utilization_max_ratio": 0.5},
            "metadata_iops": 7,
        }
    )
    assert {f.code for f in found} == {FSX_ALARMS}
    assert [f.key for f in found] == [
        "file_system_id",
        "evaluation_periods",
        "free_capacity_min_ratio",
        "metadata_iops",
    ]


def test_alert_rule_grafana_and_dashboard_findings() -> None:
    other, empty = rules.alert_rules(
        workspace_type="ImportedWorkspace", workspace_has_alert_manager=False, rule_files=[]
    )
    assert (other.code, other.key, other.value) == (ALERT_RULES, "workspace", "ImportedWorkspace")
    assert empty.key == "rule_files"
    (again,) = rules.alert_rules(
        workspace_type=None, workspace_has_alert_manager=True, rule_files=None
    )
    assert again.message().startswith("workspace: already has an alert manager definition")
    found = rules.grafana_workspace(
        authentication_count=0,
        uses_saml=False,
        saml_configured=True,
        prometheus_workspace_count=0,
        name="a b",
    )
    assert {f.code for f in found} == {GRAFANA}
    assert [f.key or f.allowed.split(":")[0] for f in found] == [
        "authentication",
        "saml_configuration",
        "prometheus_workspaces",
        "name",
    ]
    found = rules.grafana_dashboards(
        files_given_empty=True, file_names=["a.json", "a.json"], folder_uid="x" * 41
    )
    assert {f.code for f in found} == {DASHBOARDS}
    assert [f.key for f in found] == ["dashboard_files", "dashboard_files", "folder_uid"]


def test_observability_data_findings() -> None:
    found = rules.rule_threshold_overrides({"nope": 1, "gpu": -1}, known=["gpu"])
    assert {f.code for f in found} == {OBSERVABILITY_DATA}
    assert [f.allowed for f in found] == [
        "is not a rule threshold; use one of ['gpu']",
        "must be a positive number",
    ]
    (not_object,) = rules.dashboard_model("d.json", [])
    assert not_object.message() == "d.json: must be a JSON object (a Grafana dashboard model)"
    assert [f.key for f in rules.dashboard_model("d.json", {"uid": "", "title": 3})] == [
        "uid",
        "title",
    ]
    (dup,) = rules.distinct_dashboard_uids([("a", "a.json"), ("b", "b.json"), ("a", "c.json")])
    assert dup.allowed == "must be unique across dashboards (c.json repeats it)"


def test_an_imported_file_system_states_its_size_for_alarms() -> None:
    assert rules.stated_lustre_size(storage_capacity_gib=1200, throughput_mb_s_per_tib=250) == []
    found = rules.stated_lustre_size(storage_capacity_gib=None, throughput_mb_s_per_tib=None)
    assert [(f.code, f.key) for f in found] == [
        (FSX_ALARMS, "storage_capacity_gib"),
        (FSX_ALARMS, "throughput_mb_s_per_tib"),
    ]


def test_a_rules_document_names_each_group_and_rule_that_is_wrong() -> None:
    assert [f.message() for f in rules.rule_document([])] == [
        "must be a mapping with a 'groups' list"
    ]
    assert [f.message() for f in rules.rule_document({"groups": []})] == [
        "groups: must not be empty"
    ]
    document = {
        "groups": [
            {"rules": []},
            {"name": "empty", "rules": []},
            {
                "name": "gpu",
                "rules": [
                    "not a mapping",
                    {
                        "record": "a",
                        "alert": "b",
                        "expr": "up",
                        "labels": {"severity": "info"},
                        "annotations": {"summary": "s", "description": "d", "runbook": "r"},
                    },
                    {"alert": "Hot", "expr": " ", "labels": {"severity": "page"}},
                    {"record": "fine", "expr": "sum(up)"},
                ],
            },
        ]
    }
    findings = rules.rule_document(document)
    assert {f.code for f in findings} == {OBSERVABILITY_DATA}
    assert [f.message() for f in findings] == [
        "every group needs a name",
        "group empty: needs a non-empty 'rules' list",
        "group gpu: every rule must be a mapping",
        "group gpu, rule b: needs exactly one of 'alert' or 'record'",
        "group gpu, rule Hot: needs a non-empty 'expr'",
        "group gpu, rule Hot: severity must be one of ['critical', 'warning', 'info'], got 'page'",
        "group gpu, rule Hot: annotation 'summary' is required",
        "group gpu, rule Hot: annotation 'description' is required",
        "group gpu, rule Hot: annotation 'runbook' is required",
    ]
