"""Kubernetes objects of a vLLM model server, rendered as plain dicts (no aws_cdk import).

:class:`~fm_constructs.patterns.InferenceService` applies these with the cluster's kubectl
provider; keeping the rendering pure makes every field testable in milliseconds. The layout
(GPUs per pod, nodes per replica, CPU/memory/instance-store shares) comes from
:func:`fm_constructs.planning.serving_layout.plan_layout`:

* A replica needs ``tensor_parallel_size x pipeline_parallel_size`` GPUs. When they fit on one
  node it is a ``Deployment`` pod; otherwise it is a ``LeaderWorkerSet`` group of whole nodes
  running vLLM's native multi-node mode (no Ray: every pod runs ``vllm serve`` with
  ``--nnodes``, its ``--node-rank`` and the leader as ``--master-addr``; the workers run
  ``--headless``), pipeline stages across nodes.
* Weights are copied from S3 by an init container into an ``emptyDir``. EKS nodes built by
  :class:`~fm_constructs.orchestration.EfaNodeGroup` keep the kubelet directory on the NVMe
  RAID0 (nodeadm local storage), so the copy lands on the instance store without a hostPath.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from fm_constructs import pins
from fm_constructs.domain import names
from fm_constructs.domain.kinds import ServingMetric
from fm_constructs.kubernetes.node_shape import HUGEPAGES_2MI
from fm_constructs.kubernetes.objects import plain_namespace, service_account
from fm_constructs.planning.autoscaling import AutoscalingPolicy
from fm_constructs.planning.serving_layout import ModelServerSpec, ServingLayout

#: AWS CLI v2 from the AWS public ECR gallery, pinned; copies the weights at start-up.
AWS_CLI_IMAGE = pins.image("aws-cli").reference
#: Where the weights live inside the pods.
MODEL_MOUNT_PATH = "/models"
#: Port of the leader's torch.distributed store in vLLM's native multi-node mode (the default of
#: ``ParallelConfig.master_port``, vllm/config/parallel.py).
MASTER_PORT = 29501
#: Environment the LeaderWorkerSet controller sets in every pod of a group (the kubelet expands
#: ``$(NAME)`` in a container's command from it): group size, the pod's index (0 on the
#: leader) and the leader's address.
LWS_GROUP_SIZE = "$(LWS_GROUP_SIZE)"
LWS_WORKER_INDEX = "$(LWS_WORKER_INDEX)"
LWS_LEADER_ADDRESS = "$(LWS_LEADER_ADDRESS)"
#: Shared memory for NCCL and vLLM's worker processes.
SHM_SIZE = "64Gi"
#: Where the init container writes the endpoint's API key (a memory-backed volume).
API_KEY_VOLUME = "api-key"
API_KEY_DIRECTORY = "/run/fm-api-key"
API_KEY_PATH = f"{API_KEY_DIRECTORY}/key"

#: Label keys.
APP_LABEL = "app.kubernetes.io/name"
INSTANCE_LABEL = "app.kubernetes.io/instance"
COMPONENT_LABEL = "app.kubernetes.io/component"
ROLE_LABEL = "fm-constructs/role"
GPU_RESOURCE = names.NVIDIA_GPU_RESOURCE
EFA_RESOURCE = names.EFA_RESOURCE
GPU_TAINT_KEY = names.GPU_TAINT_KEY
#: Huge pages libfabric's EFA provider needs per pod (as the EKS EFA guide requests them).
EFA_HUGEPAGES = HUGEPAGES_2MI


@dataclass(frozen=True)
class RenderContext:
    """Deployment facts the manifests need besides the spec: namespace, service account, the
    bucket holding the weights, the Region (for the AWS CLI), node selection, and the Secrets
    Manager secret holding the endpoint's API key (None: an endpoint without a key)."""

    namespace: str
    service_account: str
    bucket_name: str
    region: str
    node_labels: dict[str, str]
    taint_key: str = GPU_TAINT_KEY
    api_key_secret_arn: str | None = None


def labels(spec: ModelServerSpec) -> dict[str, str]:
    return {
        APP_LABEL: "vllm",
        INSTANCE_LABEL: spec.kubernetes_name,
        COMPONENT_LABEL: "model-server",
    }


def namespace_manifest(namespace: str) -> dict[str, Any]:
    """The model servers' namespace (no labels: shared by every server of the cluster)."""
    return plain_namespace(namespace)


def service_account_manifest(name: str, namespace: str) -> dict[str, Any]:
    """Service account of the model server; its AWS identity comes from an EKS Pod Identity
    association (no annotation needed, unlike IRSA)."""
    return service_account(name, namespace)


def model_path(spec: ModelServerSpec) -> str:
    return f"{MODEL_MOUNT_PATH}/{spec.kubernetes_name}"


def _download_container(spec: ModelServerSpec, ctx: RenderContext) -> dict[str, Any]:
    """Copy the weights from S3 with the CRT transfer client (many parallel ranged GETs) and,
    for an endpoint with a key, the key from Secrets Manager into a memory-backed volume only
    the pod's containers see (never into the pod spec or the template)."""
    source = f"s3://{ctx.bucket_name}/{spec.model_s3_prefix}"
    script = (
        "set -eu; aws configure set default.s3.preferred_transfer_client crt; "
        f'aws s3 sync "{source}" "{model_path(spec)}" --only-show-errors --exact-timestamps'
    )
    mounts = [{"name": "model-cache", "mountPath": MODEL_MOUNT_PATH}]
    if ctx.api_key_secret_arn is not None:
        script += (
            f"; umask 077; aws secretsmanager get-secret-value --secret-id "
            f'"{ctx.api_key_secret_arn}" --query SecretString --output text > "{API_KEY_PATH}"'
        )
        mounts.append({"name": API_KEY_VOLUME, "mountPath": API_KEY_DIRECTORY})
    return {
        "name": "fetch-weights",
        "image": AWS_CLI_IMAGE,
        "command": ["/bin/sh", "-c", script],
        "env": [
            {"name": "AWS_REGION", "value": ctx.region},
            {"name": "HOME", "value": "/tmp"},
        ],
        "resources": {"requests": {"cpu": "4", "memory": "8Gi"}},
        "volumeMounts": mounts,
        "securityContext": {"allowPrivilegeEscalation": False},
    }


def serve_command(ctx: RenderContext) -> list[str]:
    """The command that starts ``vllm serve`` with the arguments that follow it: directly, or
    for an endpoint with a key through a shell that exports the key the init container wrote
    as ``VLLM_API_KEY`` (vLLM then answers its API only to ``Authorization: Bearer <key>``;
    ``/health`` and ``/metrics`` stay open for the probes and the scraper)."""
    if ctx.api_key_secret_arn is None:
        return ["vllm", "serve"]
    script = f'VLLM_API_KEY="$(cat {API_KEY_PATH})"; export VLLM_API_KEY; exec vllm serve "$@"'
    return ["/bin/sh", "-c", script, "vllm-serve"]


def _serve_args(spec: ModelServerSpec, layout: ServingLayout) -> list[str]:
    args = [
        model_path(spec),
        "--served-model-name",
        spec.served_model_name,
        "--tensor-parallel-size",
        str(spec.tensor_parallel_size),
        "--pipeline-parallel-size",
        str(spec.pipeline_parallel_size),
        "--gpu-memory-utilization",
        str(spec.gpu_memory_utilization),
        "--port",
        str(spec.port),
    ]
    if spec.max_model_len is not None:
        args += ["--max-model-len", str(spec.max_model_len)]
    if layout.multi_node:
        # vLLM's own multiprocessing executor across nodes (``mp`` needs ``--nnodes``): no Ray
        # in the image, no Ray cluster to form.
        args += [
            "--distributed-executor-backend",
            "mp",
            "--nnodes",
            LWS_GROUP_SIZE,
            "--node-rank",
            LWS_WORKER_INDEX,
            "--master-addr",
            LWS_LEADER_ADDRESS,
            "--master-port",
            str(MASTER_PORT),
        ]
    return args + list(spec.extra_args)


def _resources(layout: ServingLayout) -> dict[str, Any]:
    requests: dict[str, Any] = {
        "cpu": str(layout.cpu_request),
        "memory": f"{layout.memory_request_gib}Gi",
        "ephemeral-storage": f"{layout.model_cache_size_gib}Gi",
    }
    limits: dict[str, Any] = {GPU_RESOURCE: str(layout.gpus_per_pod)}
    if layout.efa_per_pod:
        limits[EFA_RESOURCE] = str(layout.efa_per_pod)
        limits[names.HUGEPAGES_2MI_RESOURCE] = EFA_HUGEPAGES
    requests.update(limits)
    return {"requests": requests, "limits": limits}


def _probes(spec: ModelServerSpec) -> dict[str, Any]:
    """Startup probe covers weight loading; readiness/liveness probe vLLM's /health."""

    def probe(period: int, failures: int) -> dict[str, Any]:
        return {
            "httpGet": {"path": "/health", "port": "http"},
            "periodSeconds": period,
            "timeoutSeconds": 5,
            "failureThreshold": failures,
        }

    return {
        "startupProbe": probe(10, max(1, spec.startup_timeout_s // 10)),
        "readinessProbe": probe(10, 3),
        "livenessProbe": probe(30, 3),
    }


def _env(multi_node: bool) -> list[dict[str, str]]:
    env = [
        {"name": "HF_HUB_OFFLINE", "value": "1"},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
        {"name": "DO_NOT_TRACK", "value": "1"},
    ]
    if multi_node:
        env.append({"name": "NCCL_DEBUG", "value": "WARN"})
    return env


def _pod_spec(
    spec: ModelServerSpec,
    layout: ServingLayout,
    ctx: RenderContext,
    container: dict[str, Any],
) -> dict[str, Any]:
    return {
        "serviceAccountName": ctx.service_account,
        "nodeSelector": dict(ctx.node_labels),
        "tolerations": [{"key": ctx.taint_key, "operator": "Exists", "effect": "NoSchedule"}],
        "terminationGracePeriodSeconds": 60,
        "initContainers": [_download_container(spec, ctx)],
        "containers": [container],
        "volumes": [
            {
                "name": "model-cache",
                "emptyDir": {"sizeLimit": f"{layout.model_cache_size_gib}Gi"},
            },
            {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}},
            *(
                [{"name": API_KEY_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}}]
                if ctx.api_key_secret_arn is not None
                else []
            ),
        ],
    }


def _server_container(
    spec: ModelServerSpec,
    layout: ServingLayout,
    ctx: RenderContext,
    *,
    name: str,
    serving: bool,
) -> dict[str, Any]:
    mounts = [
        {"name": "model-cache", "mountPath": MODEL_MOUNT_PATH, "readOnly": True},
        {"name": "dshm", "mountPath": "/dev/shm"},
    ]
    if serving and ctx.api_key_secret_arn is not None:
        mounts.append({"name": API_KEY_VOLUME, "mountPath": API_KEY_DIRECTORY, "readOnly": True})
    container: dict[str, Any] = {
        "name": name,
        "image": spec.image,
        "env": _env(layout.multi_node),
        "resources": _resources(layout),
        "volumeMounts": mounts,
    }
    if serving:
        container["ports"] = [{"name": "http", "containerPort": spec.port, "protocol": "TCP"}]
        container.update(_probes(spec))
    return container


def _pod_annotations(spec: ModelServerSpec) -> dict[str, str]:
    return {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": str(spec.port),
        "prometheus.io/path": "/metrics",
    }


def deployment_manifest(
    spec: ModelServerSpec, layout: ServingLayout, ctx: RenderContext
) -> dict[str, Any]:
    """Single-node replicas: one pod per replica, ``vllm serve`` with tensor parallelism."""
    if layout.multi_node:
        raise ValueError("deployment_manifest renders single-node layouts only")
    container = _server_container(spec, layout, ctx, name="vllm", serving=True)
    container["command"] = serve_command(ctx)
    container["args"] = _serve_args(spec, layout)
    pod_labels = labels(spec)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": spec.kubernetes_name,
            "namespace": ctx.namespace,
            "labels": pod_labels,
        },
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": pod_labels},
            # Surge onto a spare GPU node when there is one; when the node group is full the
            # surge pod stays Pending, so one old replica may go first (with maxUnavailable 0
            # the rollout would wait forever at the group's max size).
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1},
            },
            "template": {
                "metadata": {"labels": pod_labels, "annotations": _pod_annotations(spec)},
                "spec": _pod_spec(spec, layout, ctx, container),
            },
        },
    }


def leader_worker_set_manifest(
    spec: ModelServerSpec, layout: ServingLayout, ctx: RenderContext
) -> dict[str, Any]:
    """Multi-node replicas: a LeaderWorkerSet group of ``nodes_per_replica`` pods, one per node.

    Every pod runs ``vllm serve`` in vLLM's native multi-node mode: the leader (rank 0) serves
    the API, the workers (``--headless``) run their ranks and reach the leader's store at
    ``--master-addr``; no Ray runtime is needed in the image. Every pod copies the weights to
    its own instance store, since each pipeline stage loads its layers locally. A failed pod
    recreates the whole group (``RecreateGroupOnPodRestart``): a group missing a member cannot
    serve.
    """
    if not layout.multi_node:
        raise ValueError("leader_worker_set_manifest renders multi-node layouts only")
    args = _serve_args(spec, layout)
    leader = _server_container(spec, layout, ctx, name="vllm-leader", serving=True)
    leader["command"] = [*serve_command(ctx), *args]
    # Workers run their ranks only (--headless): no API, no key.
    worker = _server_container(spec, layout, ctx, name="vllm-worker", serving=False)
    worker["command"] = ["vllm", "serve", *args, "--headless"]
    base = labels(spec)
    leader_labels = {**base, ROLE_LABEL: "leader"}
    worker_labels = {**base, ROLE_LABEL: "worker"}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1",
        "kind": "LeaderWorkerSet",
        "metadata": {"name": spec.kubernetes_name, "namespace": ctx.namespace, "labels": base},
        "spec": {
            "replicas": spec.replicas,
            "startupPolicy": "LeaderCreated",
            "leaderWorkerTemplate": {
                "size": layout.nodes_per_replica,
                "restartPolicy": "RecreateGroupOnPodRestart",
                "leaderTemplate": {
                    "metadata": {"labels": leader_labels, "annotations": _pod_annotations(spec)},
                    "spec": _pod_spec(spec, layout, ctx, leader),
                },
                "workerTemplate": {
                    "metadata": {"labels": worker_labels},
                    "spec": _pod_spec(spec, layout, ctx, worker),
                },
            },
        },
    }


def server_workload_manifest(
    spec: ModelServerSpec, layout: ServingLayout, ctx: RenderContext, *, autoscaled: bool
) -> dict[str, Any]:
    """The model server's workload: a LeaderWorkerSet for a multi-node layout, else a
    Deployment. ``autoscaled``: KEDA owns the replica count, so the object carries none (a
    count in the applied object would reset the autoscaled count on every deploy; KEDA starts
    from ``minReplicaCount`` = ``replicas``)."""
    workload = (
        leader_worker_set_manifest(spec, layout, ctx)
        if layout.multi_node
        else deployment_manifest(spec, layout, ctx)
    )
    if autoscaled:
        workload["spec"].pop("replicas", None)
    return workload


#: Annotations of a Service whose Network Load Balancer the AWS Load Balancer Controller makes
#: (the in-tree cloud provider leaves ``aws-load-balancer-type: external`` Services alone).
LB_ANNOTATION = "service.beta.kubernetes.io/aws-load-balancer-"
#: The NLB security policy of a TLS endpoint: TLS 1.3 and 1.2 with forward secrecy only (the
#: policy Elastic Load Balancing recommends for TLS listeners).
TLS_POLICY = "ELBSecurityPolicy-TLS13-1-2-2021-06"
#: vLLM's health endpoint, which the load balancer checks on each pod.
HEALTH_PATH = "/health"


def service_manifest(
    spec: ModelServerSpec,
    ctx: RenderContext,
    *,
    load_balancer: str | None,
    multi_node: bool,
    source_ranges: Sequence[str] = (),
    tls_certificate_arn: str | None = None,
) -> dict[str, Any]:
    """The model's endpoint on port 80, or with ``tls_certificate_arn`` (an ACM certificate)
    on port 443 behind a TLS listener of the load balancer (TLS 1.2 and 1.3 only; the load
    balancer forwards to the pods' plain port inside the VPC).

    ``load_balancer`` "internal" or "internet-facing": a Network Load Balancer made by the AWS
    Load Balancer Controller (``aws-load-balancer-type: external``) with ``ip`` targets (the
    serving pods themselves, health-checked on :data:`HEALTH_PATH`) and a security group of its
    own that admits ``source_ranges`` (``loadBalancerSourceRanges``; empty: anywhere) on port
    80; the controller opens the server port to the pods only from the load balancer. No node
    ports are allocated (nothing reaches the pods through the nodes). None: a ClusterIP
    Service.
    """
    selector = labels(spec)
    if multi_node:
        selector = {**selector, ROLE_LABEL: "leader"}
    manifest: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": spec.kubernetes_name,
            "namespace": ctx.namespace,
            "labels": labels(spec),
        },
        "spec": {
            "selector": selector,
            "ports": [{"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}],
        },
    }
    if load_balancer is None:
        manifest["spec"]["type"] = "ClusterIP"
        return manifest
    if load_balancer not in ("internal", "internet-facing"):
        raise ValueError(
            f"load_balancer must be 'internal' or 'internet-facing', got {load_balancer!r}"
        )
    manifest["metadata"]["annotations"] = {
        LB_ANNOTATION + "type": "external",
        LB_ANNOTATION + "nlb-target-type": "ip",
        LB_ANNOTATION + "scheme": load_balancer,
        LB_ANNOTATION + "healthcheck-protocol": "http",
        LB_ANNOTATION + "healthcheck-port": "traffic-port",
        LB_ANNOTATION + "healthcheck-path": HEALTH_PATH,
    }
    manifest["spec"]["type"] = "LoadBalancer"
    manifest["spec"]["allocateLoadBalancerNodePorts"] = False
    if source_ranges:
        manifest["spec"]["loadBalancerSourceRanges"] = list(source_ranges)
    if tls_certificate_arn is not None:
        manifest["spec"]["ports"] = [
            {"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}
        ]
        manifest["metadata"]["annotations"].update(
            {
                LB_ANNOTATION + "ssl-cert": tls_certificate_arn,
                LB_ANNOTATION + "ssl-ports": "https",
                LB_ANNOTATION + "ssl-negotiation-policy": TLS_POLICY,
            }
        )
    return manifest


def metric_query(spec: ModelServerSpec, metric: ServingMetric, namespace: str) -> str:
    """PromQL returning one number for KEDA: total waiting requests, or p90 TTFT (seconds)."""
    selector = f'namespace="{namespace}",model_name="{spec.served_model_name}"'
    if metric is ServingMetric.QUEUE_DEPTH:
        return f"sum(vllm:num_requests_waiting{{{selector}}}) or vector(0)"
    return (
        "histogram_quantile(0.9, sum by (le) "
        f"(rate(vllm:time_to_first_token_seconds_bucket{{{selector}}}[2m]))) or vector(0)"
    )


def trigger_authentication_manifest(namespace: str, name: str) -> dict[str, Any]:
    """KEDA authenticates to Amazon Managed Prometheus with its own operator identity (EKS Pod
    Identity, SigV4): ``podIdentity.identityOwner: keda`` (the other choice, ``workload``, would
    use the model server's role, which may not query the workspace)."""
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "TriggerAuthentication",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"podIdentity": {"provider": "aws", "identityOwner": "keda"}},
    }


def scaled_object_manifest(
    spec: ModelServerSpec,
    policy: AutoscalingPolicy,
    ctx: RenderContext,
    *,
    multi_node: bool,
    server_address: str,
    authentication: str,
) -> dict[str, Any]:
    """KEDA ScaledObject scaling the Deployment (or the LeaderWorkerSet, through its scale
    subresource: one unit is a whole multi-node group) between ``replicas`` and
    ``max_replicas`` on ``policy.metric``."""
    target = (
        {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"}
        if multi_node
        else {"apiVersion": "apps/v1", "kind": "Deployment"}
    )
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {
            "name": spec.kubernetes_name,
            "namespace": ctx.namespace,
            "labels": labels(spec),
        },
        "spec": {
            "scaleTargetRef": {**target, "name": spec.kubernetes_name},
            "minReplicaCount": spec.replicas,
            "maxReplicaCount": spec.max_replicas,
            "pollingInterval": policy.polling_interval_s,
            "advanced": {
                "horizontalPodAutoscalerConfig": {
                    "behavior": {
                        "scaleDown": {
                            "stabilizationWindowSeconds": policy.scale_down_stabilization_s,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}],
                        },
                        "scaleUp": {
                            "stabilizationWindowSeconds": 0,
                            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
                        },
                    }
                }
            },
            "triggers": [
                {
                    "type": "prometheus",
                    "metricType": "AverageValue"
                    if policy.metric is ServingMetric.QUEUE_DEPTH
                    else "Value",
                    "authenticationRef": {"name": authentication},
                    "metadata": {
                        "serverAddress": server_address,
                        "awsRegion": ctx.region,
                        "query": metric_query(spec, policy.metric, ctx.namespace),
                        "threshold": _number(policy.target),
                        "ignoreNullValues": "true",
                    },
                }
            ],
        },
    }


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
