"""The one mapping from a profile to pattern options (shared or dedicated clusters, node
pools, Kueue quotas), and the pure Kueue renderers."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import pytest

from fm_constructs import kubernetes as k8s
from fm_constructs.catalog import get_instance_type
from fm_constructs.config import load_profile, parse_profile
from fm_constructs.config.model import WorkloadConfig
from fm_constructs.config.options import (
    SHARED_CLUSTER,
    capacity_quota,
    deployment_options,
)
from fm_constructs.domain.kinds import Orchestrator
from fm_constructs.domain.names import EFA_HUGEPAGES_2MI_MI
from fm_constructs.errors import FmValidationError
from fm_constructs.kubernetes.node_shape import HUGEPAGES_2MI
from tests import profile_data
from tests.profile_data import changed

ROOT = Path(__file__).resolve().parents[2]
BASE = changed(profile_data.BASE, profile_data.INFERENCE)


def test_default_profile_puts_every_eks_workload_on_one_cluster() -> None:
    options = deployment_options(load_profile(ROOT / "config" / "default.toml"))
    (cluster,) = options.clusters.values()
    assert cluster.key == SHARED_CLUSTER and cluster.stack_suffix == "cluster"
    assert cluster.workloads == ("pretraining", "post_training", "inference")
    assert cluster.operators == {"kueue", "kubeflow_trainer", "kuberay", "leader_worker_set"}
    post = options.workloads["post_training"]
    assert [p.flavor for p in post.node_pools] == ["post-training-gpu", "post-training-rollout"]
    rollout = post.node_pools[1]
    assert rollout.taints == (("workload-role", "rollout"),)
    assert post.namespace == "post-training"
    assert post.local_queue == "post-training-jobs"
    inference = options.workloads["inference"].node_pools[0]
    assert (inference.min_size, inference.max_size) == (2, 4)


def test_dedicated_cluster_is_a_workloads_own() -> None:
    data = copy.deepcopy(BASE)
    data["inference"]["dedicated_cluster"] = True
    options = deployment_options(parse_profile(data))
    assert set(options.clusters) == {SHARED_CLUSTER, "inference"}
    assert options.clusters["inference"].stack_suffix == "inference-cluster"
    assert options.clusters["inference"].dedicated
    assert options.workloads["inference"].cluster == "inference"
    assert options.clusters[SHARED_CLUSTER].workloads == ("pretraining",)


def test_slurm_workloads_have_no_cluster_and_cannot_ask_for_one() -> None:
    data = copy.deepcopy(BASE)
    data["pretraining"]["orchestrator"] = "hyperpod-slurm"
    options = deployment_options(parse_profile(data))
    assert options.workloads["pretraining"].cluster is None
    data["pretraining"]["dedicated_cluster"] = True
    with pytest.raises(FmValidationError, match=r"pretraining\.dedicated_cluster"):
        parse_profile(data)


def test_capacity_quota_counts_every_device_of_the_pool() -> None:
    assert capacity_quota("p5.48xlarge", 4) == {
        "cpu": 768,
        "memory": "8192Gi",
        "nvidia.com/gpu": 32,
        "vpc.amazonaws.com/efa": 128,
        "hugepages-2Mi": "20480Mi",
    }
    assert f"{EFA_HUGEPAGES_2MI_MI}Mi" == HUGEPAGES_2MI  # one figure, two floors
    trainium = capacity_quota("trn2.48xlarge", 1)
    assert "aws.amazon.com/neuron" in trainium and "nvidia.com/gpu" not in trainium


def test_cluster_queue_lists_every_covered_resource_per_flavor() -> None:
    queue = k8s.cluster_queue(
        "serving",
        namespace="inference",
        flavors=[k8s.QueueFlavor("inference-gpu", {"nvidia.com/gpu": 8}, lendable=False)],
    )
    (group,) = queue["spec"]["resourceGroups"]
    (line,) = group["flavors"]
    assert [r["name"] for r in line["resources"]] == group["coveredResources"]
    assert {r["name"]: r["nominalQuota"] for r in line["resources"]}["cpu"] == 0
    assert all(r["lendingLimit"] == 0 for r in line["resources"])
    assert queue["spec"]["namespaceSelector"] == {
        "matchLabels": {"kubernetes.io/metadata.name": "inference"}
    }
    with pytest.raises(ValueError, match="at least one flavor"):
        k8s.cluster_queue("empty", namespace="x", flavors=[])


def test_resource_flavor_tolerates_the_pool_taints() -> None:
    flavor = k8s.resource_flavor(
        k8s.Flavor("post-training-rollout", (("pool", "rollout"),), (("nvidia.com/gpu", "true"),))
    )
    assert flavor["spec"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    ]
    assert flavor["spec"]["nodeLabels"] == {"pool": "rollout"}


def _efa_catalog_nodes(w: WorkloadConfig) -> int:
    """EFA-capable nodes of ``w`` that configure LNet over EFA (FM316: HyperPod Slurm and AWS
    PCS at their node count, EKS and HyperPod EKS at their largest size), main group and
    rollout group, from the catalog."""
    clients = (
        Orchestrator.EKS,
        Orchestrator.HYPERPOD_SLURM,
        Orchestrator.PCS,
        Orchestrator.HYPERPOD_EKS,
    )
    if not w.enabled or w.orchestrator not in clients:
        return 0
    size = w.instance_count if w.orchestrator.is_slurm else w.largest_size
    groups = [(w.instance_type, size)]
    if w.rollout_group is not None:
        groups.append((w.rollout_group.instance_type, w.rollout_group.instance_count))
    return sum(n for t, n in groups if get_instance_type(t).lustre_efa_client)


def _efa_slurm_nodes(w: WorkloadConfig) -> int:
    """EFA-capable nodes of ``w`` on HyperPod Slurm or AWS PCS, from the catalog (main group
    and rollout group), to hold the options' count on the plan against."""
    if not w.enabled or not w.orchestrator.is_slurm:
        return 0
    groups = [(w.instance_type, w.instance_count)]
    if w.rollout_group is not None:
        groups.append((w.rollout_group.instance_type, w.rollout_group.instance_count))
    return sum(n for t, n in groups if get_instance_type(t).lustre_efa_client)


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("*.toml")), ids=lambda p: p.stem)
@pytest.mark.parametrize("reused", [False, True], ids=["own", "reused"])
def test_file_system_efa_clients_are_the_efa_nodes_that_mount_it(path: Path, reused: bool) -> None:
    """The Slurm nodes that mount an EFA-enabled file system over EFA, read from the plan's
    node groups: the owner's EFA nodes and a reusing post-training workload's."""
    profile = load_profile(path)
    if reused and not profile.pretraining.enabled:
        pytest.skip("nothing to reuse: pre-training is off in this profile")
    if reused:
        post = dataclasses.replace(
            profile.post_training,
            enabled=True,
            instance_type=profile.post_training.instance_type or profile.pretraining.instance_type,
            orchestrator=profile.pretraining.orchestrator,
            pcs_ami=profile.pretraining.pcs_ami,
            storage=dataclasses.replace(profile.post_training.storage, reuse_pretraining=True),
        )
        profile = dataclasses.replace(profile, post_training=post)
    pre = dataclasses.replace(
        profile.pretraining,
        storage=dataclasses.replace(profile.pretraining.storage, efa_enabled=True),
    )
    # A post-training workload's own file system has EFA too (HyperPod EKS nodes count).
    post = dataclasses.replace(
        profile.post_training,
        storage=dataclasses.replace(profile.post_training.storage, efa_enabled=True),
    )
    profile = dataclasses.replace(profile, pretraining=pre, post_training=post)
    options = deployment_options(profile)
    for w in profile.enabled_workloads:
        owner = profile.pretraining if w.reuses_pretraining_storage else w
        expected = None
        sharing = owner is profile.pretraining and profile.post_training.reuses_pretraining_storage
        if owner.storage.enabled and owner.storage.efa_enabled:
            # Every node that configures LNet over EFA shares the file system's EFA
            # connections (FM316), whichever orchestrator runs it.
            shared = _efa_catalog_nodes(owner)
            if sharing:
                shared += _efa_catalog_nodes(profile.post_training)
            if w.orchestrator.is_slurm:
                expected = shared
            elif w.orchestrator in (Orchestrator.EKS, Orchestrator.HYPERPOD_EKS):
                expected = shared or None
            if w.orchestrator is Orchestrator.HYPERPOD_EKS:
                # HyperPod EKS nodes configure LNet over EFA in OnCreate: counted, as on EKS.
                assert shared > 0, w.name
        assert options.workloads[w.name].file_system_efa_clients == expected, w.name
    if reused and profile.pretraining.orchestrator.is_slurm:
        assert options.workloads["pretraining"].file_system_efa_clients == _efa_slurm_nodes(
            profile.pretraining
        ) + _efa_slurm_nodes(profile.post_training)
