"""The monitoring facade: each ``monitor_xxx`` of :class:`ObservabilityPlatform` (and of a
:class:`MonitoringFacade` over a workspace or a topic alone) creates the segment it promises
under the caller's scope and id, for created and imported resources alike, and nothing when
it lacks the workspace or topic the segment needs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Template
from constructs import Construct

from fm_constructs.errors import FmValidationError
from fm_constructs.observability import (
    AlertTopic,
    PrometheusWorkspace,
)
from fm_constructs.observability.alarms import HYPERPOD_NODE_HEALTH_DETAIL_TYPE
from fm_constructs.orchestration import GpuEksCluster
from fm_constructs.orchestration.eks_metrics_sources import EksMetricsSources
from fm_constructs.orchestration.hyperpod import HyperPodCluster
from fm_constructs.orchestration.hyperpod.lifecycle import (
    EFA_EXPORTER_REPOSITORY,
    efa_exporter_account,
)
from fm_constructs.orchestration.pcs import PcsInstanceRole
from fm_constructs.patterns import MonitoringFacade, ObservabilityPlatform
from fm_constructs.patterns.eks_monitoring import EXPORTER_PORTS, EksClusterScraping
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket, LustreDeploymentType, LustreFileSystem
from tests.iam_policies import (
    ACCOUNT,
    REGION,
    Statement,
    Templates,
    identity_allows,
    role_statements,
)
from tests.support import TEST_ENV, cfn_lint, imported_vpc

IMPORTED_FS = "fs-0123456789abcdef0"
HYPERPOD_NAME = "sample-cluster"
HYPERPOD_SG = "sg-0123456789abcdef0"


@dataclass
class Monitored:
    """The synthesized stack, its platform and the EKS cluster the platform scrapes."""

    template: Template
    platform: ObservabilityPlatform
    cluster: GpuEksCluster

    def segment(self, path: str) -> Any:
        """The segment the platform created at ``Monitored/<path>``."""
        return next(s for s in self.platform.segments if s.node.path == f"Monitored/{path}")


def _lustre(stack: cdk.Stack, vpc: ec2.IVpc, construct_id: str, **options: Any) -> Any:
    """A file system created in ``stack``, in the first private subnet of ``vpc``."""
    bucket = DataBucket(stack, f"{construct_id}Data")
    subnet = vpc.private_subnets[0]
    return LustreFileSystem(
        stack, construct_id, vpc=vpc, subnet=subnet, data_bucket=bucket, **options
    )


def _imported_fs(stack: cdk.Stack, construct_id: str = "Fs", **kwargs: Any) -> Any:
    return LustreFileSystem.from_lustre_file_system_attributes(
        stack,
        construct_id,
        file_system_id=IMPORTED_FS,
        dns_name=f"{IMPORTED_FS}.fsx.us-east-1.amazonaws.com",
        mount_name="abcdefgh",
        security_group_ids=["sg-0fs"],
        **kwargs,
    )


@pytest.fixture(scope="module")
def monitored() -> Monitored:
    """One platform monitoring a created EKS cluster, a created and an imported file system,
    and an imported HyperPod cluster orchestrated by that EKS cluster."""
    app = cdk.App()
    stack = cdk.Stack(app, "Monitored", env=TEST_ENV)
    platform = ObservabilityPlatform(stack, "Observability", grafana=False)
    vpc = imported_vpc(stack)
    cluster = GpuEksCluster(stack, "Eks", vpc=vpc, gpu_availability_zone="us-east-1a")
    platform.monitor_eks_cluster(stack, "Scraping", cluster=cluster)
    fs = _lustre(stack, vpc, "Fsx", storage_capacity_gib=4800, throughput_mb_s_per_tib=250)
    platform.monitor_lustre(stack, "FileSystemAlarms", file_system=fs)
    imported_fs = _imported_fs(stack, "ImportedFs", storage_capacity_gib=2400)
    platform.monitor_lustre(
        stack, "ImportedFileSystemAlarms", file_system=imported_fs, throughput_mb_s_per_tib=125
    )
    hyperpod = HyperPodCluster.from_hyperpod_cluster_attributes(
        stack, "HyperPod", cluster_name=HYPERPOD_NAME, security_group_ids=[HYPERPOD_SG]
    )
    watched = platform.monitor_hyperpod(
        Construct(stack, "HyperPodMonitoring"), cluster=hyperpod, eks_cluster=cluster
    )
    assert watched.health_events is not None and watched.scraping is not None
    enable_nag(app)
    app.synth()
    return Monitored(Template.from_stack(stack), platform, cluster)


def test_segments_keep_the_callers_scope_and_id(monitored: Monitored) -> None:
    paths = [segment.node.path for segment in monitored.platform.segments]
    assert paths == [
        "Monitored/Observability/WorkspaceAlarms",
        "Monitored/Scraping",
        "Monitored/FileSystemAlarms",
        "Monitored/ImportedFileSystemAlarms",
        "Monitored/HyperPodMonitoring/Scraping",
        "Monitored/HyperPodMonitoring/HealthEvents",
    ]


def test_monitor_eks_cluster_scrapes_the_cluster_into_the_workspace(
    monitored: Monitored,
) -> None:
    t = monitored.template
    # One scraper per call, both into the platform's workspace; the metrics sources once.
    scrapers = t.find_resources("AWS::APS::Scraper")
    assert len(scrapers) == 2
    workspace = monitored.platform.prometheus.resource
    for scraper in scrapers.values():
        arn = scraper["Properties"]["Destination"]["AmpConfiguration"]["WorkspaceArn"]
        assert arn == {"Fn::GetAtt": [_logical_id(workspace), "Arn"]}
    assert EksMetricsSources.enable(monitored.cluster) is _scraping(monitored).metrics_sources
    assert (
        monitored.segment("HyperPodMonitoring/Scraping").metrics_sources
        is _scraping(monitored).metrics_sources
    )
    charts = t.find_resources("Custom::AWSCDK-EKS-HelmChart")
    names = sorted(c["Properties"]["Chart"] for c in charts.values())
    assert names.count("prometheus-node-exporter") == 1
    assert names.count("kube-state-metrics") == 1
    # The scraper reaches the control plane's private endpoint (443).
    group = _logical_id(_scraping(monitored).security_group.node.default_child)
    t.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "FromPort": 443,
            "ToPort": 443,
            "SourceSecurityGroupId": {"Fn::GetAtt": [group, "GroupId"]},
        },
    )


def test_monitor_hyperpod_scrapes_the_hyperpod_nodes_and_routes_their_events(
    monitored: Monitored,
) -> None:
    t = monitored.template
    group = _logical_id(
        monitored.segment("HyperPodMonitoring/Scraping").security_group.node.default_child
    )
    for port in EXPORTER_PORTS:
        t.has_resource_properties(
            "AWS::EC2::SecurityGroupIngress",
            {
                "GroupId": HYPERPOD_SG,
                "FromPort": port,
                "ToPort": port,
                "SourceSecurityGroupId": {"Fn::GetAtt": [group, "GroupId"]},
            },
        )
    rules = t.find_resources(
        "AWS::Events::Rule",
        {"Properties": {"EventPattern": {"source": ["aws.sagemaker"]}}},
    )
    assert len(rules) == 3
    node_health = (
        monitored.segment("HyperPodMonitoring/HealthEvents")
        .node.find_child("NodeHealth")
        .node.default_child
    )
    pattern = t.to_json()["Resources"][_logical_id(node_health)]["Properties"]["EventPattern"]
    assert pattern["detail-type"] == [HYPERPOD_NODE_HEALTH_DETAIL_TYPE]
    assert pattern["detail"] == {"ClusterName": [HYPERPOD_NAME]}


def _alarm(monitored: Monitored, alarm: cloudwatch.Alarm) -> dict[str, Any]:
    logical_id = _logical_id(alarm.node.default_child)
    return dict(monitored.template.to_json()["Resources"][logical_id]["Properties"])


def test_monitor_lustre_uses_the_file_systems_own_sizes_or_the_given_ones(
    monitored: Monitored,
) -> None:
    topic = _logical_id(monitored.platform.alert_topic.topic.node.default_child)
    for alarms, baseline_mb_s in (
        (monitored.segment("FileSystemAlarms"), 4.8 * 250),
        (monitored.segment("ImportedFileSystemAlarms"), 2.4 * 125),
    ):
        free = _alarm(monitored, alarms.free_capacity)
        assert free["AlarmActions"] == [{"Ref": topic}]
        throughput = _alarm(monitored, alarms.throughput_utilization)
        assert f"{baseline_mb_s:.0f} MB/s" in json.dumps(throughput["AlarmDescription"])
    imported = _alarm(monitored, monitored.segment("ImportedFileSystemAlarms").free_capacity)
    assert {"Name": "FileSystemId", "Value": IMPORTED_FS} in imported["Dimensions"]
    assert monitored.segment("FileSystemAlarms").metadata_utilization is None


def test_created_alarms_lists_every_alarm_of_every_segment(monitored: Monitored) -> None:
    alarms = monitored.platform.created_alarms()
    for fsx in (
        monitored.segment("FileSystemAlarms"),
        monitored.segment("ImportedFileSystemAlarms"),
    ):
        assert fsx.free_capacity in alarms and fsx.throughput_utilization in alarms
    workspace_alarms = [
        c
        for c in monitored.platform.workspace_alarms.node.find_all()
        if isinstance(c, cloudwatch.Alarm)
    ]
    assert workspace_alarms and set(workspace_alarms) <= set(alarms)
    assert len(alarms) == len(monitored.template.find_resources("AWS::CloudWatch::Alarm"))


def test_monitored_template_is_cfn_lint_clean(monitored: Monitored) -> None:
    assert cfn_lint(monitored.template.to_json(), REGION) == []


def _scraping(monitored: Monitored) -> EksClusterScraping:
    scraping: EksClusterScraping = monitored.segment("Scraping")
    return scraping


def _logical_id(element: Any) -> str:
    """The logical id of ``element`` (a CfnElement) in its stack."""
    return str(cdk.Stack.of(element).get_logical_id(element))


# ------------------------------------------------------------------------- without a platform


@pytest.fixture
def stack() -> cdk.Stack:
    return cdk.Stack(cdk.App(), "Bare", env=TEST_ENV)


def test_a_facade_without_workspace_or_topic_creates_nothing(stack: cdk.Stack) -> None:
    facade = MonitoringFacade()
    hyperpod = HyperPodCluster.from_hyperpod_cluster_attributes(
        stack, "HyperPod", cluster_name=HYPERPOD_NAME
    )
    assert facade.monitor_lustre(stack, "Alarms", file_system=_imported_fs(stack)) is None
    watched = facade.monitor_hyperpod(stack, cluster=hyperpod)
    assert watched.health_events is None and watched.scraping is None
    assert facade.segments == [] and facade.created_alarms() == []
    assert Template.from_stack(stack).to_json().get("Resources", {}) == {}


def test_a_topic_alone_is_enough_for_alarms_and_events(stack: cdk.Stack) -> None:
    facade = MonitoringFacade(alert_topic=AlertTopic(stack, "Alerts"))
    hyperpod = HyperPodCluster.from_hyperpod_cluster_attributes(
        stack, "HyperPod", cluster_name=HYPERPOD_NAME
    )
    watched = facade.monitor_hyperpod(stack, cluster=hyperpod, eks_cluster=None)
    alarms = facade.monitor_lustre(
        stack,
        "Alarms",
        file_system=_imported_fs(stack),
        storage_capacity_gib=1200,
        throughput_mb_s_per_tib=1000,
        metadata_iops=3000,
    )
    assert watched.scraping is None and watched.health_events is not None
    assert alarms is not None and alarms.metadata_utilization is not None
    t = Template.from_stack(stack)
    t.resource_count_is("AWS::CloudWatch::Alarm", 3)
    t.resource_count_is("AWS::Events::Rule", 3)
    t.resource_count_is("AWS::APS::Scraper", 0)


def test_an_imported_workspace_is_enough_for_scraping(stack: cdk.Stack) -> None:
    vpc = imported_vpc(stack)
    cluster = GpuEksCluster(stack, "Eks", vpc=vpc, gpu_availability_zone="us-east-1a")
    workspace = PrometheusWorkspace.from_prometheus_workspace_attributes(
        stack, "Workspace", workspace_id="ws-0123abcd-4567-89ef-0123-456789abcdef"
    )
    scraping = MonitoringFacade(workspace=workspace).monitor_eks_cluster(stack, cluster=cluster)
    assert scraping is not None and scraping.node.path == "Bare/Scraping"
    (scraper,) = Template.from_stack(stack).find_resources("AWS::APS::Scraper").values()
    arn = scraper["Properties"]["Destination"]["AmpConfiguration"]["WorkspaceArn"]
    assert "workspace/ws-0123abcd-4567-89ef-0123-456789abcdef" in json.dumps(arn)


def test_monitor_lustre_asks_for_the_sizes_an_imported_file_system_lacks(
    stack: cdk.Stack,
) -> None:
    facade = MonitoringFacade(alert_topic=AlertTopic(stack, "Alerts"))
    with pytest.raises(FmValidationError) as raised:
        facade.monitor_lustre(stack, "Alarms", file_system=_imported_fs(stack))
    message = str(raised.value)
    assert "storage_capacity_gib" in message and "throughput_mb_s_per_tib" in message
    assert "describe-file-systems" in message


def test_monitor_lustre_skips_a_scratch_file_system(stack: cdk.Stack) -> None:
    scratch = LustreDeploymentType.SCRATCH_2
    fs = _lustre(
        stack, imported_vpc(stack), "Scratch", storage_capacity_gib=1200, deployment_type=scratch
    )
    facade = MonitoringFacade(alert_topic=AlertTopic(stack, "Alerts"))
    assert facade.monitor_lustre(stack, "Alarms", file_system=fs) is None
    Template.from_stack(stack).resource_count_is("AWS::CloudWatch::Alarm", 0)


# ------------------------------------------------------------------------------------ PCS

WORKSPACE_ID = "ws-0123abcd-4567-89ef-0123-456789abcdef"


def _pcs_node_statements(*, workspace: bool, efa: bool) -> tuple[Any, list[Statement]]:
    """What monitor_pcs returns for a PCS node role, and the role's identity statements."""
    stack = cdk.Stack(cdk.App(), "Pcs", env=TEST_ENV)
    role = PcsInstanceRole(stack, "NodeRole")
    facade = MonitoringFacade(
        workspace=PrometheusWorkspace.from_prometheus_workspace_attributes(
            stack, "Workspace", workspace_id=WORKSPACE_ID
        )
        if workspace
        else None
    )
    written_to = facade.monitor_pcs(node_role=role, efa=efa)
    templates = Templates({"Pcs": dict(Template.from_stack(stack).to_json())})
    role_id = _logical_id(role.role.node.default_child)
    return written_to, role_statements(templates, "Pcs", role_id)


def test_monitor_pcs_lets_the_nodes_remote_write_and_pull_the_efa_exporter() -> None:
    written_to, found = _pcs_node_statements(workspace=True, efa=True)
    assert written_to is not None and written_to.workspace_id == WORKSPACE_ID
    arn = f"arn:aws:aps:{REGION}:{ACCOUNT}:workspace/{WORKSPACE_ID}"
    assert identity_allows(found, "aps:RemoteWrite", arn)
    assert not identity_allows(found, "aps:RemoteWrite", arn.replace("ws-0", "ws-9"))
    assert not identity_allows(found, "aps:QueryMetrics", arn)
    registry = efa_exporter_account(REGION)
    repository = f"arn:aws:ecr:{REGION}:{registry}:repository/{EFA_EXPORTER_REPOSITORY}"
    assert identity_allows(found, "ecr:BatchGetImage", repository)


def test_monitor_pcs_without_efa_or_workspace_grants_only_what_is_needed() -> None:
    _, found = _pcs_node_statements(workspace=True, efa=False)
    assert not any("ecr:BatchGetImage" in s.actions for s in found)
    written_to, found = _pcs_node_statements(workspace=False, efa=True)
    assert written_to is None
    assert not any(action.startswith(("aps:", "ecr:Batch")) for s in found for action in s.actions)
