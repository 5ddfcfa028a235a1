"""The encrypted SNS topic every alert of the observability layer goes to.

Managed Prometheus' alert manager, CloudWatch alarms and EventBridge rules all publish here.
The topic is encrypted with a customer-managed KMS key; a service can publish to an encrypted
topic only when the key policy lets it generate data keys, so :meth:`AlertTopic.allow_service`
adds both the topic-policy and the key-policy statement, scoped to this account (and to the
publishing resource when its ARN is known).
"""

from __future__ import annotations

from aws_cdk import RemovalPolicy, Stack
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_sns as sns
from constructs import Construct

#: Service principals that deliver notifications of this layer.
APS_PRINCIPAL = "aps.amazonaws.com"
CLOUDWATCH_PRINCIPAL = "cloudwatch.amazonaws.com"
EVENTS_PRINCIPAL = "events.amazonaws.com"


class AlertTopic(Construct):
    """KMS-encrypted SNS topic for alerts. Children: ``Key``, ``Resource`` (the topic).

    Subscribe people or a chat integration to ``topic`` (email, AWS Chatbot, PagerDuty).
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        display_name: str = "fm-constructs alerts",
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
    ) -> None:
        super().__init__(scope, construct_id)
        self.key = kms.Key(
            self,
            "Key",
            description=f"Alert topic {self.node.path}",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )
        self.topic = sns.Topic(
            self,
            "Resource",
            display_name=display_name,
            master_key=self.key,
            enforce_ssl=True,
        )
        self._allowed: set[tuple[str, str]] = set()
        self._key_users: set[str] = set()

    @property
    def topic_arn(self) -> str:
        return self.topic.topic_arn

    def allow_service(self, service_principal: str, *, source_arn: str | None = None) -> None:
        """Let ``service_principal`` publish to the topic and use the key for it.

        The topic policy carries the confused-deputy conditions: ``aws:SourceAccount`` is this
        account and, with ``source_arn``, ``aws:SourceArn`` matches it (the form AWS documents
        for ``sns:Publish`` by CloudWatch, EventBridge and Managed Prometheus). The key
        statement carries none: the KMS calls SNS makes for a publishing service are not
        documented to carry those keys for every service (AWS's own key-policy examples for
        encrypted topics omit them, and EventBridge delivery is reported not to carry them),
        and a condition absent from the request drops every alert without an error anywhere
        but the sender's metrics. The key is this topic's alone, so using it grants nothing
        without the topic policy's publish permission. Idempotent per pair.
        """
        marker = (service_principal, source_arn or "")
        if marker in self._allowed:
            return
        self._allowed.add(marker)
        conditions: dict[str, dict[str, str]] = {
            "StringEquals": {"aws:SourceAccount": Stack.of(self).account}
        }
        if source_arn is not None:
            conditions["ArnLike"] = {"aws:SourceArn": source_arn}
        principal = iam.ServicePrincipal(service_principal)
        self.topic.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["sns:Publish"],
                principals=[principal],
                resources=[self.topic.topic_arn],
                conditions=conditions,
            )
        )
        if service_principal in self._key_users:
            return
        self._key_users.add(service_principal)
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                actions=["kms:GenerateDataKey*", "kms:Decrypt"],
                principals=[principal],
                resources=["*"],
            )
        )
