"""InferenceService on a GPU EKS cluster: manifests applied, Pod Identity, IAM scoped to the
model prefix, KEDA and its ScaledObject, warnings, bad input, cdk-nag and cfn-lint.
One App, synthesized once: "Single" (g6e.48xlarge, Deployment, queue-depth autoscaling) and
"Multi" (p5.48xlarge, LeaderWorkerSet, no autoscaling, ClusterIP)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk.assertions import Annotations, Match, Template

from fm_constructs.errors import FmValidationError
from fm_constructs.observability import PrometheusWorkspace
from fm_constructs.orchestration import EfaNodeGroup, GpuEksCluster, WorkloadOperators
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.keda import KEDA
from fm_constructs.patterns.inference import InferenceService, LoadBalancer
from fm_constructs.planning.autoscaling import AutoscalingPolicy
from fm_constructs.policy import enable_nag
from fm_constructs.storage import DataBucket
from tests.model_servers import MULTI_NODE, SINGLE_NODE
from tests.support import TEST_ENV, cfn_lint, imported_vpc

SMALL = dataclasses.replace(SINGLE_NODE, max_replicas=8)
LARGE = dataclasses.replace(MULTI_NODE, max_replicas=1)


def _vpc(stack: cdk.Stack) -> ec2.IVpc:
    return imported_vpc(stack)


def _platform(
    stack: cdk.Stack, instance_type: str, *, lws: bool, max_size: int
) -> tuple[GpuEksCluster, EfaNodeGroup, DataBucket]:
    vpc = _vpc(stack)
    cluster = GpuEksCluster(
        stack,
        "Eks",
        vpc=vpc,
        gpu_availability_zone="us-east-1a",
        operators=WorkloadOperators(kueue=False, kubeflow_trainer=False, leader_worker_set=lws),
    )
    nodes = EfaNodeGroup(
        stack,
        "Gpu",
        cluster=cluster,
        instance_type=instance_type,
        subnet=vpc.private_subnets[0],
        node_count=1,
        max_node_count=max_size,
    )
    return cluster, nodes, DataBucket(stack, "Data")


@dataclass
class Synth:
    raw: dict[str, dict[str, Any]]
    templates: dict[str, Template]
    services: dict[str, InferenceService]
    stacks: dict[str, cdk.Stack]


@pytest.fixture(scope="module")
def synth() -> Iterator[Synth]:
    app = cdk.App()
    stacks = {name: cdk.Stack(app, name, env=TEST_ENV) for name in ("Single", "Multi")}
    services: dict[str, InferenceService] = {}

    s = stacks["Single"]
    cluster, nodes, bucket = _platform(s, "g6e.48xlarge", lws=False, max_size=1)
    services["Single"] = InferenceService(
        s,
        "Llama8b",
        cluster=cluster,
        gpu_nodes=nodes,
        model=SMALL,
        data_bucket=bucket,
        autoscaling=AutoscalingPolicy(),
        workspace=PrometheusWorkspace(s, "Prometheus"),
    )

    s = stacks["Multi"]
    cluster, nodes, bucket = _platform(s, "p5.48xlarge", lws=True, max_size=2)
    services["Multi"] = InferenceService(
        s,
        "Llama405b",
        cluster=cluster,
        gpu_nodes=nodes,
        model=LARGE,
        data_bucket=bucket,
        namespace="serving",
        load_balancer=LoadBalancer.NONE,
    )

    enable_nag(app)
    assembly = app.synth()
    raw = {name: assembly.get_stack_by_name(name).template for name in stacks}
    yield Synth(
        raw=raw,
        templates={n: Template.from_json(t) for n, t in raw.items()},
        services=services,
        stacks=stacks,
    )


def _flatten(value: Any) -> str:
    """A manifest property as text, CloudFormation references replaced by a marker."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::Join" in value:
        sep, parts = value["Fn::Join"]
        return str(sep).join(_flatten(p) for p in parts)
    return "TOKEN"


def _manifests(raw: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for resource in raw["Resources"].values():
        if resource["Type"] == "Custom::AWSCDK-EKS-KubernetesResource":
            found.extend(json.loads(_flatten(resource["Properties"]["Manifest"])))
    return found


def _kind(raw: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [m for m in _manifests(raw) if m["kind"] == kind]


# ------------------------------------------------------------------------------- single node


def test_single_node_server_is_a_deployment_with_its_service_and_account(synth: Synth) -> None:
    raw = synth.raw["Single"]
    (deployment,) = _kind(raw, "Deployment")
    assert (deployment["metadata"]["name"], deployment["metadata"]["namespace"]) == (
        "llama-8b",
        "inference",
    )
    # Autoscaled: KEDA owns the replica count, a deploy must not reset it.
    assert "replicas" not in deployment["spec"]
    pod = deployment["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "llama-8b-server"
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "2"}
    assert "s3://TOKEN/models/llama-3.1-8b/" in pod["initContainers"][0]["command"][-1]
    (account,) = _kind(raw, "ServiceAccount")
    assert (account["metadata"]["name"], account["metadata"]["namespace"]) == (
        "llama-8b-server",
        "inference",
    )
    assert [n["metadata"]["name"] for n in _kind(raw, "Namespace")] == ["inference"]
    (service,) = _kind(raw, "Service")
    assert service["spec"]["type"] == "LoadBalancer"
    annotations = service["metadata"]["annotations"]
    assert annotations["service.beta.kubernetes.io/aws-load-balancer-scheme"] == "internal"


def test_pods_get_a_role_through_pod_identity(synth: Synth) -> None:
    synth.templates["Single"].has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {
            "Namespace": "inference",
            "ServiceAccount": "llama-8b-server",
            "RoleArn": {"Fn::GetAtt": [Match.string_like_regexp("Llama8bServerRole"), "Arn"]},
        },
    )
    synth.templates["Single"].has_resource_properties(
        "AWS::IAM::Role",
        {
            "AssumeRolePolicyDocument": {
                "Statement": [
                    {
                        "Action": ["sts:AssumeRole", "sts:TagSession"],
                        "Effect": "Allow",
                        "Principal": {"Service": "pods.eks.amazonaws.com"},
                    }
                ]
            },
            "Description": "Model server llama-8b: read its weights from S3",
        },
    )


def test_server_role_reads_the_model_prefix_only(synth: Synth) -> None:
    raw = synth.raw["Single"]
    (policy,) = [
        r
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and k.startswith("Llama8bServerRole")
    ]
    statements = policy["Properties"]["PolicyDocument"]["Statement"]
    by_action = {json.dumps(s["Action"]): s for s in statements}
    get = by_action['"s3:GetObject"']
    assert _flatten(get["Resource"]).endswith("/models/llama-3.1-8b/*")
    listing = by_action['"s3:ListBucket"']
    assert listing["Condition"] == {
        "StringLike": {"s3:prefix": ["models/llama-3.1-8b/", "models/llama-3.1-8b/*"]}
    }
    bucket = listing["Resource"]["Fn::GetAtt"][0]
    assert raw["Resources"][bucket]["Type"] == "AWS::S3::Bucket"
    decrypt = by_action['"kms:Decrypt"']
    assert raw["Resources"][decrypt["Resource"]["Fn::GetAtt"][0]]["Type"] == "AWS::KMS::Key"
    # ... and the endpoint's own API key, nothing else of Secrets Manager.
    key = by_action['["secretsmanager:GetSecretValue", "secretsmanager:DescribeSecret"]']
    assert raw["Resources"][key["Resource"]["Ref"]]["Type"] == "AWS::SecretsManager::Secret"
    assert len(statements) == 4


def test_endpoint_api_key_is_generated_and_reaches_only_the_serving_container(
    synth: Synth,
) -> None:
    raw = synth.raw["Single"]
    (secret_id, secret), *others = [
        (k, r) for k, r in raw["Resources"].items() if r["Type"] == "AWS::SecretsManager::Secret"
    ]
    assert not others
    generated = secret["Properties"]["GenerateSecretString"]
    assert generated["PasswordLength"] >= 32 and generated["ExcludePunctuation"] is True
    assert "SecretString" not in secret["Properties"]  # the key is never in the template
    skipped = {s["id"] for s in secret["Metadata"]["checkov"]["skip"]}
    assert skipped == {"CKV_AWS_149"}
    (deployment,) = _kind(raw, "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (fetch,) = pod["initContainers"]
    script = fetch["command"][-1]
    assert "aws secretsmanager get-secret-value --secret-id" in script
    assert "umask 077" in script
    assert {"name": "api-key", "mountPath": "/run/fm-api-key"} in fetch["volumeMounts"]
    (server,) = pod["containers"]
    assert server["command"][:2] == ["/bin/sh", "-c"]
    assert {"name": "api-key", "mountPath": "/run/fm-api-key", "readOnly": True} in server[
        "volumeMounts"
    ]
    volume = next(v for v in pod["volumes"] if v["name"] == "api-key")
    assert volume["emptyDir"]["medium"] == "Memory"
    assert secret_id  # referenced by the init container's script (resolved at deploy)


def test_keda_is_installed_with_an_operator_identity_that_queries_the_workspace(
    synth: Synth,
) -> None:
    template = synth.templates["Single"]
    template.has_resource_properties(
        "Custom::AWSCDK-EKS-HelmChart",
        {
            "Chart": "keda",
            "Release": "keda",
            "Version": KEDA.version,
            "Repository": "https://kedacore.github.io/charts",
            "Namespace": "keda",
        },
    )
    template.has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {"Namespace": "keda", "ServiceAccount": "keda-operator"},
    )
    template.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": [
                    {
                        "Action": [
                            "aps:QueryMetrics",
                            "aps:GetSeries",
                            "aps:GetLabels",
                            "aps:GetMetricMetadata",
                        ],
                        "Effect": "Allow",
                        "Resource": {"Fn::GetAtt": [Match.string_like_regexp("Prometheus"), "Arn"]},
                    }
                ]
            },
            "Roles": [{"Ref": Match.string_like_regexp("EksKedaOperatorRole")}],
        },
    )


def test_scaled_object_queries_the_workspace_with_sigv4(synth: Synth) -> None:
    raw = synth.raw["Single"]
    (scaled,) = _kind(raw, "ScaledObject")
    assert scaled["spec"]["scaleTargetRef"]["kind"] == "Deployment"
    assert (scaled["spec"]["minReplicaCount"], scaled["spec"]["maxReplicaCount"]) == (1, 8)
    metadata = scaled["spec"]["triggers"][0]["metadata"]
    assert metadata["serverAddress"] == ("https://aps-workspaces.us-east-1.TOKEN/workspaces/TOKEN")
    assert metadata["awsRegion"] == "us-east-1"
    assert "vllm:num_requests_waiting" in metadata["query"]
    (auth,) = _kind(raw, "TriggerAuthentication")
    assert auth["metadata"]["namespace"] == "inference"


def test_scaling_waits_for_keda_and_the_server(synth: Synth) -> None:
    raw = synth.raw["Single"]
    scaling = [r for k, r in raw["Resources"].items() if k.startswith("Llama8bScaling")]
    assert len(scaling) == 1
    depends = scaling[0]["DependsOn"]
    keda = next(k for k in raw["Resources"] if k.startswith("EksChartKeda"))
    assert keda in depends
    assert any(d.startswith("Llama8bServer") for d in depends)
    server = next(
        r
        for k, r in raw["Resources"].items()
        if k.startswith("Llama8bServer") and r["Type"].startswith("Custom::")
    )
    assert any(d.startswith("Llama8bPodIdentity") for d in server["DependsOn"])


def test_load_balancer_controller_makes_the_nlb_with_its_own_identity(synth: Synth) -> None:
    """A model server behind a load balancer installs the AWS Load Balancer Controller once,
    given the cluster, Region and VPC, with a Pod Identity role; the Service waits for it (and
    is deleted before it, so its finalizer removes the load balancer)."""
    raw = synth.raw["Single"]
    resources = raw["Resources"]
    (chart_id,) = [
        k
        for k, r in resources.items()
        if r["Type"] == "Custom::AWSCDK-EKS-HelmChart"
        and r["Properties"]["Chart"] == "aws-load-balancer-controller"
    ]
    chart = resources[chart_id]["Properties"]
    spec = charts.AWS_LOAD_BALANCER_CONTROLLER
    assert (chart["Repository"], chart["Version"], chart["Namespace"]) == (
        "https://aws.github.io/eks-charts",
        spec.version,
        "kube-system",
    )
    values = json.loads(_flatten(chart["Values"]))
    assert values["region"] == "us-east-1"
    assert values["vpcId"] == "vpc-0123456789abcdef0"
    assert values["clusterName"] == "TOKEN"
    assert values["serviceAccount"] == {"create": True, "name": "aws-load-balancer-controller"}
    assert values["nodeSelector"] == {"fm-constructs/workload": "system"}
    assert values["enableServiceMutatorWebhook"] is False
    assert (values["enableShield"], values["enableWaf"], values["enableWafv2"]) == (
        False,
        False,
        False,
    )
    synth.templates["Single"].has_resource_properties(
        "AWS::EKS::PodIdentityAssociation",
        {"Namespace": "kube-system", "ServiceAccount": "aws-load-balancer-controller"},
    )
    depends = resources[chart_id]["DependsOn"]
    assert any("AwsLoadBalancerControllerPodIdentity" in d for d in depends)
    server = next(
        r
        for k, r in resources.items()
        if k.startswith("Llama8bServer") and r["Type"].startswith("Custom::")
    )
    assert chart_id in server["DependsOn"]
    (service,) = _kind(raw, "Service")
    assert service["metadata"]["annotations"][
        "service.beta.kubernetes.io/aws-load-balancer-type"
    ] == ("external")
    assert service["spec"]["loadBalancerSourceRanges"] == ["10.0.0.0/16"]
    # No load balancer, no controller.
    assert not [
        r
        for r in synth.raw["Multi"]["Resources"].values()
        if r["Type"] == "Custom::AWSCDK-EKS-HelmChart"
        and r["Properties"]["Chart"] == "aws-load-balancer-controller"
    ]


def _controller_statements(raw: dict[str, Any]) -> list[dict[str, Any]]:
    (policy,) = [
        r["Properties"]
        for k, r in raw["Resources"].items()
        if r["Type"] == "AWS::IAM::Policy" and "AwsLoadBalancerControllerRole" in k
    ]
    statements: list[dict[str, Any]] = policy["PolicyDocument"]["Statement"]
    return statements


def test_load_balancer_controller_policy_is_scoped_to_its_own_nlbs(synth: Synth) -> None:
    """Only read-only calls on every resource; everything else is of this account and Region,
    network load balancers only, security-group rules in this VPC, changes and deletions only
    of what carries the controller's cluster tag; nothing of ALB, WAF, Shield, ACM, Cognito."""
    statements = _controller_statements(synth.raw["Single"])
    actions: set[str] = set()
    for statement in statements:
        assert statement["Effect"] == "Allow"
        listed = (
            statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        )
        actions |= set(listed)
        resources = (
            statement["Resource"]
            if isinstance(statement["Resource"], list)
            else [statement["Resource"]]
        )
        if resources == ["*"]:
            assert all(":Describe" in a or ":Get" in a for a in listed), listed
            continue
        for resource in resources:
            text = json.dumps(resource)
            assert TEST_ENV.account in text or "AWS::AccountId" in text, text
            assert "loadbalancer/app" not in text and "listener-rule" not in text
            if "loadbalancer/" in text or "listener/" in text:
                assert "/net/" in text, text
        mutating = [a for a in listed if a.split(":")[1].startswith(("Delete", "Modify", "Set"))]
        if mutating and "elasticloadbalancing:DeleteListener" not in listed:
            condition = json.dumps(statement.get("Condition", {}))
            assert "aws:ResourceTag/elbv2.k8s.aws/cluster" in condition, listed
        if "ec2:AuthorizeSecurityGroupIngress" in listed:
            assert "ec2:Vpc" in statement["Condition"]["ArnEquals"]
    assert not {a.split(":")[0] for a in actions} & {
        "cognito-idp",
        "acm",
        "waf-regional",
        "wafv2",
        "shield",
    }
    assert (
        not {
            "elasticloadbalancing:CreateRule",
            "elasticloadbalancing:SetWebAcl",
            "iam:GetServerCertificate",
        }
        & actions
    )
    assert {
        "elasticloadbalancing:CreateLoadBalancer",
        "elasticloadbalancing:CreateTargetGroup",
        "elasticloadbalancing:CreateListener",
        "elasticloadbalancing:RegisterTargets",
        "ec2:CreateSecurityGroup",
        "ec2:AuthorizeSecurityGroupIngress",
        "ec2:DescribeNetworkInterfaces",
    } <= actions


def test_too_small_node_group_is_warned_about(synth: Synth) -> None:
    warnings = Annotations.from_stack(synth.stacks["Single"]).find_warning(
        "*", Match.string_like_regexp("max_replicas=8 needs 2 g6e.48xlarge nodes")
    )
    assert len(warnings) == 1


# -------------------------------------------------------------------------------- multi node


def test_multi_node_server_is_a_leader_worker_set_after_the_operator(synth: Synth) -> None:
    raw = synth.raw["Multi"]
    (group,) = _kind(raw, "LeaderWorkerSet")
    assert group["metadata"]["namespace"] == "serving"
    template = group["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2
    limits = template["workerTemplate"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits == {"nvidia.com/gpu": "8"}  # the default vLLM image cannot use EFA
    assert _kind(raw, "Deployment") == []
    assert group["spec"]["replicas"] == 1  # fixed: no autoscaling owns the count
    (service,) = _kind(raw, "Service")
    assert service["spec"]["type"] == "ClusterIP"
    server = next(
        r
        for k, r in raw["Resources"].items()
        if k.startswith("Llama405bServer") and r["Type"].startswith("Custom::")
    )
    assert any(d.startswith("EksChartLws") for d in server["DependsOn"])


def test_no_autoscaling_means_no_keda(synth: Synth) -> None:
    template = synth.templates["Multi"]
    assert _kind(synth.raw["Multi"], "ScaledObject") == []
    charts = template.find_resources(
        "Custom::AWSCDK-EKS-HelmChart", {"Properties": {"Chart": "keda"}}
    )
    assert charts == {}
    template.resource_count_is("AWS::EKS::PodIdentityAssociation", 1)


# ----------------------------------------------------------------------------------- bad input


def test_bad_input_is_reported_at_once() -> None:
    app = cdk.App()
    stack = cdk.Stack(app, "Bad", env=TEST_ENV)
    cluster, nodes, bucket = _platform(stack, "p5.48xlarge", lws=False, max_size=2)
    with pytest.raises(FmValidationError) as caught:
        InferenceService(
            stack,
            "Bad",
            cluster=cluster,
            gpu_nodes=nodes,
            model=LARGE,
            data_bucket=bucket,
            namespace="Kube_System",
            autoscaling=AutoscalingPolicy(),
        )
    message = str(caught.value)
    assert "namespace: must be a Kubernetes DNS label" in message
    assert "max_replicas: must be greater than replicas (1)" in message
    assert "workspace: must be the Prometheus workspace" in message
    assert "cluster: must run LeaderWorkerSet for 2-node replicas" in message
    assert "WorkloadOperators(leader_worker_set=True)" in message


# ------------------------------------------------------------------------------------- policy


@pytest.mark.parametrize("name", ["Single", "Multi"])
def test_cfn_lint_clean(synth: Synth, name: str) -> None:
    assert cfn_lint(synth.raw[name], TEST_ENV.region) == []


def test_nag_clean(synth: Synth) -> None:
    # enable_nag fails synthesis on any unacknowledged finding; reaching here means clean.
    assert set(synth.raw) == {"Single", "Multi"}
