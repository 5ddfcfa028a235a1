"""EKS Pod Identity: IAM roles that Kubernetes service accounts assume, and their associations.

Every in-cluster component with AWS permissions (the FSx CSI driver, the Cluster Autoscaler,
KEDA, model servers, the HyperPod training operator) gets its role this one way, so the trust
policy is the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from constructs import Construct, IConstruct

if TYPE_CHECKING:
    from fm_constructs.orchestration.cluster_interface import IGpuCluster
    from fm_constructs.orchestration.eks_charts import HelmChartSpec


#: The service EKS Pod Identity assumes roles as.
POD_IDENTITY_SERVICE = "pods.eks.amazonaws.com"


def pod_identity_role(
    scope: Construct,
    construct_id: str,
    *,
    description: str,
    managed_policies: Sequence[iam.IManagedPolicy] = (),
    path: str | None = None,
) -> iam.Role:
    """A role that EKS Pod Identity lets a service account assume (with session tags, so
    policies can condition on the cluster, namespace and service account); ``path``: its IAM
    path (a data bucket's ``role_path``, for roles inside its data perimeter)."""
    return iam.Role(
        scope,
        construct_id,
        assumed_by=iam.ServicePrincipal(POD_IDENTITY_SERVICE).with_session_tags(),
        description=description,
        managed_policies=list(managed_policies) or None,
        path=path,
    )


#: Session tags EKS Pod Identity sets when it assumes a role (EKS user guide, "Create IAM role
#: with trust policy required by EKS Pod Identity", Setting Conditions).
NAMESPACE_TAG = "aws:RequestTag/kubernetes-namespace"
SERVICE_ACCOUNT_TAG = "aws:RequestTag/kubernetes-service-account"
CLUSTER_TAG = "aws:RequestTag/eks-cluster-name"


def restrict_trust(
    role: iam.IRole, *, namespace: str, service_account: str, cluster_name: str | None = None
) -> None:
    """Let EKS Pod Identity assume ``role`` only for ``namespace/service_account`` of the
    cluster ``cluster_name`` (any cluster when None), and the other subjects given to this
    function for the same role, each in a trust statement of its own (conditions listing
    several namespaces and service accounts would also admit their crossings). Without the
    condition, anyone who may create a Pod Identity association and pass the role binds it to
    a service account of their own."""
    cfn_role = role.node.default_child if isinstance(role, iam.Role) else None
    if not isinstance(cfn_role, iam.CfnRole):
        return
    subjects: list[tuple[str | None, str, str]] = getattr(role, "_fm_pod_identity_subjects", [])
    if (cluster_name, namespace, service_account) not in subjects:
        subjects.append((cluster_name, namespace, service_account))
    role._fm_pod_identity_subjects = subjects  # type: ignore[attr-defined]
    cfn_role.add_property_override(
        "AssumeRolePolicyDocument.Statement",
        [_trust_statement(*subject) for subject in subjects],
    )


def _trust_statement(cluster_name: str | None, namespace: str, service_account: str) -> Any:
    tags: dict[str, str] = {NAMESPACE_TAG: namespace, SERVICE_ACCOUNT_TAG: service_account}
    if cluster_name is not None:
        tags[CLUSTER_TAG] = cluster_name
    return {
        "Action": ["sts:AssumeRole", "sts:TagSession"],
        "Condition": {"StringEquals": tags},
        "Effect": "Allow",
        "Principal": {"Service": POD_IDENTITY_SERVICE},
    }


def associate_pod_identity(
    scope: Construct,
    construct_id: str,
    *,
    cluster_name: str,
    namespace: str,
    service_account: str,
    role: iam.IRole,
) -> eks.CfnPodIdentityAssociation:
    """Map ``namespace/service_account`` of the cluster to ``role``, and restrict the role's
    trust to that service account (:func:`restrict_trust`)."""
    restrict_trust(
        role, namespace=namespace, service_account=service_account, cluster_name=cluster_name
    )
    return eks.CfnPodIdentityAssociation(
        scope,
        construct_id,
        cluster_name=cluster_name,
        namespace=namespace,
        service_account=service_account,
        role_arn=role.role_arn,
    )


def start_after_credentials(
    workload: IConstruct,
    *,
    association: eks.CfnPodIdentityAssociation,
    agent: IConstruct | None,
    role: iam.IRole | None = None,
) -> None:
    """Make ``workload`` (a chart or manifest whose pods call AWS) wait for its credentials.

    The Pod Identity agent injects credentials when a pod is created, so the association, the
    role's policy (``role``, when its statements are complete at deploy time) and the agent
    add-on must exist before the pods start; a pod started earlier runs without credentials
    until it is restarted.
    """
    workload.node.add_dependency(association)
    if role is not None:
        workload.node.add_dependency(role)
    if agent is not None:
        workload.node.add_dependency(agent)


def chart_with_identity(
    scope: Construct,
    cluster: IGpuCluster,
    spec: HelmChartSpec,
    values: Mapping[str, Any],
    *,
    service_account: str,
    role: iam.IRole,
    wait_for_role: bool = True,
) -> tuple[eks.CfnPodIdentityAssociation, eks.HelmChart]:
    """The pinned chart ``spec`` whose ``service_account`` (in the chart's namespace) runs as
    ``role``: the association ``PodIdentity`` under ``scope``, then the chart (waited for),
    started after its credentials (and the role's policy, with ``wait_for_role``)."""
    association = associate_pod_identity(
        scope,
        "PodIdentity",
        cluster_name=cluster.cluster_name,
        namespace=spec.namespace,
        service_account=service_account,
        role=role,
    )
    chart = cluster.add_pinned_chart(spec, values, wait=True)
    start_after_credentials(
        chart,
        association=association,
        role=role if wait_for_role else None,
        agent=cluster.pod_identity_agent,
    )
    return association, chart
