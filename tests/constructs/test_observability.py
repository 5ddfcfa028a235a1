"""Observability constructs: one synthesized app, template assertions, cdk-nag and cfn-lint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aws_cdk as cdk
import pytest
import yaml
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Match, Template

from fm_constructs.errors import FmValidationError
from fm_constructs.observability import (
    SCRAPER_KUBERNETES_USERNAME,
    AlertRules,
    AlertTopic,
    FsxLustreAlarms,
    GrafanaAuthentication,
    GrafanaDashboards,
    GrafanaWorkspace,
    HyperPodHealthEvents,
    ManagedScraper,
    PrometheusWorkspace,
    PrometheusWorkspaceAlarms,
)
from fm_constructs.observability.dashboards import stage_provisioner_asset
from fm_constructs.observability.data import shipped_dashboard_files, shipped_rule_files
from fm_constructs.policy import enable_nag
from tests.support import cfn_lint, synth_stack

ENV = cdk.Environment(account="111122223333", region="us-east-1")
CLUSTER_ARN = "arn:aws:eks:us-east-1:111122223333:cluster/gpu-cluster"
#: The cluster of the developer guide's example events.
HYPERPOD_CLUSTER = "sample-cluster"


class Built:
    """Constructs of the synthesized stack, for assertions on their Python attributes."""

    workspace: PrometheusWorkspace
    rules: AlertRules
    scraper: ManagedScraper
    grafana: GrafanaWorkspace
    dashboards: GrafanaDashboards


def _subnets(stack: cdk.Stack) -> list[ec2.ISubnet]:
    return [
        ec2.Subnet.from_subnet_attributes(
            stack, f"Subnet{i}", subnet_id=f"subnet-0{i}a2b3c4d5e6f7a8b", availability_zone=az
        )
        for i, az in enumerate(("us-east-1a", "us-east-1b"))
    ]


@pytest.fixture(scope="module")
def synthesized() -> tuple[Template, dict[str, Any], Built]:
    app = cdk.App()
    stack = cdk.Stack(app, "Observability", env=ENV)
    built = Built()
    built.workspace = PrometheusWorkspace(stack, "Prometheus", alias="gpu-cluster")
    built.rules = AlertRules(
        stack, "Rules", workspace=built.workspace, thresholds={"ttft_p99_objective_seconds": 1.5}
    )
    built.scraper = ManagedScraper(
        stack,
        "Scraper",
        cluster_arn=CLUSTER_ARN,
        subnets=_subnets(stack),
        security_group=ec2.SecurityGroup.from_security_group_id(
            stack, "ClusterSg", "sg-0123456789abcdef0"
        ),
        workspace=built.workspace,
    )
    built.grafana = GrafanaWorkspace(
        stack, "Grafana", name="fm-observability", prometheus_workspaces=[built.workspace]
    )
    built.dashboards = GrafanaDashboards(
        stack, "Dashboards", grafana=built.grafana, prometheus=built.workspace
    )
    FsxLustreAlarms(
        stack,
        "FsxAlarms",
        file_system_id="fs-0123456789abcdef0",
        storage_capacity_gib=4800,
        per_unit_storage_throughput_mb_s_per_tib=250,
        alert_topic=built.rules.alert_topic,
    )
    HyperPodHealthEvents(
        stack, "HyperPodEvents", alert_topic=built.rules.alert_topic, cluster_name=HYPERPOD_CLUSTER
    )
    enable_nag(app)  # unacknowledged AwsSolutions findings fail app.synth()
    assembly = app.synth()
    template_json = assembly.get_stack_artifact(stack.artifact_id).template
    return Template.from_json(template_json), template_json, built


def _one(template: Template, resource_type: str) -> tuple[str, dict[str, Any]]:
    found = template.find_resources(resource_type)
    assert len(found) == 1, f"{resource_type}: {list(found)}"
    return next(iter(found.items()))


def test_workspace_encrypted_logged_retained_with_pinned_logical_id(synthesized: Any) -> None:
    template, _, _ = synthesized
    logical_id, workspace = _one(template, "AWS::APS::Workspace")
    assert logical_id == "Prometheus2BCCDD01"  # a changed id would replace the workspace
    assert workspace["DeletionPolicy"] == workspace["UpdateReplacePolicy"] == "Retain"
    props = workspace["Properties"]
    assert props["KmsKeyArn"] == {"Fn::GetAtt": ["PrometheusKeyD9577CA9", "Arn"]}
    assert props["LoggingConfiguration"] == {
        "LogGroupArn": {"Fn::GetAtt": ["PrometheusLogs9FA26F4B", "Arn"]}
    }
    assert props["WorkspaceConfiguration"] == {"RetentionPeriodInDays": 150}
    template.has_resource("AWS::KMS::Key", {"Properties": {"EnableKeyRotation": True}})


def test_rule_namespaces_carry_rendered_data(synthesized: Any) -> None:
    template, _, built = synthesized
    namespaces = template.find_resources("AWS::APS::RuleGroupsNamespace")
    names = sorted(r["Properties"]["Name"] for r in namespaces.values())
    assert names == sorted(f"fm-{p.stem}" for p in shipped_rule_files())
    for resource in namespaces.values():
        data = resource["Properties"]["Data"]
        assert "{{ttft" not in data and "{{fsx" not in data
        assert yaml.safe_load(data)["groups"]
        assert resource["Properties"]["Workspace"] == {"Fn::GetAtt": ["Prometheus2BCCDD01", "Arn"]}
    workload = next(
        r for r in namespaces.values() if r["Properties"]["Name"] == "fm-workload-alerts"
    )
    assert "model:vllm_ttft_seconds:p99_5m > 1.5" in workload["Properties"]["Data"]
    assert built.rules.thresholds["ttft_p99_objective_seconds"] == 1.5


def test_alert_manager_routes_to_encrypted_topic(synthesized: Any) -> None:
    template, _, _ = synthesized
    workspace_id, workspace = _one(template, "AWS::APS::Workspace")
    joined = workspace["Properties"]["AlertManagerDefinition"]["Fn::Join"][1]
    text = "".join(
        p if isinstance(p, str) else "arn:aws:sns:us-east-1:111122223333:t" for p in joined
    )
    config = yaml.safe_load(yaml.safe_load(text)["alertmanager_config"])
    sns = config["receivers"][0]["sns_configs"][0]
    assert sns["topic_arn"] == "arn:aws:sns:us-east-1:111122223333:t"
    assert sns["sigv4"] == {"region": "us-east-1"}
    assert config["route"]["receiver"] == "sns"
    assert {"Ref": "RulesTopicA82E5F65"} in joined
    template.has_resource_properties(
        "AWS::SNS::Topic", {"KmsMasterKeyId": {"Fn::GetAtt": ["RulesTopicKey32F556FE", "Arn"]}}
    )
    template.has_resource_properties(
        "AWS::KMS::Key",
        {
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": ["kms:GenerateDataKey*", "kms:Decrypt"],
                                "Principal": {"Service": "aps.amazonaws.com"},
                                "Condition": Match.absent(),
                            }
                        )
                    ]
                )
            }
        },
    )
    template.has_resource_properties(
        "AWS::SNS::TopicPolicy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": "sns:Publish",
                                "Principal": {"Service": "aps.amazonaws.com"},
                                # This workspace only, not every workspace of the account.
                                "Condition": {
                                    "StringEquals": {"aws:SourceAccount": "111122223333"},
                                    "ArnLike": {
                                        "aws:SourceArn": {"Fn::GetAtt": [workspace_id, "Arn"]}
                                    },
                                },
                            }
                        )
                    ]
                )
            }
        },
    )


def test_scraper_source_destination_and_configuration(synthesized: Any) -> None:
    template, _, _ = synthesized
    logical_id, scraper = _one(template, "AWS::APS::Scraper")
    assert logical_id == "Scraper0396A3A7"
    props = scraper["Properties"]
    assert props["Source"]["EksConfiguration"] == {
        "ClusterArn": CLUSTER_ARN,
        "SubnetIds": ["subnet-00a2b3c4d5e6f7a8b", "subnet-01a2b3c4d5e6f7a8b"],
        "SecurityGroupIds": ["sg-0123456789abcdef0"],
    }
    assert props["Destination"] == {
        "AmpConfiguration": {"WorkspaceArn": {"Fn::GetAtt": ["Prometheus2BCCDD01", "Arn"]}}
    }
    config = yaml.safe_load(props["ScrapeConfiguration"]["ConfigurationBlob"])
    assert config["global"] == {
        "scrape_interval": "30s",
        "external_labels": {"cluster": "gpu-cluster", "orchestrator": "eks"},
    }
    jobs = {job["job_name"] for job in config["scrape_configs"]}
    assert jobs == {
        "dcgm-exporter",
        "node-exporter",
        "efa-exporter",
        "kube-state-metrics",
        "workload-pods",
    }


def test_scraper_exposes_what_the_cluster_side_maps(synthesized: Any) -> None:
    _, _, built = synthesized
    stack = cdk.Stack.of(built.scraper)
    resolved = stack.resolve(built.scraper.access_entry_principal_arn)
    parts = resolved["Fn::Join"][1]
    assert parts[0] == "arn:" and ":iam::111122223333:role/" in parts[2]
    assert "AWSServiceRoleForAmazonPrometheusScraper_" in "".join(
        p for p in parts if isinstance(p, str)
    )
    assert stack.resolve(built.scraper.scraper_role_arn) == {
        "Fn::GetAtt": ["Scraper0396A3A7", "RoleArn"]
    }
    assert built.scraper.kubernetes_username == SCRAPER_KUBERNETES_USERNAME == "aps-collector-user"
    role, binding = built.scraper.rbac_manifests()
    assert role["kind"] == "ClusterRole" and binding["kind"] == "ClusterRoleBinding"
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"][0]["name"] == "aps-collector-user"
    verbs = {verb for rule in role["rules"] for verb in rule["verbs"]}
    assert verbs == {"get", "list", "watch"}  # read-only
    assert all("secrets" not in rule.get("resources", []) for rule in role["rules"])


def test_scraper_into_an_encrypted_workspace_has_a_role_configuration(synthesized: Any) -> None:
    """A customer-managed key on the workspace needs the scraper's role configuration: a
    source role the scraper service assumes, which may only assume a target role that may
    remote-write to this workspace and use its key."""
    template, raw, built = synthesized
    resources = raw["Resources"]
    (scraper_id, scraper) = _one(template, "AWS::APS::Scraper")
    stack = cdk.Stack.of(built.scraper)
    source = stack.get_logical_id(built.scraper.source_role.node.default_child)  # type: ignore[union-attr]
    target = stack.get_logical_id(built.scraper.target_role.node.default_child)  # type: ignore[union-attr]
    assert scraper["Properties"]["RoleConfiguration"] == {
        "SourceRoleArn": {"Fn::GetAtt": [source, "Arn"]},
        "TargetRoleArn": {"Fn::GetAtt": [target, "Arn"]},
    }
    (trust,) = resources[source]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert trust["Principal"] == {"Service": "scraper.aps.amazonaws.com"}
    assert trust["Condition"]["StringEquals"] == {"aws:SourceAccount": "111122223333"}
    (target_trust,) = resources[target]["Properties"]["AssumeRolePolicyDocument"]["Statement"]
    assert target_trust["Principal"] == {"AWS": {"Fn::GetAtt": [source, "Arn"]}}
    policies = {
        r["Properties"]["Roles"][0]["Ref"]: r["Properties"]["PolicyDocument"]["Statement"]
        for r in resources.values()
        if r["Type"] == "AWS::IAM::Policy"
    }
    assert policies[source] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Resource": {"Fn::GetAtt": [target, "Arn"]}}
    ]
    actions = {a for st in policies[target] for a in _as_list(st["Action"])}
    assert actions == {"aps:RemoteWrite", "kms:Decrypt", "kms:GenerateDataKey"}
    assert set(scraper.get("DependsOn", [])) >= {source, target}
    assert scraper_id


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_grafana_workspace_and_least_privilege_role(synthesized: Any) -> None:
    template, _, _ = synthesized
    _, workspace = _one(template, "AWS::Grafana::Workspace")
    props = workspace["Properties"]
    assert workspace["DeletionPolicy"] == "Retain"
    assert props["PermissionType"] == "CUSTOMER_MANAGED"
    assert props["AuthenticationProviders"] == ["AWS_SSO"]
    assert props["AccountAccessType"] == "CURRENT_ACCOUNT"
    assert props["DataSources"] == ["PROMETHEUS", "CLOUDWATCH"]
    assert props["RoleArn"] == {"Fn::GetAtt": ["GrafanaRoleCE4ED1CA", "Arn"]}
    policy = template.find_resources("AWS::IAM::Policy")["GrafanaRoleDefaultPolicy9BA4273E"]
    statements = {s["Sid"]: s for s in policy["Properties"]["PolicyDocument"]["Statement"]}
    assert statements["QueryPrometheus"]["Resource"] == {
        "Fn::GetAtt": ["Prometheus2BCCDD01", "Arn"]
    }
    assert not any(
        a.endswith("*") or a.split(":")[1].startswith(("Put", "Create", "Delete"))
        for s in statements.values()
        for a in _actions(s)
    )
    trust = template.find_resources("AWS::IAM::Role")["GrafanaRoleCE4ED1CA"]
    condition = trust["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Condition"]
    assert condition["StringEquals"] == {"aws:SourceAccount": "111122223333"}


def _actions(statement: dict[str, Any]) -> list[str]:
    actions = statement["Action"]
    return [actions] if isinstance(actions, str) else list(actions)


def test_dashboards_custom_resource(synthesized: Any) -> None:
    template, _, _ = synthesized
    _, resource = _one(template, "Custom::GrafanaDashboards")
    props = resource["Properties"]
    assert props["DashboardFiles"] == [p.name for p in shipped_dashboard_files()]
    assert props["DashboardUids"] == [
        json.loads(p.read_text())["uid"] for p in shipped_dashboard_files()
    ]
    assert len(props["DashboardsSha256"]) == 64
    assert props["TokenSecondsToLive"] <= 900
    assert props["OnDelete"] == "DELETE"
    assert props["WorkspaceId"] == {"Fn::GetAtt": ["Grafana43773C35", "Id"]}
    assert props["PrometheusRegion"] == "us-east-1"
    _, function = _one(template, "AWS::Lambda::Function")
    assert function["Properties"]["Runtime"].startswith("python3.1")
    assert function["Properties"]["Handler"] == "handler.handler"
    policy = template.find_resources("AWS::IAM::Policy")[
        "DashboardsFunctionRoleDefaultPolicyB6F7EAD3"
    ]
    for statement in policy["Properties"]["PolicyDocument"]["Statement"]:
        assert statement["Resource"] != "*"
        assert all(a.startswith(("grafana:", "logs:")) for a in _actions(statement))


def test_fsx_alarms_and_hyperpod_rules(synthesized: Any) -> None:
    template, _, _ = synthesized
    alarms = template.find_resources("AWS::CloudWatch::Alarm")
    free = alarms["FsxAlarmsFreeCapacity4F51D339"]["Properties"]
    assert free["MetricName"] == "FreeDataStorageCapacity"
    assert free["Namespace"] == "AWS/FSx"
    assert free["Dimensions"] == [{"Name": "FileSystemId", "Value": "fs-0123456789abcdef0"}]
    assert free["Threshold"] == pytest.approx(4800 * 1024**3 * 0.1)
    assert free["AlarmActions"] == [{"Ref": "RulesTopicA82E5F65"}]
    throughput = alarms["FsxAlarmsThroughputUtilizationA56A2152"]["Properties"]
    expression = next(m["Expression"] for m in throughput["Metrics"] if "Expression" in m)
    # 4800 GiB x 250 MB/s/TiB = 1200 MB/s baseline
    assert expression == "(readBytes + writeBytes) / PERIOD(readBytes) / 1200000000"
    assert throughput["Threshold"] == 0.9
    # Missing data, deliberately: a gap says nothing about free space (keep the state); no
    # datapoints of client traffic means no saturation.
    assert free["TreatMissingData"] == "missing"
    assert throughput["TreatMissingData"] == "notBreaching"
    rules = template.find_resources("AWS::Events::Rule")
    health = rules["HyperPodEventsNodeHealth3EF3A9D0"]["Properties"]
    assert health["EventPattern"] == {
        "source": ["aws.sagemaker"],
        "detail-type": ["SageMaker HyperPod Cluster Node Health Event"],
        "detail": {"ClusterName": [HYPERPOD_CLUSTER]},
    }
    assert all("resources" not in r["Properties"]["EventPattern"] for r in rules.values())
    assert health["Targets"] == [{"Arn": {"Ref": "RulesTopicA82E5F65"}, "Id": "Target0"}]
    # No role on the target (AWS: a RoleArn on an SNS target with KMS encryption may fail
    # delivery): the topic policy lets exactly these rules publish, through events.amazonaws.com.
    assert not template.find_resources(
        "AWS::IAM::Role",
        {
            "Properties": {
                "AssumeRolePolicyDocument": Match.object_like(
                    {
                        "Statement": [
                            Match.object_like({"Principal": {"Service": "events.amazonaws.com"}})
                        ]
                    }
                )
            }
        },
    )
    topic_policy = next(iter(template.find_resources("AWS::SNS::TopicPolicy").values()))
    events_statements = [
        st
        for st in topic_policy["Properties"]["PolicyDocument"]["Statement"]
        if st["Principal"] == {"Service": "events.amazonaws.com"}
    ]
    names = sorted(r["Properties"]["Name"] for r in rules.values())
    assert names == [
        "Observability-HyperPodEvents-ClusterErrors",
        "Observability-HyperPodEvents-ClusterState",
        "Observability-HyperPodEvents-NodeHealth",
    ]
    source_arns = sorted(
        json.dumps(st["Condition"]["ArnLike"]["aws:SourceArn"]) for st in events_statements
    )
    assert len(source_arns) == 3
    for arn, name in zip(source_arns, names, strict=True):
        assert ":events:us-east-1:111122223333:rule/" + name in arn.replace('", "', "")
    assert all(
        st["Action"] == "sns:Publish"
        and st["Condition"]["StringEquals"] == {"aws:SourceAccount": "111122223333"}
        for st in events_statements
    )
    errors = rules["HyperPodEventsClusterErrors92BB4BD6"]["Properties"]["EventPattern"]
    assert errors["detail"] == {
        "EventDetails": {"EventLevel": ["Error"], "ClusterName": [HYPERPOD_CLUSTER]}
    }


#: The SageMaker developer guide's example events, whole: "Events that Amazon SageMaker AI
#: sends to Amazon EventBridge" (sections "SageMaker HyperPod cluster node health", "...cluster
#: state change", "...cluster event") and "SageMaker HyperPod cluster events reference"
#: ("Cluster event record"). Their ``resources`` and ``ClusterArn`` name the cluster by name
#: (``cluster/sample-cluster``), not by the id CloudFormation's ClusterArn ends in.
_GUIDE_ARN = "arn:aws:sagemaker:us-west-2:111122223333:cluster/sample-cluster"
_NODE_HEALTH_EVENT: dict[str, Any] = {
    "version": "0",
    "id": "0bd4a141-0a02-9d8a-f977-3924c3fb259c",
    "detail-type": "SageMaker HyperPod Cluster Node Health Event",
    "source": "aws.sagemaker",
    "account": "111122223333",
    "time": "2021-10-25T01:52:12Z",
    "region": "us-west-2",
    "resources": [_GUIDE_ARN],
    "detail": {
        "ClusterName": "sample-cluster",
        "ClusterArn": _GUIDE_ARN,
        "InstanceId": "i-12345678abcdefghi",
        "Tags": {},
        "HealthSummary": {
            "HealthStatus": "Unhealthy",
            "HealthStatusReason": "HyperPod Health Monitoring Agent (HMA) has detected fault "
            "type NvidiaErrorTerminate on this node and is unhealthy.",
            "RepairAction": "None",
            "Recommendation": "Please Replace the Faulty Node.",
        },
    },
}
_STATE_CHANGE_EVENT: dict[str, Any] = {
    "version": "0",
    "id": "0bd4a141-0a02-9d8a-f977-3924c3fb259c",
    "detail-type": "SageMaker HyperPod Cluster State Change",
    "source": "aws.sagemaker",
    "account": "111122223333",
    "time": "2025-04-28T16:59:01Z",
    "region": "us-west-2",
    "resources": [_GUIDE_ARN],
    "detail": {
        "ClusterArn": _GUIDE_ARN,
        "ClusterName": "sample-cluster",
        "ClusterStatus": "InService",
        "CreationTime": 1745858447412,
        "FailureMessage": "",
        "InstanceGroups": [
            {
                "CurrentCount": 1,
                "ExecutionRole": "arn:aws:iam::111122223333:role/sagemaker-hyperpod-"
                "AmazonSagemakerClusterExecutionR-123OTacPcKk1",
                "InstanceGroupName": "example instance group name",
                "InstanceStorageConfigs": [{}],
                "InstanceType": "ml.t3.medium",
                "LifeCycleConfig": {
                    "OnCreate": "on_create.sh",
                    "SourceS3Uri": "s3://sagemaker-hyperpod//LifeCycleScripts/base-config/"
                    "provisioning_parameters.json",
                },
                "OnStartDeepHealthChecks": ["example health checks"],
                "OverrideVpcConfig": {
                    "SecurityGroupIds": ["SecurityGroupId1"],
                    "Subnets": ["Subnet1"],
                },
                "Status": "Failed",
                "TargetCount": 2,
                "ThreadsPerCore": 2,
                "TrainingPlanArn": "arn:aws:sagemaker:us-west-2:111122223333:training-plan/"
                "large-models-fine-tuning",
                "TrainingPlanStatus": "NotApplicable",
            }
        ],
        "NodeRecovery": "Automatic",
        "Orchestrator": {
            "Eks": {
                "ClusterArn": "arn:aws:eks:us-west-2:111122223333:cluster/my-hyperPod-eks-cluster"
            }
        },
        "VpcConfig": {"SecurityGroupIds": ["SecurityGroupId2"], "Subnets": ["Subnet2"]},
    },
}
#: "SageMaker HyperPod cluster event" (an instance's lifecycle script started: no EventLevel).
_CLUSTER_EVENT: dict[str, Any] = {
    "version": "0",
    "id": "0bd4a141-0a02-9d8a-f977-3924c3fb259c",
    "detail-type": "SageMaker HyperPod Cluster Event",
    "source": "aws.sagemaker",
    "account": "111122223333",
    "time": "2025-04-28T16:59:01Z",
    "region": "us-west-2",
    "resources": [_GUIDE_ARN],
    "detail": {
        "EventDetails": {
            "EventId": "a307fae0-6937-40f9-af2f-16eb873d340a",
            "ClusterArn": _GUIDE_ARN,
            "ClusterName": "sample-cluster",
            "InstanceGroupName": "sample-instance-group",
            "InstanceId": "i-0391f86fa0fe0d465",
            "ResourceType": "Instance",
            "EventTime": 1745858447412,
            "EventDetails": {"EventMetadata": {"Instance": {"LcsExecutionState": "Started"}}},
            "Description": "Instance lifecycle script execution for EC2InstanceId "
            "i-0391f86fa0fe0d465 has Started",
        }
    },
}
#: The cluster events reference's "Cluster event record": an instance that failed to launch.
_CLUSTER_ERROR_EVENT: dict[str, Any] = {
    "version": "0",
    "id": "0bd4a141-0a02-9d8a-f977-3924c3fb259c",
    "detail-type": "SageMaker HyperPod Cluster Event",
    "source": "aws.sagemaker",
    "account": "111122223333",
    "time": "2026-06-01T17:20:25Z",
    "region": "us-west-2",
    "resources": [_GUIDE_ARN],
    "detail": {
        "EventDetails": {
            "EventId": "83ea0bb5-be77-45e8-a458-0a87f778a205",
            "ClusterArn": _GUIDE_ARN,
            "ClusterName": "sample-cluster",
            "InstanceGroupName": "p5Inst",
            "InstanceId": "i-0391f86fa0fe0d465",
            "ResourceType": "Instance",
            "EventTime": 1748794825350,
            "EventLevel": "Error",
            "Description": "Instance creation in Cluster sample-cluster and InstanceGroup p5Inst "
            "failed",
            "EventDetails": {
                "EventMetadata": {
                    "Instance": {
                        "FailureMessage": "We currently do not have sufficient capacity to "
                        "launch new ml.p5.48xlarge instances. Please try again.",
                        "NodeLogicalId": "df268d19-f035-4f28-9b80-b956b92ae21e",
                    }
                }
            },
        }
    },
}


def _variant(event: dict[str, Any], **detail: Any) -> dict[str, Any]:
    """``event`` with some of its detail fields replaced."""
    return {**event, "detail": {**event["detail"], **detail}}


def _of_another_cluster(event: dict[str, Any]) -> dict[str, Any]:
    text = json.dumps(event).replace("sample-cluster", "other-cluster")
    return json.loads(text)  # type: ignore[no-any-return]


def test_hyperpod_rules_match_the_documented_events(synthesized: Any) -> None:
    """Run the rules' patterns through moto's EventBridge matcher (an independent
    implementation) on the documented example events: Slurm clusters emit no cluster events
    (those need Continuous provisioning), so a failed cluster reaches the topic through the
    state-change rule."""
    from moto.events.models import EventPattern

    template, _, _ = synthesized
    rules = template.find_resources("AWS::Events::Rule")

    def pattern(prefix: str) -> EventPattern:
        raw = next(r for k, r in rules.items() if k.startswith(prefix))
        event_pattern = raw["Properties"]["EventPattern"]
        return EventPattern(json.dumps(event_pattern), event_pattern)

    def matches(rule: EventPattern, event: dict[str, Any]) -> bool:
        """EventBridge matches a field inside an array of objects when any element's field
        does (EventBridge user guide, "Arrays in Amazon EventBridge event patterns"); moto's
        matcher does not descend into arrays, so each instance group is tried on its own."""
        groups = event["detail"].get("InstanceGroups")
        if not isinstance(groups, list):
            return bool(rule.matches_event(event))
        return any(
            rule.matches_event(_variant(event, InstanceGroups=group)) for group in groups
        ) or bool(rule.matches_event(_variant(event, InstanceGroups=None)))

    health = pattern("HyperPodEventsNodeHealth")
    state = pattern("HyperPodEventsClusterState")
    errors = pattern("HyperPodEventsClusterErrors")
    # Each documented example reaches the rule it belongs to and no other; another cluster's
    # events reach none.
    expected = {
        "node health": (_NODE_HEALTH_EVENT, health),
        "state change": (_STATE_CHANGE_EVENT, state),  # in service, a failed instance group
        "cluster error": (_CLUSTER_ERROR_EVENT, errors),
        "cluster event": (_CLUSTER_EVENT, None),  # a lifecycle script started: no error
    }
    for name, (event, owner) in expected.items():
        for rule in (health, state, errors):
            assert matches(rule, event) == (rule is owner), (name, rule.dump())
            assert not matches(rule, _of_another_cluster(event)), name
    # The state-change rule on the cluster's and the groups' statuses.
    group = _STATE_CHANGE_EVENT["detail"]["InstanceGroups"][0]
    healthy = [{**group, "Status": "InService"}]
    assert not matches(state, _variant(_STATE_CHANGE_EVENT, InstanceGroups=healthy))
    assert matches(
        state, _variant(_STATE_CHANGE_EVENT, ClusterStatus="RollingBack", InstanceGroups=healthy)
    )
    assert matches(
        state, _variant(_STATE_CHANGE_EVENT, ClusterStatus="Failed", InstanceGroups=healthy)
    )
    degraded = [{**group, "Status": "InService"}, {**group, "Status": "Degraded"}]
    assert matches(state, _variant(_STATE_CHANGE_EVENT, InstanceGroups=degraded))
    assert not matches(
        state, _variant(_STATE_CHANGE_EVENT, ClusterStatus="Updating", InstanceGroups=healthy)
    )
    # Node health: a node back to health is worth a notice too.
    back = _variant(
        _NODE_HEALTH_EVENT, HealthSummary={"HealthStatus": "Healthy", "RepairAction": "None"}
    )
    assert matches(health, back)


def test_workspace_alarms_treat_silence_as_the_failure_only_for_ingestion() -> None:
    def build(stack: cdk.Stack) -> None:
        workspace = PrometheusWorkspace(stack, "Prometheus")
        PrometheusWorkspaceAlarms(
            stack, "Alarms", workspace_id=workspace.workspace_id, alert_topic=AlertTopic(stack, "T")
        )

    template = synth_stack(build)
    alarms = {
        name.split("Alarms", 1)[1][:-8]: a["Properties"]
        for name, a in template.find_resources("AWS::CloudWatch::Alarm").items()
    }
    assert {name: a["TreatMissingData"] for name, a in alarms.items()} == {
        "NoIngestion": "breaching",
        "RuleEvaluationFailures": "notBreaching",
        "NotificationsFailed": "notBreaching",
    }

    def query(alarm: dict[str, Any]) -> str:
        (metric,) = alarm["Metrics"]
        parts = metric["Expression"]["Fn::Join"][1]
        return "".join(p if isinstance(p, str) else "<workspace>" for p in parts)

    # Metrics Insights queries filtered on the workspace: they match the metric whatever other
    # dimensions it carries (RuleGroup on rule evaluations), unlike a plain metric alarm.
    assert query(alarms["NoIngestion"]) == (
        "SELECT MAX(ResourceCount) FROM \"AWS/Usage\" WHERE Service = 'Prometheus' "
        "AND Resource = 'IngestionRate' AND ResourceId = '<workspace>'"
    )
    assert query(alarms["RuleEvaluationFailures"]) == (
        "SELECT SUM(RuleEvaluationFailures) FROM \"AWS/Prometheus\" WHERE Workspace = '<workspace>'"
    )
    assert query(alarms["NotificationsFailed"]) == (
        'SELECT SUM(AlertManagerNotificationsFailed) FROM "AWS/Prometheus" '
        "WHERE Workspace = '<workspace>'"
    )
    for alarm in alarms.values():
        assert "MetricName" not in alarm
        assert alarm["AlarmActions"] and alarm["OKActions"]


def test_provisioner_custom_resource_gives_up_before_an_hour(synthesized: Any) -> None:
    template, _, _ = synthesized
    (resource,) = template.find_resources("Custom::GrafanaDashboards").values()
    assert int(resource["Properties"]["ServiceTimeout"]) == 360


def test_cfn_lint_clean(synthesized: Any) -> None:
    _, template_json, _ = synthesized
    assert cfn_lint(template_json, "us-east-1") == []


# ----------------------------------------------------------------------------- validation


@pytest.fixture
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Invalid", env=ENV)


def test_scraper_rejects_bad_input_all_at_once(stack: cdk.Stack) -> None:
    workspace = PrometheusWorkspace.from_workspace_id(stack, "Ws", "ws-12345678")
    subnet = _subnets(stack)[0]
    with pytest.raises(FmValidationError) as raised:
        ManagedScraper(
            stack,
            "Bad",
            cluster_arn="my-cluster",
            subnets=[subnet],
            security_group=ec2.SecurityGroup.from_security_group_id(stack, "Sg", "sg-0abc"),
            workspace=workspace,
            scrape_interval=cdk.Duration.seconds(10),
        )
    message = str(raised.value)
    assert "cluster_arn" in message and "subnets" in message and "scrape_interval" in message


def test_grafana_saml_needs_configuration(stack: cdk.Stack) -> None:
    workspace = PrometheusWorkspace.from_workspace_id(stack, "Ws", "ws-12345678")
    with pytest.raises(FmValidationError, match="saml_configuration: required"):
        GrafanaWorkspace(
            stack,
            "G",
            prometheus_workspaces=[workspace],
            authentication=[GrafanaAuthentication.SAML],
        )


def test_alert_rules_reject_unknown_threshold_and_imported_workspace(stack: cdk.Stack) -> None:
    with pytest.raises(FmValidationError, match="must be a PrometheusWorkspace"):
        AlertRules(stack, "R1", workspace=PrometheusWorkspace.from_workspace_id(stack, "W", "ws-1"))  # type: ignore[arg-type]
    workspace = PrometheusWorkspace(stack, "Real")
    with pytest.raises(FmValidationError, match="ttft_p95: is not a rule threshold"):
        AlertRules(stack, "R2", workspace=workspace, thresholds={"ttft_p95": 1.0})


def test_fsx_alarms_reject_bad_sizes(stack: cdk.Stack) -> None:
    from fm_constructs.observability import AlertTopic

    with pytest.raises(FmValidationError) as raised:
        FsxLustreAlarms(
            stack,
            "A",
            file_system_id="vol-1",
            storage_capacity_gib=0,
            per_unit_storage_throughput_mb_s_per_tib=250,
            alert_topic=AlertTopic(stack, "T"),
            free_capacity_min_ratio=1.5,
        )
    assert {"file_system_id", "storage_capacity_gib", "free_capacity_min_ratio"} <= {
        p.split(":")[0] for p in raised.value.problems
    }


def _fsx_alarms(stack: cdk.Stack, **kwargs: Any) -> dict[str, Any]:
    from fm_constructs.observability import AlertTopic

    FsxLustreAlarms(
        stack,
        "A",
        file_system_id="fs-0123456789abcdef0",
        storage_capacity_gib=4800,
        per_unit_storage_throughput_mb_s_per_tib=250,
        alert_topic=AlertTopic(stack, "T"),
        **kwargs,
    )
    alarms: dict[str, Any] = Template.from_stack(stack).find_resources("AWS::CloudWatch::Alarm")
    return {name: alarm["Properties"] for name, alarm in alarms.items()}


def test_metadata_alarm_compares_operations_with_provisioned_iops(stack: cdk.Stack) -> None:
    alarms = _fsx_alarms(stack, metadata_iops=12000)
    metadata = next(p for n, p in alarms.items() if n.startswith("AMetadataUtilization"))
    metric = next(m for m in metadata["Metrics"] if "MetricStat" in m)["MetricStat"]
    assert metric["Metric"] == {
        "Namespace": "AWS/FSx",
        "MetricName": "MetadataOperations",
        "Dimensions": [{"Name": "FileSystemId", "Value": "fs-0123456789abcdef0"}],
    }
    assert metric["Stat"] == "Sum"
    expression = next(m["Expression"] for m in metadata["Metrics"] if "Expression" in m)
    assert expression == "metadataOps / PERIOD(metadataOps) / 12000"
    assert metadata["Threshold"] == 0.8
    assert metadata["ComparisonOperator"] == "GreaterThanThreshold"
    assert metadata["TreatMissingData"] == "notBreaching"
    assert metadata["AlarmActions"] and metadata["OKActions"]


def test_no_metadata_alarm_in_automatic_mode(stack: cdk.Stack) -> None:
    alarms = _fsx_alarms(stack)
    assert len(alarms) == 2
    assert not any("MetadataUtilization" in name for name in alarms)


def test_metadata_alarm_rejects_invalid_iops(stack: cdk.Stack) -> None:
    with pytest.raises(FmValidationError, match="metadata_iops"):
        _fsx_alarms(stack, metadata_iops=2000)


def test_provisioner_asset_is_staged_once_per_set_of_dashboards(tmp_path: Path) -> None:
    files = shipped_dashboard_files()
    first = stage_provisioner_asset(files)
    assert stage_provisioner_asset(files) == first
    assert sorted(p.name for p in (first / "dashboards").iterdir()) == sorted(f.name for f in files)
    assert (first / "handler.py").is_file()
    changed = tmp_path / files[0].name
    changed.write_text(json.dumps({**json.loads(files[0].read_text()), "title": "changed"}))
    other = stage_provisioner_asset([changed, *files[1:]])
    assert other != first
    assert json.loads((other / "dashboards" / changed.name).read_text())["title"] == "changed"
