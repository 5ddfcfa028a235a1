"""Kubernetes Cluster Autoscaler for a GPU EKS cluster: nodes follow Pending pods.

KEDA (or a user) raises replicas; when they do not fit, the Cluster Autoscaler raises the
desired size of a managed node group, within the group's min and max, and gives idle nodes back
after ``scale_down_unneeded_time``. It only ever changes the desired size: a node group whose
min equals its max (a fixed training cluster, a Capacity Block sized to the block) is never
resized, and no group goes below its min.

Node groups are found by auto-discovery: EKS tags the Auto Scaling group of every managed node
group with ``k8s.io/cluster-autoscaler/enabled`` and ``k8s.io/cluster-autoscaler/<cluster
name>``. Scaling from zero needs a node template: recent autoscaler releases read the node
group's labels and taints with ``eks:DescribeNodegroup`` and the instance type (GPU count,
memory) from the launch template; extended resources the device plugins add (EFA interfaces)
are unknown until a node exists, so keep ``min_size`` at 1 or more for pods that request
``vpc.amazonaws.com/efa``.

Identity: EKS Pod Identity (no OIDC provider). The role may describe Auto Scaling groups,
instance types and node groups everywhere (these actions have no resource-level scope) and may
change desired capacity or terminate instances only in Auto Scaling groups tagged
``k8s.io/cluster-autoscaler/enabled=true`` and belonging to this cluster, following the
recommended policy of the autoscaler's AWS documentation
(https://github.com/kubernetes/autoscaler/blob/master/cluster-autoscaler/cloudprovider/aws/README.md).
"""

from __future__ import annotations

from typing import Any

from aws_cdk import Stack, Token
from aws_cdk import aws_iam as iam
from constructs import Construct

from fm_constructs.errors import Problems
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.eks_charts import ClusterAutoscalerSettings
from fm_constructs.orchestration.pod_identity import chart_with_identity, pod_identity_role
from fm_constructs.policy.nag_findings import acknowledge_generated_iam
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import eks as eks_rules
from fm_constructs.rules.findings import Finding

#: Expanders that need no extra configuration (``priority`` needs a priorities ConfigMap).
EXPANDERS = eks_rules.EXPANDERS
#: Read-only calls of the autoscaler (no resource-level permissions exist for them).
DESCRIBE_ACTIONS = (
    "autoscaling:DescribeAutoScalingGroups",
    "autoscaling:DescribeAutoScalingInstances",
    "autoscaling:DescribeLaunchConfigurations",
    "autoscaling:DescribeScalingActivities",
    "autoscaling:DescribeTags",
    "ec2:DescribeImages",
    "ec2:DescribeInstanceTypes",
    "ec2:DescribeLaunchTemplateVersions",
    "ec2:GetInstanceTypesFromInstanceRequirements",
    "eks:DescribeNodegroup",
)
#: Calls that change capacity, limited to this cluster's tagged Auto Scaling groups.
SCALING_ACTIONS = (
    "autoscaling:SetDesiredCapacity",
    "autoscaling:TerminateInstanceInAutoScalingGroup",
)
ENABLED_TAG = "k8s.io/cluster-autoscaler/enabled"
#: Id of the autoscaler in its cluster's add-on registry (and its construct id).
ADDON_ID = "ClusterAutoscaler"


def scaling_conditions(cluster_name: str) -> dict[str, dict[str, str]]:
    """IAM conditions scoping :data:`SCALING_ACTIONS` to this cluster's Auto Scaling groups.

    With a literal cluster name, the documented ``k8s.io/cluster-autoscaler/<name>=owned`` tag.
    A name CloudFormation generates is only known at deploy time and an IAM condition key
    cannot hold a reference, so the ``eks:cluster-name`` tag (also set by EKS on the Auto
    Scaling group of each managed node group) carries the name as a value instead.
    """
    tags = {f"aws:ResourceTag/{ENABLED_TAG}": "true"}
    if Token.is_unresolved(cluster_name):
        tags["aws:ResourceTag/eks:cluster-name"] = cluster_name
    else:
        tags[f"aws:ResourceTag/k8s.io/cluster-autoscaler/{cluster_name}"] = "owned"
    return {"StringEquals": tags}


def settings_findings(settings: ClusterAutoscalerSettings) -> list[Finding]:
    """The rule's findings on ``settings`` (an unknown expander, a malformed duration)."""
    return eks_rules.autoscaler_settings(
        expander=settings.expander,
        durations={field: getattr(settings, field) for field in eks_rules.AUTOSCALER_DURATIONS},
    )


class ClusterAutoscaler(Construct):
    """The Cluster Autoscaler chart on the system nodes of ``cluster``, with its IAM role.

    Use :meth:`enable` (one per cluster, through the cluster's add-on registry) rather than
    creating it directly. The chart is pinned (:data:`~fm_constructs.orchestration.eks_charts.
    CLUSTER_AUTOSCALER`) and the image follows the cluster's Kubernetes minor.

    Attributes: ``role`` (the autoscaler's IAM role), ``pod_identity`` (the association of that
    role with the ``kube-system/cluster-autoscaler`` service account), ``chart``, ``image_tag``
    and ``settings``.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.AUTOSCALER

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IGpuCluster,
        settings: ClusterAutoscalerSettings | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        chosen = settings or ClusterAutoscalerSettings()
        problems = Problems.of(self)
        problems.adopt(settings_findings(chosen))
        problems.adopt(
            eks_rules.autoscaler_image(
                cluster.kubernetes_version, charts.CLUSTER_AUTOSCALER_IMAGE_TAGS
            )
        )
        image_tag = charts.CLUSTER_AUTOSCALER_IMAGE_TAGS.get(cluster.kubernetes_version)
        problems.raise_if_any()
        assert image_tag is not None
        self.settings = chosen
        self.image_tag = image_tag

        self.role = pod_identity_role(
            self,
            "Role",
            description="Cluster Autoscaler (EKS Pod Identity): resize this cluster's node groups",
        )
        self.role.add_to_policy(
            iam.PolicyStatement(actions=list(DESCRIBE_ACTIONS), resources=["*"])
        )
        self.role.add_to_policy(
            iam.PolicyStatement(
                actions=list(SCALING_ACTIONS),
                resources=["*"],
                conditions=scaling_conditions(cluster.cluster_name),
            )
        )
        acknowledge_generated_iam(
            self.role,
            managed_reason="The Cluster Autoscaler role uses no AWS-managed policy.",
            wildcard_reason="Describe calls of Auto Scaling, EC2 and EKS have no resource-level "
            "permissions; SetDesiredCapacity and TerminateInstanceInAutoScalingGroup are "
            "limited by tag conditions to this cluster's Auto Scaling groups (the policy the "
            "Cluster Autoscaler's AWS documentation recommends).",
        )
        self.values: dict[str, Any] = charts.cluster_autoscaler_values(
            cluster_name=cluster.cluster_name,
            region=Stack.of(cluster.icluster).region,
            image_tag=image_tag,
            settings=chosen,
        )
        self.pod_identity, self.chart = chart_with_identity(
            self,
            cluster,
            charts.CLUSTER_AUTOSCALER,
            self.values,
            service_account=charts.CLUSTER_AUTOSCALER_SERVICE_ACCOUNT,
            role=self.role,
        )

    @classmethod
    def enable(
        cls, cluster: IGpuCluster, settings: ClusterAutoscalerSettings | None = None
    ) -> ClusterAutoscaler:
        """The cluster's autoscaler, installed on the first call (later calls return it and
        must not pass different ``settings``). Node groups with a max size above their min
        size then follow Pending pods; groups with min == max are left alone."""
        existing = cluster.addon_registry.get(ADDON_ID)
        if isinstance(existing, cls):
            problems = Problems(context="ClusterAutoscaler.enable", code=codes.AUTOSCALER)
            problems.adopt(eks_rules.autoscaler_enabled_once(settings, existing.settings))
            problems.raise_if_any()
            return existing
        return cluster.addon_registry.install(
            ADDON_ID,
            lambda scope, construct_id: cls(
                scope, construct_id, cluster=cluster, settings=settings
            ),
        )
