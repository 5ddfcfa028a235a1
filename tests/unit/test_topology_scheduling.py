"""Kueue topology-aware scheduling on the EC2 network layers EKS labels nodes with."""

from __future__ import annotations

import pytest

from fm_constructs import kubernetes as k8s
from fm_constructs.catalog import get_instance_type
from fm_constructs.domain.topology import (
    HOSTNAME_LABEL,
    KUEUE_TOPOLOGY,
    PREFERRED_LEVEL,
    PREFERRED_TOPOLOGY_ANNOTATION,
    TOPOLOGY_LEVELS,
    has_instance_topology,
)
from fm_constructs.kubernetes.node_shape import WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import training_runtimes
from fm_constructs.planning.kubernetes_versions import DEFAULT_KUBERNETES_VERSION
from tests.kubernetes_schemas import SchemaError, validate_object


def test_topology_lists_the_network_layers_broadest_first_then_the_host() -> None:
    obj = k8s.topology(KUEUE_TOPOLOGY, TOPOLOGY_LEVELS)
    assert validate_object(obj, DEFAULT_KUBERNETES_VERSION) == "kueue-crd"
    levels = [level["nodeLabel"] for level in obj["spec"]["levels"]]
    assert levels[:3] == [f"topology.k8s.aws/network-node-layer-{n}" for n in (1, 2, 3)]
    # Kueue 0.16 respects node taints in topology-aware placement only with the host last
    assert levels[-1] == HOSTNAME_LABEL
    assert levels[2] == PREFERRED_LEVEL


def test_topology_schema_rejects_unknown_fields() -> None:
    obj = k8s.topology(KUEUE_TOPOLOGY, TOPOLOGY_LEVELS)
    obj["spec"]["levels"][0]["label"] = "x"
    with pytest.raises(SchemaError):
        validate_object(obj, DEFAULT_KUBERNETES_VERSION)


def test_a_topology_flavor_names_the_topology() -> None:
    flavor = k8s.Flavor(
        name="pretraining-gpu",
        node_labels=(("fm-constructs/node-pool", "pretraining-gpu"),),
        taints=(("nvidia.com/gpu", "true"),),
        topology_name=KUEUE_TOPOLOGY,
    )
    obj = k8s.resource_flavor(flavor)
    assert obj["spec"]["topologyName"] == KUEUE_TOPOLOGY
    validate_object(obj, DEFAULT_KUBERNETES_VERSION)
    plain = k8s.resource_flavor(flavor.__class__(flavor.name, flavor.node_labels, ()))
    assert "topologyName" not in plain["spec"]


@pytest.mark.parametrize(
    ("instance_type", "expected"),
    [
        ("p5.48xlarge", True),
        ("p5en.48xlarge", True),
        ("trn2.48xlarge", True),
        ("g6e.48xlarge", False),  # no instance topology: no layer labels on its nodes
    ],
)
def test_which_types_carry_network_layer_labels(instance_type: str, expected: bool) -> None:
    assert has_instance_topology(get_instance_type(instance_type)) is expected


def test_training_jobs_prefer_the_closest_network_layer_where_nodes_carry_it() -> None:
    def annotations(target: WorkloadTarget) -> list[dict[str, str]]:
        out = []
        for runtime in training_runtimes(target):
            for job in runtime["spec"]["template"]["spec"]["replicatedJobs"]:
                metadata = job["template"]["spec"]["template"].get("metadata", {})
                out.append(metadata.get("annotations", {}))
        return out

    eks = annotations(WorkloadTarget("pretraining", "p5en.48xlarge"))
    assert any(a.get(PREFERRED_TOPOLOGY_ANNOTATION) == PREFERRED_LEVEL for a in eks)
    no_topology = annotations(WorkloadTarget("inference", "g6e.48xlarge"))
    assert not any(PREFERRED_TOPOLOGY_ANNOTATION in a for a in no_topology)
    hyperpod = annotations(WorkloadTarget("pretraining", "p5.48xlarge", hyperpod=True))
    assert not any(PREFERRED_TOPOLOGY_ANNOTATION in a for a in hyperpod)
