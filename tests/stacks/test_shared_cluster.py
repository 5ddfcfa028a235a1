"""One GPU EKS cluster shared by every EKS workload of a profile: each workload's own objects
(node groups, namespace, service account and role, FSx claim, Kueue queues) in its own stack,
every per-node agent on every node group whatever its taints, Kueue objects valid for the
pinned Kueue and its webhooks kept away from system pods."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fm_constructs import kubernetes as k8s
from fm_constructs.config import Orchestrator
from fm_constructs.domain import names
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration.eks_metrics_sources import NODE_EXPORTER
from tests.iam_policies import Templates, identity_allows, role_statements
from tests.kubernetes_schemas import SchemaError, assert_valid
from tests.stacks.profiles import ROOT, profile_params, synthesize

#: An ACM certificate of the profiles' Region (us-east-1).
CERTIFICATE = "arn:aws:acm:us-east-1:111122223333:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"

KUEUE_KINDS = ("ResourceFlavor", "ClusterQueue", "LocalQueue")
#: Charts and add-ons that run one pod per node (device plugins, exporters, health agents).
NODE_AGENT_CHARTS = (
    charts.NVIDIA_DEVICE_PLUGIN.release,
    charts.NEURON_DEVICE_PLUGIN.release,
    charts.EFA_DEVICE_PLUGIN.release,
    charts.DCGM_EXPORTER.release,
    NODE_EXPORTER.release,
)


def _resources(template: dict[str, Any], kind: str) -> Iterator[dict[str, Any]]:
    for resource in template.get("Resources", {}).values():
        if resource["Type"] == kind:
            yield resource["Properties"]


def _manifests(template: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Kubernetes objects of a template's manifests that hold no deploy-time values."""
    for props in _resources(template, "Custom::AWSCDK-EKS-KubernetesResource"):
        if isinstance(props["Manifest"], str):
            yield from json.loads(props["Manifest"])


def _all_manifests(profile: str) -> list[dict[str, Any]]:
    result = synthesize(profile)
    return [m for t in result.templates.values() for m in _manifests(t)]


def _tolerates(tolerations: list[dict[str, Any]], key: str, value: str, effect: str) -> bool:
    """Kubernetes toleration matching (``core/v1`` Toleration semantics)."""
    for t in tolerations:
        if t.get("effect") not in (None, "", effect):
            continue
        if t.get("operator") == "Exists" and t.get("key") in (None, "", key):
            return True
        if (
            t.get("operator", "Equal") == "Equal"
            and t.get("key") == key
            and t.get("value") == value
        ):
            return True
    return False


def _node_agent_tolerations(template: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for props in _resources(template, "Custom::AWSCDK-EKS-HelmChart"):
        if props["Release"] not in NODE_AGENT_CHARTS:
            continue
        values = json.loads(props["Values"])
        if props["Release"] == charts.NEURON_DEVICE_PLUGIN.release:
            values = values["devicePlugin"]
        found[props["Release"]] = values.get("tolerations", [])
    for props in _resources(template, "Custom::AWSCDK-EKS-KubernetesResource"):
        manifest = props["Manifest"]
        if isinstance(manifest, str):
            for obj in json.loads(manifest):
                if obj["kind"] == "DaemonSet":
                    pod = obj["spec"]["template"]["spec"]
                    found[f"daemonset/{obj['metadata']['name']}"] = pod.get("tolerations", [])
            continue
        # Objects with deploy-time values: read each DaemonSet's tolerations from the text.
        text = "".join(p for p in manifest["Fn::Join"][1] if isinstance(p, str))
        for match in re.finditer(
            r'"kind":"DaemonSet","metadata":\{"name":"([^"]+)".*?"tolerations":(\[.*?\])', text
        ):
            found[f"daemonset/{match[1]}"] = json.loads(match[2])
    for props in _resources(template, "AWS::EKS::Addon"):
        if props["AddonName"] == "eks-node-monitoring-agent":
            config = json.loads(props.get("ConfigurationValues") or "{}")
            for daemon_set in ("nodeAgent", "dcgmAgent"):
                found[f"node-monitoring-agent/{daemon_set}"] = config.get(daemon_set, {}).get(
                    "tolerations", []
                )
    return found


# ------------------------------------------------------------------------------ one cluster


@pytest.mark.xdist_group("default")
def test_default_profile_has_exactly_one_eks_cluster() -> None:
    result = synthesize("default")
    clusters = [
        (stack, props)
        for stack, t in result.templates.items()
        for props in _resources(t, "AWS::EKS::Cluster")
    ]
    assert [stack for stack, _ in clusters] == ["fm-cluster"]
    workloads = {w for w, o in result.stacks.options.workloads.items() if o.on_eks}
    assert workloads == {"pretraining", "post_training", "inference"}
    assert set(result.stacks.options.clusters) == {"shared"}


@pytest.mark.parametrize("profile", profile_params())
def test_every_eks_workload_owns_its_objects(profile: str) -> None:
    result = synthesize(profile)
    cluster_objects = {
        (m["kind"], m["metadata"]["name"])
        for stack in (*result.stacks.clusters.values(), *result.stacks.cluster_addons.values())
        for m in _manifests(result.templates[stack.stack_name])
    }
    for workload, compute in result.stacks.computes.items():
        template = result.templates[compute.stack_name]
        namespace = names.workload_namespace(workload)
        objects = {(m["kind"], m["metadata"]["name"]): m for m in _manifests(template)}
        labels = objects[("Namespace", namespace)]["metadata"]["labels"]
        assert labels[names.KUEUE_MANAGED_LABEL] == "true"
        account = objects[("ServiceAccount", names.service_account_name(workload))]
        assert account["metadata"]["namespace"] == namespace
        associations = {
            (a["Namespace"], a["ServiceAccount"])
            for a in _resources(template, "AWS::EKS::PodIdentityAssociation")
        }
        assert (namespace, names.service_account_name(workload)) in associations
        queue = objects[("ClusterQueue", names.cluster_queue_name(workload))]
        assert queue["spec"]["cohortName"] == names.KUEUE_COHORT
        local = objects[("LocalQueue", names.local_queue_name(workload))]
        assert local["metadata"]["namespace"] == namespace
        assert local["spec"]["clusterQueue"] == names.cluster_queue_name(workload)
        pools = result.stacks.options.workloads[workload].node_pools
        own = [line["name"] for line in queue["spec"]["resourceGroups"][0]["flavors"]]
        assert own[: len(pools)] == [p.flavor for p in pools]
        for pool in pools:
            assert ("ResourceFlavor", pool.flavor) in cluster_objects
        node_groups = len(list(_resources(template, "AWS::EKS::Nodegroup")))
        assert node_groups == sum(p.node_groups for p in pools)
        if result.profile.workloads_by_name[workload].storage.enabled:
            claims = [
                props
                for props in _resources(template, "Custom::AWSCDK-EKS-KubernetesResource")
                if "PersistentVolumeClaim" in json.dumps(props["Manifest"])
            ]
            assert len(claims) == 1
            rendered = json.dumps(claims[0]["Manifest"])
            assert f'\\"name\\":\\"{names.fsx_claim_name(workload)}\\"' in rendered
            assert f'\\"namespace\\":\\"{namespace}\\"' in rendered
            assert f"{namespace}-{names.fsx_claim_name(workload)}" in rendered


@pytest.mark.xdist_group("default")
def test_queue_quota_is_the_node_group_capacity() -> None:
    """pre-training: 4 x p5.48xlarge = 32 H100, 128 EFA interfaces, 768 vCPUs, 8 TiB, and
    the huge pages of one whole-node training pod per node."""
    objects = {(m["kind"], m["metadata"]["name"]): m for m in _all_manifests("default")}
    queue = objects[("ClusterQueue", "pretraining")]["spec"]
    (group,) = queue["resourceGroups"]
    own = group["flavors"][0]
    assert own["name"] == "pretraining-gpu"
    quota = {r["name"]: r["nominalQuota"] for r in own["resources"]}
    assert quota == {
        "cpu": 768,
        "memory": "8192Gi",
        "nvidia.com/gpu": 32,
        "aws.amazon.com/neuron": 0,
        "vpc.amazonaws.com/efa": 128,
        "hugepages-2Mi": "20480Mi",
    }
    # The other training pools are borrowable (quota 0); serving capacity is not lent.
    lines = {f["name"] for f in group["flavors"][1:]}
    assert lines == {"post-training-gpu", "post-training-rollout"}
    assert queue["preemption"] == {
        "reclaimWithinCohort": "Any",
        "borrowWithinCohort": {"policy": "Never"},
        "withinClusterQueue": "LowerPriority",
    }
    serving = objects[("ClusterQueue", "inference")]["spec"]["resourceGroups"][0]["flavors"][0]
    assert all(r["lendingLimit"] == 0 for r in serving["resources"])


@pytest.mark.parametrize("profile", profile_params())
def test_workload_and_kueue_objects_match_their_schemas(profile: str) -> None:
    """Namespaces, service accounts and queues against the Kubernetes version's schemas and
    the pinned Kueue CRDs, unknown fields being errors."""
    result = synthesize(profile)
    objects = [
        m
        for template in result.templates.values()
        for m in _manifests(template)
        if m["kind"] in ("Namespace", "ServiceAccount", *KUEUE_KINDS)
    ]
    if not result.stacks.clusters:
        assert not objects
        return
    how = assert_valid(objects, kubernetes_version=result.profile.platform.kubernetes_version)
    assert how.count("kueue-crd") >= 3


def test_kueue_schema_rejects_unknown_fields() -> None:
    queue = k8s.local_queue("q", namespace="n", cluster_queue_name="c")
    queue["spec"]["clusterQueu"] = "typo"
    with pytest.raises(SchemaError, match="clusterQueu"):
        assert_valid([queue], kubernetes_version="1.35")


# -------------------------------------------------------------------- per-node agents, Kueue


@pytest.mark.parametrize("profile", profile_params())
def test_every_node_agent_tolerates_every_node_group_taint(profile: str) -> None:
    result = synthesize(profile)
    agents: dict[str, list[dict[str, Any]]] = {}
    for stack in result.stacks.cluster_addons.values():
        agents.update(_node_agent_tolerations(result.templates[stack.stack_name]))
    for workload in result.stacks.workloads.values():  # dedicated HyperPod EKS clusters
        agents.update(_node_agent_tolerations(result.templates[workload.stack_name]))
    taints = [
        (t["Key"], t.get("Value", ""), t["Effect"])
        for template in result.templates.values()
        for group in _resources(template, "AWS::EKS::Nodegroup")
        for t in group.get("Taints", [])
    ]
    if not taints:
        pytest.skip("no tainted node groups in this profile")
    assert {"nvidia-device-plugin", "aws-efa-k8s-device-plugin", "dcgm-exporter"} <= set(agents)
    assert any(name.startswith("daemonset/") for name in agents), agents
    effects = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": ""}
    for agent, tolerations in agents.items():
        for key, value, effect in taints:
            assert _tolerates(tolerations, key, value, effects[effect]), (agent, key, value)


@pytest.mark.xdist_group("default")
def test_rollout_taint_is_tolerated_by_the_rollout_flavor() -> None:
    objects = {(m["kind"], m["metadata"]["name"]): m for m in _all_manifests("default")}
    flavor = objects[("ResourceFlavor", "post-training-rollout")]["spec"]
    assert flavor["nodeLabels"] == {names.NODE_POOL_LABEL: "post-training-rollout"}
    assert {
        "key": "workload-role",
        "operator": "Equal",
        "value": "rollout",
        "effect": "NoSchedule",
    } in (flavor["tolerations"])


@pytest.mark.parametrize("profile", profile_params())
def test_kueue_webhooks_see_workload_namespaces_only(profile: str) -> None:
    import yaml

    result = synthesize(profile)
    for stack in result.stacks.cluster_addons.values():
        template = result.templates[stack.stack_name]
        (kueue,) = [
            p
            for p in _resources(template, "Custom::AWSCDK-EKS-HelmChart")
            if p["Release"] == "kueue"
        ]
        config = yaml.safe_load(
            json.loads(kueue["Values"])["managerConfig"]["controllerManagerConfigYaml"]
        )
        assert config["managedJobsNamespaceSelector"] == {
            "matchLabels": {names.KUEUE_MANAGED_LABEL: "true"}
        }
        frameworks = set(config["integrations"]["frameworks"])
        assert not frameworks & {"pod", "deployment", "statefulset"}
        assert "trainer.kubeflow.org/trainjob" in frameworks
        # System namespaces never carry the label.
        for m in _manifests(template):
            if m["kind"] == "Namespace":
                assert names.KUEUE_MANAGED_LABEL not in m["metadata"].get("labels", {})


@pytest.mark.parametrize("profile", profile_params())
def test_workload_role_reaches_its_own_prefixes_only(profile: str) -> None:
    result = synthesize(profile)
    for workload, compute in result.stacks.computes.items():
        template = result.templates[compute.stack_name]
        options = result.stacks.options.workloads[workload]
        prefixes = options.data_prefixes + options.read_prefixes
        policies = [
            p
            for p in _resources(template, "AWS::IAM::Policy")
            if any("WorkloadRole" in r["Ref"] for r in p["Roles"])
        ]
        (policy,) = policies
        rendered = json.dumps(policy["PolicyDocument"])
        for prefix in prefixes:
            assert f"/{prefix}*" in rendered, (workload, prefix)
        for statement in policy["PolicyDocument"]["Statement"]:
            assert statement["Resource"] != "*", (workload, statement)


@pytest.mark.xdist_group("hyperpod-eks")
def test_hyperpod_eks_uses_the_shared_cluster() -> None:
    result = synthesize("hyperpod-eks")
    (workload,) = result.profile.enabled_workloads
    assert workload.orchestrator is Orchestrator.HYPERPOD_EKS
    hyperpod = result.templates["fm-hpe-post-training"]
    assert not list(_resources(hyperpod, "AWS::EKS::Cluster"))
    (cluster,) = list(_resources(hyperpod, "AWS::SageMaker::Cluster"))
    assert "Fn::ImportValue" in json.dumps(cluster["Orchestrator"]["Eks"]["ClusterArn"])
    assert list(_resources(result.templates["fm-hpe-cluster"], "AWS::EKS::Cluster"))


@pytest.mark.parametrize("profile", profile_params())
def test_queues_in_the_templates_are_the_plans(profile: str) -> None:
    """``fmc plan`` and the stacks read one mapping: every ClusterQueue's own flavors carry the
    quota the plan prints."""
    from fm_constructs.cli.plan import _clusters

    result = synthesize(profile)
    objects = {(m["kind"], m["metadata"]["name"]): m for m in _all_manifests(profile)}
    for cluster in _clusters(result.profile):
        for queue in cluster["queues"]:
            spec = objects[("ClusterQueue", queue["cluster_queue"])]["spec"]
            lines = {f["name"]: f for f in spec["resourceGroups"][0]["flavors"]}
            for pool in queue["pools"]:
                rendered = {
                    r["name"]: r["nominalQuota"] for r in lines[pool["flavor"]]["resources"]
                }
                assert {k: v for k, v in rendered.items() if v != 0} == pool["quota"]


def _default_deploy_timings() -> dict[str, Any]:
    """Estimated stack timings of the default profile with ``--concurrency 4``."""
    from fm_constructs.planning.deploy_time import deployment_minutes

    result = synthesize("default")
    return deployment_minutes(
        {
            s.stack_name: (result.templates[s.stack_name], [d.stack_name for d in s.dependencies])
            for s in result.stacks.all
        },
        concurrency=4,
    )


@pytest.mark.xdist_group("default")
def test_default_profile_deploys_within_30_minutes() -> None:
    """Issue 20's goal: ``cdk deploy --all --concurrency 4`` of the default profile in at most
    30 minutes (planning figures), with the workloads' nodes up before that."""
    from fm_constructs.planning.deploy_time import total_minutes

    timings = _default_deploy_timings()
    assert round(total_minutes(timings), 1) <= 30.0
    computes = [t for name, t in timings.items() if name.endswith("-compute")]
    assert computes and all(t.end < 30.0 for t in computes)
    # The scraper, the longest single resource after the control plane, must not wait for the
    # add-ons, and the nodes must not wait for the data repository associations.
    assert timings["fm-cluster-monitoring"].start == timings["fm-cluster"].end
    result = synthesize("default")
    for compute in result.stacks.computes.values():
        resources = result.templates[compute.stack_name]["Resources"]
        for logical_id, resource in resources.items():
            if resource["Type"] == "AWS::EKS::Nodegroup":
                waits_for = _dependency_closure(resources, logical_id)
                assert not any(
                    resources[d]["Type"] == "AWS::FSx::DataRepositoryAssociation" for d in waits_for
                ), (compute.stack_name, logical_id)


def _dependency_closure(resources: dict[str, Any], logical_id: str) -> set[str]:
    """Every resource of the template ``logical_id`` waits for (DependsOn, Ref, GetAtt)."""
    seen: set[str] = set()
    pending = [logical_id]
    while pending:
        resource = resources[pending.pop()]
        depends = resource.get("DependsOn", [])
        found = set(depends if isinstance(depends, list) else [depends])
        found |= set(re.findall(r'"(?:Ref|Fn::GetAtt)": \[?"([A-Za-z0-9]+)', json.dumps(resource)))
        for dependency in found & set(resources) - seen:
            seen.add(dependency)
            pending.append(dependency)
    return seen


@pytest.mark.xdist_group("default")
def test_deploy_time_figure_in_the_docs_is_current() -> None:
    """The table on the shared-cluster page is what tools/deploy_time.py computes."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "tools"))
    import deploy_time

    timings = _default_deploy_timings()
    page = (Path(__file__).parents[2] / "docs" / "operations" / "shared-cluster.md").read_text()
    (committed,) = re.findall(
        r"<!-- deploy-time:default -->\n(.*?)\n<!-- /deploy-time:default -->", page, re.S
    )
    assert committed.strip() == deploy_time.table(timings)


# -------------------------------------------------------------------- node role and IMDS


@pytest.mark.parametrize("profile", profile_params())
def test_pods_get_aws_credentials_through_pod_identity_not_the_node_role(profile: str) -> None:
    """GPU launch templates keep pods away from the metadata service (hop limit 1), so every
    pod that calls AWS needs a Pod Identity association: the FSx CSI controller, each
    workload's service account, the cluster autoscaler and KEDA where they are installed."""
    from fm_constructs.orchestration.eks_addons import FSX_CSI_CONTROLLER_SERVICE_ACCOUNT

    result = synthesize(profile)
    hop_limits: set[int] = set()
    associated: set[str] = set()
    charts_installed: set[str] = set()
    for template in result.templates.values():
        for resource in template["Resources"].values():
            props = resource.get("Properties", {})
            if resource["Type"] == "AWS::EC2::LaunchTemplate":
                options = props["LaunchTemplateData"]["MetadataOptions"]
                assert options["HttpTokens"] == "required"
                hop_limits.add(options["HttpPutResponseHopLimit"])
            elif resource["Type"] == "AWS::EKS::PodIdentityAssociation":
                associated.add(props["ServiceAccount"])
            elif resource["Type"] == "AWS::EKS::Addon":
                associated |= {
                    a["ServiceAccount"] for a in props.get("PodIdentityAssociations", [])
                }
            elif resource["Type"] == "Custom::AWSCDK-EKS-HelmChart":
                charts_installed.add(props["Release"])
    if result.stacks.computes:
        assert hop_limits == {1}
        assert FSX_CSI_CONTROLLER_SERVICE_ACCOUNT in associated
    # Every EKS node group, the system nodes included, launches from one of those templates.
    for template in result.templates.values():
        resources = template["Resources"]
        for nodegroup in _resources(template, "AWS::EKS::Nodegroup"):
            spec = nodegroup["LaunchTemplate"]
            template_id = spec["Id"]["Ref"]
            options = resources[template_id]["Properties"]["LaunchTemplateData"]
            assert options["MetadataOptions"]["HttpPutResponseHopLimit"] == 1, template_id
    for workload in result.stacks.computes:
        assert names.service_account_name(workload) in associated, workload
    if "cluster-autoscaler" in charts_installed:
        assert any("autoscaler" in sa for sa in associated), associated
    if "keda" in charts_installed:
        assert "keda-operator" in associated, associated


@pytest.mark.parametrize("profile", profile_params())
def test_node_roles_hold_only_what_the_kubelet_needs(profile: str) -> None:
    """Every EKS node role carries the worker and ECR read-only policies and nothing a pod on
    the host network could borrow: no CNI policy (the CNI has its Pod Identity role), no
    parameter reads; Session Manager shells on the system nodes, and on GPU nodes only where
    the profile turns them on (no shipped profile does). The vpc-cni add-on's aws-node
    association carries the CNI policy instead."""
    result = synthesize(profile)
    templates = Templates(result.templates)
    session_manager = {
        compute.stack_name: getattr(result.profile, name).session_manager
        for name, compute in result.stacks.computes.items()
    }
    for stack, template in result.templates.items():
        resources = template["Resources"]
        for nodegroup in _resources(template, "AWS::EKS::Nodegroup"):
            role_id = nodegroup["NodeRole"]["Fn::GetAtt"][0]
            managed = json.dumps(resources[role_id]["Properties"]["ManagedPolicyArns"])
            assert "AmazonEKSWorkerNodePolicy" in managed, role_id
            assert "AmazonEKS_CNI_Policy" not in managed, role_id
            assert "AmazonSSMManagedInstanceCore" not in managed, role_id
            found = role_statements(templates, stack, role_id)
            assert not identity_allows(found, "ssm:GetParameter", "*"), role_id
            shell = identity_allows(found, "ssmmessages:OpenDataChannel", "*")
            assert shell == session_manager.get(stack, True), (stack, role_id)
        for addon in _resources(template, "AWS::EKS::Addon"):
            if addon["AddonName"] != "vpc-cni":
                continue
            (association,) = addon["PodIdentityAssociations"]
            assert association["ServiceAccount"] == "aws-node"
            role = resources[association["RoleArn"]["Fn::GetAtt"][0]]["Properties"]
            assert "AmazonEKS_CNI_Policy" in json.dumps(role["ManagedPolicyArns"])


TRAINER = "arn:aws:iam::111122223333:role/pretraining-submitters"
RESEARCHER = "arn:aws:iam::111122223333:role/research"


@pytest.mark.xdist_group("default")
def test_profile_keys_for_node_shells_and_public_endpoint_ranges_reach_the_stacks() -> None:
    """``<workload>.session_manager`` gives that workload's GPU node role Session Manager
    shells (and no other's); ``inference.load_balancer_source_ranges`` is what the model
    endpoint's load balancer admits; ``<workload>.submitter_role_arns`` become namespace-scoped
    access entries (one per role, over all its workloads)."""
    import tomllib

    from fm_constructs.config import parse_profile
    from tests.profile_data import changed
    from tests.stacks.profiles import synthesize_profile

    data = tomllib.loads((ROOT / "config" / "default.toml").read_text(encoding="utf-8"))
    profile = parse_profile(
        changed(
            data,
            {
                "pretraining.session_manager": True,
                "inference.load_balancer": "internet-facing",
                "inference.load_balancer_source_ranges": ["203.0.113.0/24"],
                "inference.tls_certificate_arn": CERTIFICATE,
                "pretraining.submitter_role_arns": [TRAINER, RESEARCHER],
                "post_training.submitter_role_arns": [RESEARCHER],
            },
        )
    )
    result = synthesize_profile("default-shells", profile)
    templates = Templates(result.templates)
    for name, compute in result.stacks.computes.items():
        template = result.templates[compute.stack_name]
        for nodegroup in _resources(template, "AWS::EKS::Nodegroup"):
            role_id = nodegroup["NodeRole"]["Fn::GetAtt"][0]
            found = role_statements(templates, compute.stack_name, role_id)
            shell = identity_allows(found, "ssmmessages:OpenDataChannel", "*")
            assert shell == (name == "pretraining"), (name, role_id)
    stack = result.stacks.computes["inference"].stack_name
    services = [
        m
        for props in _resources(result.templates[stack], "Custom::AWSCDK-EKS-KubernetesResource")
        for m in json.loads(templates.render(stack, props["Manifest"]))
        if m["kind"] == "Service"
    ]
    assert [s["spec"]["loadBalancerSourceRanges"] for s in services] == [["203.0.113.0/24"]]
    # The internet-facing endpoint listens with TLS on 443 only, with the profile's certificate.
    (service,) = services
    assert [p["port"] for p in service["spec"]["ports"]] == [443]
    tls = service["metadata"]["annotations"]
    assert tls["service.beta.kubernetes.io/aws-load-balancer-ssl-cert"] == CERTIFICATE
    assert tls["service.beta.kubernetes.io/aws-load-balancer-ssl-ports"] == "https"
    # Job submitters: one access entry per role, edit rights in its workloads' namespaces only
    # and read rights in their privileged diagnostics namespaces (no pod of theirs there).
    entries = {
        e["PrincipalArn"]: e["AccessPolicies"]
        for template in result.templates.values()
        for e in _resources(template, "AWS::EKS::AccessEntry")
        if isinstance(e["PrincipalArn"], str)  # node roles' entries reference their roles
    }
    scopes = {
        arn: [
            (
                re.findall(r"cluster-access-policy/(\w+)", json.dumps(p["PolicyArn"]))[0],
                p["AccessScope"],
            )
            for p in policies
        ]
        for arn, policies in entries.items()
    }
    assert scopes == {
        TRAINER: [
            ("AmazonEKSEditPolicy", {"Type": "namespace", "Namespaces": ["pretraining"]}),
            (
                "AmazonEKSViewPolicy",
                {"Type": "namespace", "Namespaces": ["pretraining-diagnostics"]},
            ),
        ],
        RESEARCHER: [
            (
                "AmazonEKSEditPolicy",
                {"Type": "namespace", "Namespaces": ["post-training", "pretraining"]},
            ),
            (
                "AmazonEKSViewPolicy",
                {
                    "Type": "namespace",
                    "Namespaces": ["post-training-diagnostics", "pretraining-diagnostics"],
                },
            ),
        ],
    }
    # No submitter writes in a namespace whose Pod Security level is privileged: a pod there
    # could be root on a node (host network, host paths) and read every workload's tokens.
    privileged = {
        m["metadata"]["name"]
        for stack in result.templates
        for props in _resources(result.templates[stack], "Custom::AWSCDK-EKS-KubernetesResource")
        for m in json.loads(templates.render(stack, props["Manifest"]))
        if m["kind"] == "Namespace"
        and m["metadata"].get("labels", {}).get("pod-security.kubernetes.io/enforce")
        == "privileged"
    }
    assert privileged >= {"pretraining-diagnostics", "post-training-diagnostics"}
    for arn, granted in scopes.items():
        for policy, scope in granted:
            if policy != "AmazonEKSViewPolicy":
                assert not privileged & set(scope["Namespaces"]), (arn, policy)
