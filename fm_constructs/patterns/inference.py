"""Test-time compute on EKS: a vLLM model server on EFA GPU nodes, weights from S3 on the
instance store, an internal load balancer, and autoscaling on serving metrics from Prometheus.

Manifests are rendered by :mod:`fm_constructs.kubernetes.model_server` (pure Python) and
applied through the cluster's kubectl provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Annotations, RemovalPolicy, Stack, Token
from aws_cdk import aws_eks_v2 as eks
from aws_cdk import aws_iam as iam
from aws_cdk import aws_secretsmanager as secretsmanager
from constructs import Construct

from fm_constructs.domain.kinds import LoadBalancer
from fm_constructs.domain.names import NODE_POOL_LABEL
from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.kubernetes import model_server as render
from fm_constructs.observability import IPrometheusWorkspace
from fm_constructs.orchestration import EfaNodeGroup
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.cluster_interface import IGpuCluster
from fm_constructs.orchestration.keda import KedaAutoscaler
from fm_constructs.orchestration.load_balancer_controller import AwsLoadBalancerController
from fm_constructs.orchestration.network_isolation import vpc_cidrs
from fm_constructs.orchestration.pod_identity import (
    associate_pod_identity,
    pod_identity_role,
)
from fm_constructs.patterns import inference_manifests as checks
from fm_constructs.planning.autoscaling import AutoscalingPolicy
from fm_constructs.planning.serving_layout import DEFAULT_PORT, ModelServerSpec, ServingLayout
from fm_constructs.policy import acknowledge
from fm_constructs.policy.checkov import acknowledge_checkov
from fm_constructs.policy.compliance import acknowledge_compliance
from fm_constructs.policy.nag_findings import acknowledge_generated_iam
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import inference as inference_rules
from fm_constructs.storage import IDataBucket

#: Name of the TriggerAuthentication of every ScaledObject in a namespace.
#: Why the endpoint key is not rotated automatically (the compliance packs' finding).
API_KEY_ROTATION_REASON = (
    "Rotation needs the model server restarted with the new value, which Secrets Manager's "
    "rotation function cannot do; rotate by putting a new value and restarting the pods."
)
#: Why the key is encrypted with the AWS managed key of Secrets Manager.
API_KEY_KMS_REASON = (
    "Encrypted with Secrets Manager's AWS managed key: only the endpoint's pod role reads it "
    "(IAM), and a customer key would add a key policy to manage for a key of no other use."
)
TRIGGER_AUTHENTICATION = "amp-pod-identity"


def _namespace(cluster: IGpuCluster, namespace: str) -> eks.KubernetesManifest:
    """The namespace, created once per cluster and shared by every model server in it (so
    removing one server never deletes the namespace under the others)."""
    construct_id = "InferenceNamespace-" + namespace
    return cluster.addon_registry.install(
        construct_id,
        lambda scope, manifest_id: eks.KubernetesManifest(
            scope,
            manifest_id,
            cluster=cluster.icluster,
            manifest=[render.namespace_manifest(namespace)],
        ),
    )


#: The warning of an internal load balancer whose VPC's CIDR is unknown.
_NO_SOURCE_RANGES_WARNING = (
    "fm:inference-lb-source-ranges",
    "The cluster's VPC was imported without vpc_cidr_block: the internal load balancer "
    "of a model server admits any address. Pass load_balancer_source_ranges.",
)


class InferenceService(Construct):
    """Serve ``model`` with vLLM on ``gpu_nodes``, in one statement.

    * Layout from the instance catalog: a ``Deployment`` when a replica fits one node, a
      ``LeaderWorkerSet`` of whole nodes (Ray, pipeline stages over EFA) when it does not (the
      cluster needs ``WorkloadOperators(leader_worker_set=True)``).
    * Weights copied at pod start from ``s3://<data bucket>/<model_s3_prefix>`` to the NVMe
      instance store by an init container; the pods' service account gets, through EKS Pod
      Identity, read access to that prefix only (and decrypt on the bucket key).
    * ``load_balancer``: an internal Network Load Balancer by default, made by the AWS Load
      Balancer Controller (installed on the cluster with the first model server that asks for
      one: :class:`~fm_constructs.orchestration.load_balancer_controller.
      AwsLoadBalancerController`), with the serving pods as targets and a security group of its
      own admitting ``load_balancer_source_ranges`` (default: the VPC's CIDR for an internal
      load balancer; required for an internet-facing one, FM512), listening with TLS on 443
      with ``tls_certificate_arn`` (an ACM certificate; required for an internet-facing one,
      FM513), else plain HTTP on 80; see
      :func:`~fm_constructs.kubernetes.model_server.service_manifest`.
    * ``autoscaling`` with ``workspace``: KEDA scales replicas between ``model.replicas`` and
      ``model.max_replicas`` on vLLM queue depth or p90 time to first token queried from
      Managed Prometheus (the pods carry ``prometheus.io/scrape`` annotations, which the
      cluster's managed scraper collects into that workspace and the inference dashboard
      shows). Nodes follow within the node group's min and max sizes when the cluster runs
      the Cluster Autoscaler (``ClusterAutoscaler.enable``; the
      workload patterns enable it for node groups that can grow); give
      ``gpu_nodes`` a max size that holds ``max_replicas`` (a warning says when it is too
      small).
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.INFERENCE_SERVICE

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        cluster: IGpuCluster,
        gpu_nodes: EfaNodeGroup,
        model: ModelServerSpec,
        data_bucket: IDataBucket,
        namespace: str = "inference",
        load_balancer: LoadBalancer = LoadBalancer.INTERNAL,
        autoscaling: AutoscalingPolicy | None = None,
        workspace: IPrometheusWorkspace | None = None,
        namespace_manifest: eks.KubernetesManifest | None = None,
        load_balancer_source_ranges: Sequence[str] | None = None,
        tls_certificate_arn: str | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        autoscaled = autoscaling is not None and workspace is not None
        self.layout = self._plan_and_check(
            cluster,
            gpu_nodes,
            model,
            namespace=namespace,
            load_balancer=load_balancer,
            autoscaling=autoscaling,
            workspace_given=workspace is not None,
            load_balancer_source_ranges=load_balancer_source_ranges,
            tls_certificate_arn=tls_certificate_arn,
        )
        self.model = model
        self.namespace = namespace

        # -- identity: read the model prefix, nothing else ------------------------------------
        self.role = pod_identity_role(
            self,
            "ServerRole",
            description=f"Model server {model.kubernetes_name}: read its weights from S3",
            path=data_bucket.role_path,  # inside the bucket's data perimeter
        )
        self.grant = self._grant_model_read(data_bucket, model.model_s3_prefix)
        self.service_account_name = f"{model.kubernetes_name}-server"
        self.pod_identity = associate_pod_identity(
            self,
            "PodIdentity",
            cluster_name=cluster.cluster_name,
            namespace=namespace,
            service_account=self.service_account_name,
            role=self.role,
        )

        # -- the endpoint's API key: generated by Secrets Manager, read by the pods -----------
        self.api_key = self._api_key(model)

        # -- workload and endpoint ------------------------------------------------------------
        self.render_context = self._render_context(gpu_nodes, data_bucket)
        workload = render.server_workload_manifest(
            model, self.layout, self.render_context, autoscaled=autoscaled
        )
        scheme = None if load_balancer is LoadBalancer.NONE else load_balancer.value
        if load_balancer_source_ranges is None:
            load_balancer_source_ranges = _default_source_ranges(cluster, load_balancer)
        # A workload that owns its namespace passes its manifest; else one per cluster.
        self.namespace_manifest = namespace_manifest or _namespace(cluster, namespace)
        self.manifests: list[dict[str, Any]] = [
            render.service_account_manifest(self.service_account_name, namespace),
            workload,
            render.service_manifest(
                model,
                self.render_context,
                load_balancer=scheme,
                multi_node=self.layout.multi_node,
                source_ranges=load_balancer_source_ranges,
                tls_certificate_arn=tls_certificate_arn,
            ),
        ]
        self.server = self._create_server(cluster)
        self.load_balancer_controller: AwsLoadBalancerController | None = None
        if scheme is not None:
            self.load_balancer_controller = self._serve_through_load_balancer(cluster)

        # -- autoscaling on serving metrics ---------------------------------------------------
        self.autoscaler: KedaAutoscaler | None = None
        self.scaling: eks.KubernetesManifest | None = None
        if autoscaling is not None and workspace is not None:
            self._scale_on_serving_metrics(cluster, autoscaling, workspace)

        self._warn(gpu_nodes, load_balancer, self.layout)

    # ----------------------------------------------------------------------------- attributes

    @property
    def service_name(self) -> str:
        """The Kubernetes Service of the endpoint (port 80, OpenAI-compatible API)."""
        return self.model.kubernetes_name

    # ----------------------------------------------------------------------------- internals

    def _plan_and_check(
        self,
        cluster: IGpuCluster,
        gpu_nodes: EfaNodeGroup,
        model: ModelServerSpec,
        *,
        namespace: str,
        load_balancer: LoadBalancer,
        autoscaling: AutoscalingPolicy | None,
        workspace_given: bool,
        load_balancer_source_ranges: Sequence[str] | None,
        tls_certificate_arn: str | None,
    ) -> ServingLayout:
        """The serving layout of ``model`` on the node group's instance type, after the
        inference rules on the namespace, the autoscaling policy and its workspace, the
        endpoint's source ranges and TLS, and the LeaderWorkerSet a multi-node layout needs;
        every problem is raised at once."""
        problems = Problems.of(self)
        layout: ServingLayout | None = None
        try:
            layout = checks.plan_layout(model, gpu_nodes.instance_spec)
        except FmValidationError as error:
            problems.extend(error.problems)
        problems.adopt(inference_rules.service_namespace(namespace))
        if autoscaling is not None:
            problems.adopt(
                inference_rules.autoscaling_policy(
                    autoscaling.target,
                    autoscaling.polling_interval_s,
                    autoscaling.scale_down_stabilization_s,
                    model,
                )
            )
        problems.adopt(
            inference_rules.autoscaling_workspace(
                autoscaling=autoscaling is not None, workspace_given=workspace_given
            )
        )
        problems.add_findings(
            inference_rules.public_endpoint_source_ranges(
                load_balancer.value, load_balancer_source_ranges or ()
            )
        )
        problems.add_findings(
            inference_rules.endpoint_tls(
                load_balancer.value, tls_certificate_arn, Stack.of(self).region
            )
        )
        if layout is not None:
            problems.adopt(
                inference_rules.leader_worker_set(
                    nodes_per_replica=layout.nodes_per_replica,
                    multi_node=layout.multi_node,
                    cluster_runs_it=charts.LEADER_WORKER_SET.release in cluster.charts,
                    cluster_path=cluster.node.path,
                )
            )
        problems.raise_if_any()
        assert layout is not None
        return layout

    def _render_context(
        self, gpu_nodes: EfaNodeGroup, data_bucket: IDataBucket
    ) -> render.RenderContext:
        """What every manifest of the server is rendered with: namespace, service account,
        bucket, region, the API key's secret, and the node group's taint and the labels that
        select it (on a shared cluster the node pool label keeps the servers on their own
        nodes)."""
        return render.RenderContext(
            namespace=self.namespace,
            service_account=self.service_account_name,
            bucket_name=data_bucket.bucket_name,
            region=Stack.of(self).region,
            node_labels={
                key: gpu_nodes.labels[key]
                for key in (charts.WORKLOAD_LABEL, NODE_POOL_LABEL)
                if key in gpu_nodes.labels
            },
            taint_key=gpu_nodes.taint_key,
            api_key_secret_arn=self.api_key.secret_arn,
        )

    def _create_server(self, cluster: IGpuCluster) -> eks.KubernetesManifest:
        """The server's manifests (``Server``), applied after its namespace, after its Pod
        Identity association and role (pods get credentials only if the association exists
        when they are created) and, for a multi-node layout, after the LeaderWorkerSet
        chart."""
        server = eks.KubernetesManifest(
            self, "Server", cluster=cluster.icluster, manifest=self.manifests
        )
        server.node.add_dependency(self.namespace_manifest)
        server.node.add_dependency(self.pod_identity)
        server.node.add_dependency(self.role)
        if self.layout.multi_node:
            server.node.add_dependency(cluster.charts[charts.LEADER_WORKER_SET.release])
        return server

    def _serve_through_load_balancer(self, cluster: IGpuCluster) -> AwsLoadBalancerController:
        """The cluster's AWS Load Balancer Controller (installed with the first server that
        asks for one). The load balancer is the controller's: it must be running when the
        Service is created, and still running when the Service is deleted (its finalizer
        removes the load balancer and security groups, so destroying the stack leaves none
        behind)."""
        controller = AwsLoadBalancerController.enable(cluster, cluster.vpc)
        self.server.node.add_dependency(controller.chart)
        return controller

    def _scale_on_serving_metrics(
        self,
        cluster: IGpuCluster,
        autoscaling: AutoscalingPolicy,
        workspace: IPrometheusWorkspace,
    ) -> None:
        """KEDA on the cluster, allowed to query ``workspace``, and the server's
        TriggerAuthentication and ScaledObject (``Scaling``, applied after KEDA and the
        server): ``autoscaler`` and ``scaling``."""
        stack = Stack.of(self)
        self.autoscaler = KedaAutoscaler.enable(cluster)
        self.autoscaler.allow_queries(workspace)
        server_address = (
            f"https://aps-workspaces.{stack.region}.{stack.url_suffix}/workspaces/"
            f"{workspace.workspace_id}"
        )
        self.scaling = eks.KubernetesManifest(
            self,
            "Scaling",
            cluster=cluster.icluster,
            manifest=[
                render.trigger_authentication_manifest(self.namespace, TRIGGER_AUTHENTICATION),
                render.scaled_object_manifest(
                    self.model,
                    autoscaling,
                    self.render_context,
                    multi_node=self.layout.multi_node,
                    server_address=server_address,
                    authentication=TRIGGER_AUTHENTICATION,
                ),
            ],
        )
        self.scaling.node.add_dependency(self.autoscaler.chart)
        self.scaling.node.add_dependency(self.server)

    def _api_key(self, model: ModelServerSpec) -> secretsmanager.Secret:
        """A random key only this endpoint's pods may read (their init container copies it
        into a memory volume; vLLM answers its API only with ``Authorization: Bearer``)."""
        secret = secretsmanager.Secret(
            self,
            "ApiKey",
            description=f"API key of the model server {model.kubernetes_name} "
            "(Authorization: Bearer <key>)",
            generate_secret_string=secretsmanager.SecretStringGenerator(
                password_length=48, exclude_punctuation=True
            ),
            removal_policy=RemovalPolicy.DESTROY,
        )
        secret.grant_read(self.role)
        acknowledge(
            secret,
            "AwsSolutions-SMG4",
            "The key is a bearer token of one endpoint, generated once; rotating it means "
            "putting a new value and restarting the model server (docs/patterns/inference.md), "
            "which a rotation function could not do without cluster access.",
        )
        acknowledge_compliance(secret, "SecretsManagerRotationEnabled", API_KEY_ROTATION_REASON)
        acknowledge_compliance(secret, "SecretsManagerUsingKMSKey", API_KEY_KMS_REASON)
        acknowledge_checkov(secret, "CKV_AWS_149", API_KEY_KMS_REASON)
        return secret

    def _grant_model_read(self, data_bucket: IDataBucket, prefix: str) -> iam.Grant:
        """Get objects under ``prefix`` and list only that prefix (``aws s3 sync`` lists before
        it copies). The bucket's ``grant_read`` would let the server list every key of the
        bucket (datasets, checkpoints of other runs); this grant stops at the model."""
        bucket = data_bucket.bucket
        grant = iam.Grant.add_to_principal(
            grantee=self.role,
            actions=["s3:GetObject"],
            resource_arns=[bucket.arn_for_objects(f"{prefix}*")],
        )
        self.role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:ListBucket"],
                resources=[bucket.bucket_arn],
                conditions={"StringLike": {"s3:prefix": [prefix, f"{prefix}*"]}},
            )
        )
        if data_bucket.key is not None:
            data_bucket.key.grant_decrypt(self.role)
        acknowledge_generated_iam(
            self.role,
            managed_reason="The model server role uses no AWS-managed policy.",
            wildcard_reason=f"Read access is limited to the model's key prefix '{prefix}' "
            "(every object of the model is needed to serve it).",
        )
        return grant

    def _warn(
        self, gpu_nodes: EfaNodeGroup, load_balancer: LoadBalancer, layout: ServingLayout
    ) -> None:
        annotations = Annotations.of(self)
        if load_balancer is LoadBalancer.INTERNET_FACING:
            annotations.add_warning_v2(
                "fm:inference-public-endpoint",
                "The model endpoint is an internet-facing load balancer: TLS on 443, only its "
                "source ranges admitted, every request with the endpoint's API key; prefer "
                "LoadBalancer.INTERNAL unless clients outside the VPC need it.",
            )
        if self.model.port != DEFAULT_PORT:
            annotations.add_warning_v2(
                "fm:inference-metrics-port",
                f"The model server listens on {self.model.port}; the managed scraper reaches "
                f"GPU nodes on {DEFAULT_PORT} only, so open the new port to the "
                "scraper's security group or the inference dashboard stays empty.",
            )
        if not layout.node_has_nvme:
            annotations.add_warning_v2(
                "fm:inference-no-instance-store",
                f"{layout.instance_type} has no NVMe instance store; weights are copied to the "
                "root EBS volume (size it with root_volume_size_gib).",
            )
        scaling = Stack.of(self).resolve(gpu_nodes.resource.scaling_config) or {}
        max_nodes = scaling.get("maxSize")
        needed = layout.nodes_for(self.model.max_replicas)
        if isinstance(max_nodes, int) and not Token.is_unresolved(max_nodes) and needed > max_nodes:
            annotations.add_warning_v2(
                "fm:inference-node-capacity",
                f"max_replicas={self.model.max_replicas} needs {needed} {layout.instance_type} "
                f"nodes but the node group holds at most {max_nodes}; replicas beyond that stay "
                "Pending. Raise the node group's max size.",
            )


def _default_source_ranges(cluster: IGpuCluster, load_balancer: LoadBalancer) -> list[str]:
    """The addresses an endpoint admits when none are given: the VPC's CIDR for an internal
    load balancer (a warning on the cluster when an imported VPC does not know it), none
    otherwise (an internet-facing one must be given them)."""
    if load_balancer is LoadBalancer.INTERNAL:
        return vpc_cidrs(cluster, _NO_SOURCE_RANGES_WARNING)
    return []
