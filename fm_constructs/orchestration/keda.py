"""KEDA on a GPU EKS cluster: event-driven autoscaling of model servers on serving metrics.

KEDA scales Deployments and any scale subresource (such as LeaderWorkerSet); its operator
queries Amazon Managed Prometheus with its own AWS identity (EKS Pod Identity). Installed once
per cluster with :meth:`KedaAutoscaler.enable`.
"""

from __future__ import annotations

from typing import Protocol

from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.pod_identity import (
    chart_with_identity,
    pod_identity_role,
)


class IQueryableWorkspace(Protocol):
    """What KEDA needs of a Prometheus workspace (an ``IPrometheusWorkspace`` is one): its ARN
    and a grant of its query actions."""

    @property
    def workspace_arn(self) -> str: ...

    def grant_query(self, grantee: iam.IGrantable) -> iam.Grant: ...


#: KEDA (event-driven autoscaling; scales Deployments and any scale subresource, such as
#: LeaderWorkerSet) from its publisher's Helm repository, pinned.
KEDA = charts.pinned_chart("keda", namespace="keda")
#: Service account the KEDA chart creates for its operator (the identity that queries AMP).
KEDA_OPERATOR_SERVICE_ACCOUNT = "keda-operator"


class KedaAutoscaler(Construct):
    """KEDA installed once per cluster, with its operator's AWS identity (EKS Pod Identity).

    Use :meth:`enable` to get (or create) the cluster's instance; :meth:`allow_queries` grants the
    operator ``aps:QueryMetrics`` and friends on a Prometheus workspace.
    """

    def __init__(self, scope: Construct, construct_id: str, *, cluster: IGpuCluster) -> None:
        super().__init__(scope, construct_id)
        self.role = pod_identity_role(
            self,
            "OperatorRole",
            description="KEDA operator (EKS Pod Identity): query Managed Prometheus",
        )
        # The operator waits for its association and the Pod Identity agent.
        self.pod_identity, self.chart = chart_with_identity(
            self,
            cluster,
            KEDA,
            {
                "serviceAccount": {"operator": {"name": KEDA_OPERATOR_SERVICE_ACCOUNT}},
                # The TriggerAuthentication uses Pod Identity, so KEDA reads no Secret outside
                # its namespace (chart values permissions.*.restrict.secret, keda/README.md).
                "permissions": {
                    "operator": {"restrict": {"secret": True}},
                    "metricServer": {"restrict": {"secret": True}},
                },
            },
            service_account=KEDA_OPERATOR_SERVICE_ACCOUNT,
            role=self.role,
            wait_for_role=False,
        )
        self._workspaces: set[str] = set()

    @classmethod
    def enable(cls, cluster: IGpuCluster) -> KedaAutoscaler:
        """The cluster's KEDA, installed once through its add-on registry."""
        return cluster.addon_registry.install(
            "Keda", lambda scope, construct_id: cls(scope, construct_id, cluster=cluster)
        )

    def allow_queries(self, workspace: IQueryableWorkspace) -> None:
        """Let the operator query ``workspace`` (once per workspace)."""
        key = workspace.node.path if isinstance(workspace, Construct) else workspace.workspace_arn
        if key not in self._workspaces:
            self._workspaces.add(key)
            workspace.grant_query(self.role)
