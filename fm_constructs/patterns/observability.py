"""The shared observability layer of a deployment and the one way to monitor a resource.

:class:`ObservabilityPlatform` is one Prometheus workspace with alert rules routed to an
encrypted SNS topic, and a Grafana workspace with its dashboards provisioned.
:class:`MonitoringFacade` (which the platform is) offers one ``monitor_xxx`` per resource kind:
each creates that kind's segment (scraper, alarms, event rules) under the scope and construct
id the caller gives, so patterns and stacks never wire scrapers, alarms or event rules by hand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from aws_cdk import Stack
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.observability import (
    AlertRules,
    AlertTopic,
    FsxLustreAlarms,
    GrafanaDashboards,
    GrafanaWorkspace,
    HyperPodHealthEvents,
    IPrometheusWorkspace,
    PrometheusWorkspace,
    PrometheusWorkspaceAlarms,
)
from fm_constructs.orchestration.hyperpod.imported import IHyperPodCluster
from fm_constructs.orchestration.slurm import efa_exporter_repository_arn
from fm_constructs.patterns.eks_monitoring import EksClusterScraping, IScrapedCluster
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules
from fm_constructs.storage import LustreDeploymentType
from fm_constructs.storage.imported_lustre import ILustreFileSystem


def _given_or_own(value: int | None, file_system: ILustreFileSystem, name: str) -> int | None:
    """``value`` when given, else the file system's own attribute ``name`` (None where an
    imported file system does not know it)."""
    return value if value is not None else getattr(file_system, name, None)


class ISlurmNodeRole(Protocol):
    """What :meth:`MonitoringFacade.monitor_pcs` needs from the nodes' role: the role their
    Prometheus agents write with, and the right to pull an exporter image."""

    @property
    def role(self) -> iam.IRole: ...

    def allow_image_pull(self, repository_arn: str) -> None: ...


@dataclass(frozen=True)
class HyperPodMonitoring:
    """What :meth:`MonitoringFacade.monitor_hyperpod` created: the health-event rules (with an
    alert topic) and the scraping of the EKS orchestrator (with a workspace and a cluster to
    scrape)."""

    health_events: HyperPodHealthEvents | None
    scraping: EksClusterScraping | None


class MonitoringFacade:
    """Monitors resources into one Prometheus ``workspace`` and one ``alert_topic``.

    One ``monitor_xxx`` per resource kind; each creates the constructs of that kind's segment
    under ``scope`` with ``construct_id`` (the caller's construct tree stays as it is), records
    them in :attr:`segments` and returns them. A segment that needs the workspace (scraping) or
    the topic (alarms, event rules) is skipped, and ``None`` returned, when the facade has
    none: a deployment without observability calls the same methods.

    :class:`ObservabilityPlatform` is a facade over the workspace and topic it creates; code
    that holds only a workspace or a topic (an imported workspace, say) builds one with
    ``MonitoringFacade(workspace=..., alert_topic=...)``.
    """

    def __init__(
        self,
        *,
        workspace: IPrometheusWorkspace | None = None,
        alert_topic: AlertTopic | None = None,
    ) -> None:
        self.workspace = workspace
        self.alert_topic = alert_topic
        #: Every construct a ``monitor_xxx`` created, in order.
        self.segments: list[Construct] = []

    def created_alarms(self) -> list[cloudwatch.Alarm]:
        """The CloudWatch alarms of every segment created so far (for a composite alarm or a
        dashboard of one's own)."""
        return [
            child
            for segment in self.segments
            for child in segment.node.find_all()
            if isinstance(child, cloudwatch.Alarm)
        ]

    # ------------------------------------------------------------------------ resource kinds

    def monitor_eks_cluster(
        self,
        scope: Construct,
        construct_id: str = "Scraping",
        *,
        cluster: IScrapedCluster,
        subnets: Sequence[ec2.ISubnet] | None = None,
        node_peers: Sequence[ec2.IConnectable] = (),
        security_group: ec2.ISecurityGroup | None = None,
        scraper_role_scope: Construct | None = None,
    ) -> EksClusterScraping | None:
        """Scrape ``cluster`` into the workspace: its metrics sources (node exporter,
        kube-state-metrics, EFA exporter; once per cluster) and an AMP managed scraper in
        ``subnets`` (default: the VPC's private subnets) that reaches the exporters on the
        cluster's nodes and on ``node_peers``. ``security_group`` and ``scraper_role_scope``:
        see :class:`EksClusterScraping`. ``None`` without a workspace."""
        if self.workspace is None:
            return None
        scraping = EksClusterScraping(
            scope,
            construct_id,
            cluster=cluster,
            workspace=self.workspace,
            subnets=list(subnets if subnets is not None else cluster.vpc.private_subnets),
            node_peers=node_peers,
            security_group=security_group,
            scraper_role_scope=scraper_role_scope,
        )
        self.segments.append(scraping)
        return scraping

    def monitor_lustre(
        self,
        scope: Construct,
        construct_id: str = "FileSystemAlarms",
        *,
        file_system: ILustreFileSystem,
        storage_capacity_gib: int | None = None,
        throughput_mb_s_per_tib: int | None = None,
        metadata_iops: int | None = None,
    ) -> FsxLustreAlarms | None:
        """Free-capacity, throughput and (with user-provisioned metadata IOPS) metadata
        alarms of ``file_system`` to the alert topic (:class:`FsxLustreAlarms`).

        The sizes default to the file system's own (a :class:`LustreFileSystem` knows them);
        an imported file system passes ``storage_capacity_gib`` and
        ``throughput_mb_s_per_tib`` (``aws fsx describe-file-systems``). A file system with no
        per-unit throughput of its own (SCRATCH_2) has no baseline to compare against and
        gets none. ``None`` without an alert topic or a baseline."""
        if self.alert_topic is None:
            return None
        if getattr(file_system, "deployment_type", None) is LustreDeploymentType.SCRATCH_2:
            return None
        capacity = _given_or_own(storage_capacity_gib, file_system, "storage_capacity_gib")
        throughput = _given_or_own(throughput_mb_s_per_tib, file_system, "throughput_mb_s_per_tib")
        if capacity is None or throughput is None:
            problems = Problems(
                context=f"{type(self).__name__}.monitor_lustre {scope.node.path}",
                code=codes.FSX_ALARMS,
            )
            problems.adopt(
                observability_rules.stated_lustre_size(
                    storage_capacity_gib=capacity, throughput_mb_s_per_tib=throughput
                )
            )
            raise FmValidationError(problems.findings, context=problems.context)
        alarms = FsxLustreAlarms(
            scope,
            construct_id,
            file_system_id=file_system.file_system_id,
            storage_capacity_gib=capacity,
            per_unit_storage_throughput_mb_s_per_tib=throughput,
            metadata_iops=_given_or_own(metadata_iops, file_system, "metadata_iops"),
            alert_topic=self.alert_topic,
        )
        self.segments.append(alarms)
        return alarms

    def monitor_hyperpod(
        self,
        scope: Construct,
        *,
        cluster: IHyperPodCluster,
        eks_cluster: IScrapedCluster | None = None,
        scraper_subnets: Sequence[ec2.ISubnet] | None = None,
    ) -> HyperPodMonitoring:
        """Watch a HyperPod ``cluster``: its node-health events, failed states and error
        events go to the alert topic (``HealthEvents``, :class:`HyperPodHealthEvents`), and
        ``eks_cluster``, the EKS orchestrator this monitoring owns, is scraped into the
        workspace with the HyperPod nodes among the scraped peers (``Scraping``). Leave
        ``eks_cluster`` out when its scraper exists already (a shared cluster's). Slurm nodes
        remote-write their metrics themselves (the cluster's ``prometheus``), so they need no
        scraper."""
        scraping = None
        if eks_cluster is not None:
            scraping = self.monitor_eks_cluster(
                scope,
                "Scraping",
                cluster=eks_cluster,
                subnets=scraper_subnets,
                node_peers=[cluster],
            )
        health_events = None
        if self.alert_topic is not None:
            health_events = HyperPodHealthEvents(
                scope,
                "HealthEvents",
                alert_topic=self.alert_topic,
                cluster_name=cluster.cluster_name,
            )
            self.segments.append(health_events)
        return HyperPodMonitoring(health_events=health_events, scraping=scraping)

    def monitor_pcs(self, *, node_role: ISlurmNodeRole, efa: bool) -> IPrometheusWorkspace | None:
        """Let the nodes of an AWS PCS cluster send their metrics to the workspace.

        The shared Slurm node scripts run the exporters of HyperPod Slurm (node, DCGM, EFA;
        Slurm on the login node) and a Prometheus agent that remote-writes to the workspace's
        ``remote_write_url`` (in the nodes' parameters). This grants ``node_role`` the remote
        write and, with ``efa`` nodes, the pull of the EFA exporter image from the HyperPod ECR
        registry. Returns the workspace written to; ``None`` (and no grant) without one."""
        if self.workspace is None:
            return None
        self.workspace.grant_remote_write(node_role.role)
        if efa:
            node_role.allow_image_pull(efa_exporter_repository_arn(Stack.of(node_role.role)))
        return self.workspace


class ObservabilityPlatform(Construct, MonitoringFacade):
    """Prometheus (AMP) + alert rules + SNS alerts + CloudWatch alarms on the workspace itself,
    and optionally Grafana (AMG) with the shipped dashboards, provisioned on deploy; the
    :class:`MonitoringFacade` over that workspace and topic."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        grafana: bool = True,
        grafana_scope: Construct | None = None,
    ) -> None:
        """``grafana_scope``: the construct the Grafana workspace and its dashboards are created
        under (default: this one). One in a stack of its own keeps the workspace (about five
        minutes to create) off the path of everything that waits for the Prometheus
        workspace."""
        super().__init__(scope, construct_id)
        self.prometheus = PrometheusWorkspace(self, "Prometheus")
        MonitoringFacade.__init__(
            self, workspace=self.prometheus, alert_topic=AlertTopic(self, "Alerts")
        )
        self.alert_topic: AlertTopic
        self.rules = AlertRules(
            self, "Rules", workspace=self.prometheus, alert_topic=self.alert_topic
        )
        self.workspace_alarms = PrometheusWorkspaceAlarms(
            self,
            "WorkspaceAlarms",
            workspace_id=self.prometheus.workspace_id,
            alert_topic=self.alert_topic,
        )
        self.segments.append(self.workspace_alarms)
        self.grafana: GrafanaWorkspace | None = None
        self.dashboards: GrafanaDashboards | None = None
        if grafana:
            home = grafana_scope or self
            self.grafana = GrafanaWorkspace(
                home, "Grafana", prometheus_workspaces=[self.prometheus]
            )
            self.dashboards = GrafanaDashboards(
                home, "Dashboards", grafana=self.grafana, prometheus=self.prometheus
            )
