"""The inference service's argument rules called on plain arguments, without a construct or a
synthesis."""

from __future__ import annotations

from fm_constructs.rules import inference
from fm_constructs.rules.constructs import INFERENCE_SERVICE


def test_inference_service_rules() -> None:
    assert inference.service_namespace("inference") == []
    assert [(f.code, f.key) for f in inference.service_namespace("keda")] == [
        (INFERENCE_SERVICE, "namespace")
    ]
    assert inference.service_namespace("Inference")[0].allowed == (
        "must be a Kubernetes DNS label other than kube-system and keda"
    )
    assert inference.autoscaling_workspace(autoscaling=False, workspace_given=False) == []
    assert inference.autoscaling_workspace(autoscaling=True, workspace_given=True) == []
    (workspace,) = inference.autoscaling_workspace(autoscaling=True, workspace_given=False)
    assert workspace.key == "workspace"
    assert (
        inference.leader_worker_set(
            nodes_per_replica=2, multi_node=True, cluster_runs_it=True, cluster_path="S/C"
        )
        == []
    )
    (lws,) = inference.leader_worker_set(
        nodes_per_replica=2, multi_node=True, cluster_runs_it=False, cluster_path="S/C"
    )
    assert lws.message().startswith("cluster: must run LeaderWorkerSet for 2-node replicas")
