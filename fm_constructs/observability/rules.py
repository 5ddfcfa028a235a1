"""Prometheus rule groups and alert routing for a managed Prometheus workspace.

Each rule file becomes one ``AWS::APS::RuleGroupsNamespace`` (named ``<prefix>-<file stem>``)
so that editing the GPU alerts does not rewrite the EFA ones. Thresholds in the shipped files
are ``{{name}}`` placeholders with defaults in
:data:`~fm_constructs.observability.data.DEFAULT_RULE_THRESHOLDS`.
The workspace's alert manager routes every alert to an encrypted SNS topic, grouped by alert,
cluster, workload and node, critical alerts repeated hourly and warnings every four hours;
:data:`INHIBIT_RULES` silence the warnings a critical alert already explains.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml
from aws_cdk import Stack
from aws_cdk import aws_aps as aps
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.observability.data import (
    as_paths,
    load_rule_file,
    rule_thresholds,
    shipped_rule_files,
)
from fm_constructs.observability.notifications import APS_PRINCIPAL, AlertTopic
from fm_constructs.observability.prometheus import PrometheusWorkspace
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules

_NAMESPACE_NAME = re.compile(r"^[0-9A-Za-z][-.0-9A-Z_a-z]*$")


#: Warnings a critical alert on the same thing makes redundant (the alert manager drops the
#: target while the source fires): a replace-node XID over the plain XID warnings of that GPU,
#: any critical GPU alert over the GPU warnings of its node, a NotReady node or a GPU node that
#: stopped reporting over the scrape failures and warnings of that node.
INHIBIT_RULES: tuple[dict[str, object], ...] = (
    {
        "source_matchers": ['alertname="GpuXidErrorReplaceNode"'],
        "target_matchers": ['alertname=~"GpuXidError|GpuXidErrorsRepeated"'],
        "equal": ["cluster", "node", "gpu"],
    },
    {
        "source_matchers": ['severity="critical"', 'component="gpu"'],
        "target_matchers": ['severity=~"warning|info"', 'component="gpu"'],
        "equal": ["cluster", "node"],
    },
    {
        "source_matchers": ['alertname=~"KubernetesNodeNotReady|GpuNodeNotReporting"'],
        "target_matchers": ['severity=~"warning|info"'],
        "equal": ["cluster", "node"],
    },
)


def alert_manager_definition(*, topic_arn: str, region: str) -> str:
    """The AMP alert manager definition: every alert to one SNS receiver.

    The message body is the alert manager's default JSON-ish text; the subject is kept short
    (SNS subjects are limited to 100 characters) and the severity is sent as a message
    attribute so that subscriptions can filter (e.g. page only on ``critical``).
    """
    receiver = {
        "name": "sns",
        "sns_configs": [
            {
                "topic_arn": topic_arn,
                "sigv4": {"region": region},
                "subject": "[{{ .Status | toUpper }}] {{ .CommonLabels.alertname }}",
                "attributes": {"severity": "{{ .CommonLabels.severity }}"},
            }
        ],
    }
    config = {
        "route": {
            "receiver": "sns",
            "group_by": ["alertname", "cluster", "workload", "node"],
            "group_wait": "30s",
            "group_interval": "5m",
            "repeat_interval": "4h",
            "routes": [
                {"receiver": "sns", "matchers": ['severity="critical"'], "repeat_interval": "1h"}
            ],
        },
        "receivers": [receiver],
        "inhibit_rules": [dict(rule) for rule in INHIBIT_RULES],
    }
    body = yaml.safe_dump(config, sort_keys=False, width=200)
    return "alertmanager_config: |\n" + "".join(f"  {line}\n" for line in body.splitlines())


class AlertRules(Construct):
    """Rule groups namespaces plus the alert manager definition of ``workspace``.

    Children: one ``AWS::APS::RuleGroupsNamespace`` per rule file, id = the file stem;
    ``Topic`` (an :class:`AlertTopic`) when ``alert_topic`` is not given.

    The alert manager definition is a property of the workspace itself, so ``workspace`` must
    be a :class:`PrometheusWorkspace` created in this app (an imported workspace cannot be
    changed by CloudFormation).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.ALERT_RULES

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        workspace: PrometheusWorkspace,
        alert_topic: AlertTopic | None = None,
        rule_files: Sequence[str | Path] | None = None,
        thresholds: Mapping[str, float] | None = None,
        namespace_prefix: str = "fm",
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        problems.adopt(
            observability_rules.alert_rules(
                workspace_type=None
                if isinstance(workspace, PrometheusWorkspace)
                else type(workspace).__name__,
                workspace_has_alert_manager=isinstance(workspace, PrometheusWorkspace)
                and workspace.resource.alert_manager_definition is not None,
                rule_files=rule_files,
            )
        )
        problems.raise_if_any()

        paths = shipped_rule_files() if rule_files is None else as_paths(rule_files)
        values = rule_thresholds(thresholds)
        self.thresholds: Mapping[str, float] = values
        self.alert_topic = alert_topic or AlertTopic(self, "Topic")
        # The exact workspace: the topic policy is a resource of its own (AWS::SNS::TopicPolicy),
        # so it may reference the workspace that references the topic without a cycle.
        self.alert_topic.allow_service(APS_PRINCIPAL, source_arn=workspace.workspace_arn)

        self.namespaces: dict[str, aps.CfnRuleGroupsNamespace] = {}
        names = Problems(context="AlertRules", code=codes.ALERT_RULES)
        for path in paths:
            name = f"{namespace_prefix}-{path.stem}"
            if not _NAMESPACE_NAME.match(name) or len(name) > 64 or path.stem in self.namespaces:
                names.add(
                    "rule file",
                    path.name,
                    "needs a unique stem giving a namespace name of letters, digits, '-', '.', "
                    "'_' (64 characters at most)",
                )
                continue
            text, _document = load_rule_file(path, values)
            self.namespaces[path.stem] = aps.CfnRuleGroupsNamespace(
                self, path.stem, name=name, workspace=workspace.workspace_arn, data=text
            )
        names.raise_if_any()

        workspace.resource.alert_manager_definition = alert_manager_definition(
            topic_arn=self.alert_topic.topic_arn, region=Stack.of(self).region
        )
