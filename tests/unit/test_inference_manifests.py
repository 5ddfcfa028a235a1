"""The vLLM manifests, rendered without synthesis: layout choice, every field, bad input."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from fm_constructs.catalog import get_instance_type
from fm_constructs.domain.kinds import ServingMetric
from fm_constructs.errors import FmValidationError
from fm_constructs.kubernetes import model_server as render
from fm_constructs.patterns.inference_manifests import plan_layout
from fm_constructs.planning.autoscaling import AutoscalingPolicy
from fm_constructs.planning.serving_layout import NODE_SHARE, VLLM_IMAGE, ModelServerSpec
from fm_constructs.rules.inference import autoscaling_policy
from tests.kubernetes_schemas import assert_valid
from tests.model_servers import MULTI_NODE, SINGLE_NODE, render_context

CTX = render_context("llama-server")
SMALL = dataclasses.replace(
    SINGLE_NODE,
    served_model_name="meta-llama/Llama-3.1-8B-Instruct",
    replicas=2,
    max_replicas=6,
    max_model_len=8192,
)
LARGE = MULTI_NODE


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod["containers"]
    assert len(containers) == 1
    return containers[0]


# ------------------------------------------------------------------------------------ layout


def test_replica_that_fits_one_node_is_single_node_with_its_share_of_the_node() -> None:
    layout = plan_layout(SMALL, get_instance_type("g6e.48xlarge"))
    assert not layout.multi_node
    assert layout.gpus_per_pod == 2
    assert layout.pods_per_node == 4
    assert layout.efa_per_pod == 0
    # 2 of 8 GPUs -> a quarter of 192 vCPUs / 1536 GiB / 4 x 1900 GB NVMe, minus headroom.
    assert layout.cpu_request == int(192 / 4 * NODE_SHARE)
    assert layout.memory_request_gib == int(1536 / 4 * NODE_SHARE)
    assert layout.model_cache_size_gib == int(4 * 1900e9 / 2**30 / 4 * NODE_SHARE)
    assert layout.nodes_for(6) == 2


def test_replica_larger_than_a_node_is_a_group_of_whole_nodes() -> None:
    p5 = get_instance_type("p5.48xlarge")
    layout = plan_layout(LARGE, p5)
    assert layout.multi_node
    assert layout.nodes_per_replica == 2
    assert layout.gpus_per_pod == 8
    # The default vLLM image has no EFA user-space stack: no EFA device is reserved.
    assert layout.efa_per_pod == 0
    assert layout.nodes_for(2) == 4


def test_an_efa_capable_image_gets_every_efa_device_and_huge_pages() -> None:
    p5 = get_instance_type("p5.48xlarge")
    spec = dataclasses.replace(LARGE, efa_image=True)
    layout = plan_layout(spec, p5)
    assert layout.efa_per_pod == p5.max_efa_interfaces == 32
    resources = render._resources(layout)
    assert resources["limits"]["vpc.amazonaws.com/efa"] == "32"
    assert resources["limits"]["hugepages-2Mi"] == resources["requests"]["hugepages-2Mi"]


@pytest.mark.parametrize(
    ("instance_type", "tensor_parallel", "pipeline", "message"),
    [
        (
            "g6e.48xlarge",
            16,
            1,
            r"tensor_parallel_size: must be at most the 8 GPUs of one "
            r"g6e\.48xlarge \(tensor parallelism stays within one node.*set "
            r"tensor_parallel_size = 8 and pipeline_parallel_size = 2",
        ),
        ("p5.48xlarge", 4, 3, r"\(12\) must fill whole p5\.48xlarge nodes \(8 GPUs each\)"),
        ("g6e.48xlarge", 3, 1, r"tensor_parallel_size x pipeline_parallel_size \(3\) must divide"),
        ("trn2.48xlarge", 1, 1, r"instance_type: must be an NVIDIA GPU type.*'trn2\.48xlarge'"),
    ],
)
def test_layouts_that_cannot_run_are_rejected_with_the_fix(
    instance_type: str, tensor_parallel: int, pipeline: int, message: str
) -> None:
    spec = dataclasses.replace(
        SMALL, tensor_parallel_size=tensor_parallel, pipeline_parallel_size=pipeline
    )
    with pytest.raises(FmValidationError, match=message):
        plan_layout(spec, get_instance_type(instance_type))


def test_every_bad_field_is_reported_at_once() -> None:
    spec = ModelServerSpec(
        model_s3_prefix="s3://bucket/models/x",
        served_model_name="bad name!",
        tensor_parallel_size=0,
        replicas=3,
        max_replicas=2,
        image="vllm/vllm-openai:latest",
        gpu_memory_utilization=1.2,
        max_model_len=0,
        port=9400,
        name="Bad_Name",
        extra_args=("--tensor-parallel-size=4",),
        startup_timeout_s=10,
    )
    with pytest.raises(FmValidationError) as caught:
        plan_layout(spec, get_instance_type("g6e.48xlarge"))
    fields = [problem.split(":", 1)[0] for problem in caught.value.problems]
    assert fields == [
        "model_s3_prefix",
        "served_model_name",
        "name",
        "tensor_parallel_size",
        "max_replicas",
        "image",
        "gpu_memory_utilization",
        "max_model_len",
        "port",
        "startup_timeout_s",
        "extra_args[0]",
    ]
    assert "got 's3://bucket/models/x'" in str(caught.value)
    assert "ending with '/'" in str(caught.value)


def test_model_cache_larger_than_the_instance_store_share_is_rejected() -> None:
    spec = dataclasses.replace(SMALL, model_cache_size_gib=100_000)
    with pytest.raises(FmValidationError, match=r"model_cache_size_gib: must fit .* got 100000"):
        plan_layout(spec, get_instance_type("g6e.48xlarge"))


def test_kubernetes_name_is_derived_from_the_served_name() -> None:
    assert SMALL.kubernetes_name == "meta-llama-llama-3-1-8b-instruct"
    assert dataclasses.replace(SMALL, name="chat").kubernetes_name == "chat"


# ------------------------------------------------------------------------------- single node


@pytest.fixture(scope="module")
def deployment() -> dict[str, Any]:
    layout = plan_layout(SMALL, get_instance_type("g6e.48xlarge"))
    return render.deployment_manifest(SMALL, layout, CTX)


def test_deployment_runs_vllm_serve_with_the_spec(deployment: dict[str, Any]) -> None:
    assert deployment["kind"] == "Deployment"
    assert deployment["metadata"]["namespace"] == "inference"
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    server = _container(pod)
    assert server["image"] == VLLM_IMAGE
    assert server["command"] == ["vllm", "serve"]
    assert server["args"] == [
        "/models/meta-llama-llama-3-1-8b-instruct",
        "--served-model-name",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--tensor-parallel-size",
        "2",
        "--pipeline-parallel-size",
        "1",
        "--gpu-memory-utilization",
        "0.9",
        "--port",
        "8080",
        "--max-model-len",
        "8192",
    ]
    assert {"name": "HF_HUB_OFFLINE", "value": "1"} in server["env"]
    assert server["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]


def test_deployment_requests_gpus_cpu_memory_and_instance_store(
    deployment: dict[str, Any],
) -> None:
    resources = _container(deployment["spec"]["template"]["spec"])["resources"]
    assert resources["limits"] == {"nvidia.com/gpu": "2"}
    assert resources["requests"]["nvidia.com/gpu"] == "2"
    assert resources["requests"]["cpu"] == "40"
    assert resources["requests"]["memory"] == "326Gi"
    assert resources["requests"]["ephemeral-storage"] == "1504Gi"
    assert "vpc.amazonaws.com/efa" not in resources["limits"]


def test_weights_are_synced_from_the_prefix_to_the_instance_store(
    deployment: dict[str, Any],
) -> None:
    pod = deployment["spec"]["template"]["spec"]
    (init,) = pod["initContainers"]
    assert init["image"] == render.AWS_CLI_IMAGE
    script = init["command"][-1]
    assert (
        'aws s3 sync "s3://data-bucket/models/llama-3.1-8b/" '
        '"/models/meta-llama-llama-3-1-8b-instruct"' in script
    )
    assert {"name": "AWS_REGION", "value": "us-east-1"} in init["env"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert volumes["model-cache"] == {"name": "model-cache", "emptyDir": {"sizeLimit": "1504Gi"}}
    assert volumes["dshm"]["emptyDir"]["medium"] == "Memory"
    mounts = {m["name"]: m for m in _container(pod)["volumeMounts"]}
    assert mounts["model-cache"]["readOnly"] is True


def test_pods_land_on_gpu_nodes_only_and_tolerate_their_taint(deployment: dict[str, Any]) -> None:
    pod = deployment["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"fm-constructs/workload": "gpu"}
    assert pod["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    ]
    assert pod["serviceAccountName"] == "llama-server"


def test_probes_hit_health_and_startup_allows_weight_loading(deployment: dict[str, Any]) -> None:
    server = _container(deployment["spec"]["template"]["spec"])
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert server[probe]["httpGet"] == {"path": "/health", "port": "http"}
    startup = server["startupProbe"]
    assert startup["periodSeconds"] * startup["failureThreshold"] == SMALL.startup_timeout_s


def test_pods_are_annotated_for_the_managed_scraper(deployment: dict[str, Any]) -> None:
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {
        "prometheus.io/scrape": "true",
        "prometheus.io/port": "8080",
        "prometheus.io/path": "/metrics",
    }


def test_rolling_update_progresses_when_the_node_group_is_full(deployment: dict[str, Any]) -> None:
    """A surge replica has no GPU to land on at the group's max size; one old replica may go
    first, or the rollout would never finish."""
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 1}


# -------------------------------------------------------------------------------- multi node


@pytest.fixture(scope="module")
def leader_worker_set() -> dict[str, Any]:
    layout = plan_layout(LARGE, get_instance_type("p5.48xlarge"))
    return render.leader_worker_set_manifest(LARGE, layout, CTX)


def test_leader_worker_set_groups_whole_nodes(leader_worker_set: dict[str, Any]) -> None:
    assert leader_worker_set["apiVersion"] == "leaderworkerset.x-k8s.io/v1"
    assert leader_worker_set["kind"] == "LeaderWorkerSet"
    template = leader_worker_set["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert leader_worker_set["spec"]["replicas"] == 1


def test_the_group_serves_in_vllms_native_multi_node_mode_without_ray(
    leader_worker_set: dict[str, Any],
) -> None:
    """vllm/config/parallel.py (ParallelConfig): with the ``mp`` executor a multi-node replica
    sets ``nnodes``, ``node_rank``, ``master_addr`` and ``master_port``; the workers run
    ``vllm serve --headless``. Recent vLLM images carry no Ray, so nothing here may need it."""
    template = leader_worker_set["spec"]["leaderWorkerTemplate"]
    leader = _container(template["leaderTemplate"]["spec"])
    worker = _container(template["workerTemplate"]["spec"])
    command = leader["command"]
    assert command[:3] == ["vllm", "serve", "/models/llama-405b"]
    joined = " ".join(command)
    assert "--tensor-parallel-size 8 --pipeline-parallel-size 2" in joined
    assert (
        "--distributed-executor-backend mp --nnodes $(LWS_GROUP_SIZE) "
        "--node-rank $(LWS_WORKER_INDEX) --master-addr $(LWS_LEADER_ADDRESS) "
        "--master-port 29501"
    ) in joined
    assert "--headless" not in command
    assert worker["command"] == [*command, "--headless"]
    assert not any("ray" in arg.lower() for arg in [*command, *worker["command"]])
    assert leader["readinessProbe"]["httpGet"]["path"] == "/health"
    assert "readinessProbe" not in worker
    assert "ports" not in worker


def test_every_group_member_gets_all_gpus_and_its_own_weights(
    leader_worker_set: dict[str, Any],
) -> None:
    template = leader_worker_set["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        pod = template[role]["spec"]
        limits = _container(pod)["resources"]["limits"]
        assert limits == {"nvidia.com/gpu": "8"}
        assert pod["initContainers"][0]["name"] == "fetch-weights"
    annotations = template["leaderTemplate"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert "annotations" not in template["workerTemplate"]["metadata"]


def test_renderers_refuse_the_other_layout() -> None:
    single = plan_layout(SMALL, get_instance_type("g6e.48xlarge"))
    multi = plan_layout(LARGE, get_instance_type("p5.48xlarge"))
    with pytest.raises(ValueError, match="single-node"):
        render.deployment_manifest(LARGE, multi, CTX)
    with pytest.raises(ValueError, match="multi-node"):
        render.leader_worker_set_manifest(SMALL, single, CTX)


def test_extra_args_reach_every_group_member_verbatim() -> None:
    spec = dataclasses.replace(LARGE, extra_args=("--chat-template", "it's {x}"))
    layout = plan_layout(spec, get_instance_type("p5.48xlarge"))
    manifest = render.leader_worker_set_manifest(spec, layout, CTX)
    template = manifest["spec"]["leaderWorkerTemplate"]
    for role in ("leaderTemplate", "workerTemplate"):
        command = _container(template[role]["spec"])["command"]
        assert command[command.index("--chat-template") + 1] == "it's {x}"


@pytest.mark.parametrize("flag", ["--nnodes", "--node-rank", "--master-addr", "--headless"])
def test_the_multi_node_flags_are_managed(flag: str) -> None:
    with pytest.raises(FmValidationError, match=flag):
        plan_layout(
            dataclasses.replace(LARGE, extra_args=(flag, "1")), get_instance_type("p5.48xlarge")
        )


# ----------------------------------------------------------------------------------- service


def test_service_is_an_internal_nlb_of_the_load_balancer_controller_with_pod_targets() -> None:
    service = render.service_manifest(
        SMALL, CTX, load_balancer="internal", multi_node=False, source_ranges=["10.0.0.0/16"]
    )
    assert service["spec"]["type"] == "LoadBalancer"
    # ip targets: the pods are registered, no node port is needed or opened.
    assert service["spec"]["allocateLoadBalancerNodePorts"] is False
    assert "externalTrafficPolicy" not in service["spec"]
    assert service["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/16"]
    prefix = "service.beta.kubernetes.io/aws-load-balancer-"
    assert service["metadata"]["annotations"] == {
        prefix + "type": "external",
        prefix + "nlb-target-type": "ip",
        prefix + "scheme": "internal",
        prefix + "healthcheck-protocol": "http",
        prefix + "healthcheck-port": "traffic-port",
        prefix + "healthcheck-path": "/health",
    }
    # The load balancer checks what the readiness probe checks.
    pod = render.deployment_manifest(
        SMALL, plan_layout(SMALL, get_instance_type("g6e.48xlarge")), CTX
    )["spec"]["template"]["spec"]
    readiness = _container(pod)["readinessProbe"]["httpGet"]
    assert readiness["path"] == render.HEALTH_PATH
    assert service["spec"]["ports"] == [
        {"name": "http", "port": 80, "targetPort": "http", "protocol": "TCP"}
    ]
    assert_valid([service], kubernetes_version="1.35")


def test_tls_endpoint_listens_on_443_with_the_certificate_and_a_tls13_policy() -> None:
    cert = "arn:aws:acm:us-east-1:111122223333:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"
    service = render.service_manifest(
        SMALL,
        CTX,
        load_balancer="internet-facing",
        multi_node=False,
        source_ranges=["203.0.113.0/24"],
        tls_certificate_arn=cert,
    )
    assert service["spec"]["ports"] == [
        {"name": "https", "port": 443, "targetPort": "http", "protocol": "TCP"}
    ]
    annotations = service["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == cert
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "https"
    policy = annotations["service.beta.kubernetes.io/aws-load-balancer-ssl-negotiation-policy"]
    assert policy == "ELBSecurityPolicy-TLS13-1-2-2021-06"
    assert_valid([service], kubernetes_version="1.35")


def test_multi_node_service_selects_leaders_and_cluster_ip_has_no_lb() -> None:
    service = render.service_manifest(LARGE, CTX, load_balancer=None, multi_node=True)
    assert service["spec"]["type"] == "ClusterIP"
    assert service["spec"]["selector"][render.ROLE_LABEL] == "leader"
    assert "annotations" not in service["metadata"]
    public = render.service_manifest(LARGE, CTX, load_balancer="internet-facing", multi_node=True)
    annotations = public["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internet-facing"
    assert "service.beta.kubernetes.io/aws-load-balancer-internal" not in annotations
    assert "loadBalancerSourceRanges" not in public["spec"]
    assert_valid([service, public], kubernetes_version="1.35")


# ------------------------------------------------------------------------------- autoscaling


def test_scaled_object_scales_the_deployment_on_queue_depth_per_replica() -> None:
    scaled = render.scaled_object_manifest(
        SMALL,
        AutoscalingPolicy(),
        CTX,
        multi_node=False,
        server_address="https://aps-workspaces.us-east-1.amazonaws.com/workspaces/ws-1",
        authentication="amp",
    )
    spec = scaled["spec"]
    assert spec["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "name": "meta-llama-llama-3-1-8b-instruct",
    }
    assert (spec["minReplicaCount"], spec["maxReplicaCount"]) == (2, 6)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == "prometheus"
    assert trigger["metricType"] == "AverageValue"
    assert trigger["authenticationRef"] == {"name": "amp"}
    assert trigger["metadata"]["awsRegion"] == "us-east-1"
    assert "identityOwner" not in trigger["metadata"]  # a TriggerAuthentication setting
    assert trigger["metadata"]["threshold"] == "8"
    assert trigger["metadata"]["query"] == (
        'sum(vllm:num_requests_waiting{namespace="inference",'
        'model_name="meta-llama/Llama-3.1-8B-Instruct"}) or vector(0)'
    )
    scale_down = spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert scale_down["stabilizationWindowSeconds"] == 600


def test_scaled_object_scales_leader_worker_sets_on_latency() -> None:
    policy = AutoscalingPolicy(metric=ServingMetric.TTFT_P90, target=1.5)
    scaled = render.scaled_object_manifest(
        LARGE, policy, CTX, multi_node=True, server_address="https://x", authentication="amp"
    )
    assert scaled["spec"]["scaleTargetRef"]["kind"] == "LeaderWorkerSet"
    (trigger,) = scaled["spec"]["triggers"]
    assert trigger["metricType"] == "Value"
    assert trigger["metadata"]["threshold"] == "1.5"
    assert trigger["metadata"]["query"].startswith(
        "histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{"
    )


def test_trigger_authentication_uses_the_operator_pod_identity() -> None:
    auth = render.trigger_authentication_manifest("inference", "amp")
    # KEDA's own identity (the operator's Pod Identity role), not the model server's.
    assert auth["spec"] == {"podIdentity": {"provider": "aws", "identityOwner": "keda"}}


def test_server_workload_is_the_layouts_kind_without_a_replica_count_when_autoscaled() -> None:
    for spec, instance, kind in (
        (SMALL, "g6e.48xlarge", "Deployment"),
        (LARGE, "p5.48xlarge", "LeaderWorkerSet"),
    ):
        layout = plan_layout(spec, get_instance_type(instance))
        fixed = render.server_workload_manifest(spec, layout, CTX, autoscaled=False)
        scaled = render.server_workload_manifest(spec, layout, CTX, autoscaled=True)
        assert fixed["kind"] == scaled["kind"] == kind
        assert fixed["spec"]["replicas"] == spec.replicas
        assert "replicas" not in scaled["spec"]
        assert {**scaled["spec"], "replicas": spec.replicas} == fixed["spec"]
        assert_valid([scaled], kubernetes_version="1.35")


def test_autoscaling_policy_problems_are_reported() -> None:
    policy = AutoscalingPolicy(target=0, polling_interval_s=5, scale_down_stabilization_s=-1)
    findings = autoscaling_policy(
        policy.target,
        policy.polling_interval_s,
        policy.scale_down_stabilization_s,
        dataclasses.replace(SMALL, max_replicas=2),
    )
    assert [f.key for f in findings] == [
        "autoscaling.target",
        "autoscaling.polling_interval_s",
        "autoscaling.scale_down_stabilization_s",
        "max_replicas",
    ]


# -------------------------------------------------------------------------------- API key

KEYED = dataclasses.replace(CTX, api_key_secret_arn="arn:aws:secretsmanager:us-east-1:1:secret:k")


@pytest.mark.parametrize("spec", [SMALL, LARGE], ids=["deployment", "leader-worker-set"])
def test_keyed_endpoint_objects_validate_and_only_the_server_mounts_the_key(
    spec: ModelServerSpec,
) -> None:
    instance = "g6e.48xlarge" if spec is SMALL else "p5.48xlarge"
    layout = plan_layout(spec, get_instance_type(instance))
    workload = render.server_workload_manifest(spec, layout, KEYED, autoscaled=False)
    assert_valid([workload], kubernetes_version="1.35")
    text = repr(workload)
    assert KEYED.api_key_secret_arn in text and "VLLM_API_KEY" in text
    if spec is SMALL:
        templates = [workload["spec"]["template"]]
    else:
        group = workload["spec"]["leaderWorkerTemplate"]
        templates = [group["leaderTemplate"], group["workerTemplate"]]
    for template in templates:
        pod = template["spec"]
        (server,) = pod["containers"]
        mounted = {m["name"] for m in server["volumeMounts"]}
        serving = "ports" in server
        assert ("api-key" in mounted) is serving, server["name"]
        assert ("VLLM_API_KEY" in repr(server["command"])) is serving, server["name"]


def test_the_serve_command_exports_the_key_to_vllm_in_a_real_shell(tmp_path: Any) -> None:
    """The wrapper run by /bin/sh (dash on Debian, as in Ubuntu-based vLLM images) with a
    stand-in ``vllm`` on PATH: the key file becomes VLLM_API_KEY, the arguments pass through
    untouched (spaces and quotes included), and the key appears in no argument."""
    import os
    import subprocess

    key = tmp_path / "key"
    key.write_text("s3cret-Key_123\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "vllm"
    fake.write_text(
        '#!/bin/sh\nprintf "key=%s\\n" "$VLLM_API_KEY"\nfor a; do printf "[%s]" "$a"; done\n'
    )
    fake.chmod(0o755)
    command = [part.replace(render.API_KEY_PATH, str(key)) for part in render.serve_command(KEYED)]
    args = ["/models/m", "--served-model-name", "a b's", "--port", "8080"]
    done = subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
    )
    assert done.stdout.splitlines() == [
        "key=s3cret-Key_123",
        "[serve][/models/m][--served-model-name][a b's][--port][8080]",
    ]
    assert render.serve_command(CTX) == ["vllm", "serve"]  # an endpoint without a key
