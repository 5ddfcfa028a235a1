"""Kueue and Kubeflow Trainer as a known pair: the pinned Kueue admits TrainJobs with the pod
sets the pinned Trainer then creates.

Kueue v0.19.2 computes a TrainJob's pod sets with its own copy of Trainer: ``go.mod`` requires
``github.com/kubeflow/trainer/v2 v2.2.1``, and ``pkg/controller/jobs/trainjob/
trainjob_controller.go`` (``getChildJobSet``) decodes the TrainingRuntime into Trainer v2.2.1's
types, runs its ``RuntimeInfo`` and copies each pod set's count into the replicated job of the
same index. The Trainer controller pinned here is 2.3.0, which differs on the two points that
matter:

* pod counts (kubeflow/trainer #3651, in v2.3.0): the count is copied into the replicated job
  of the same *name* (``pkg/runtime/framework/plugins/jobset/jobset.go`` ``SyncParallelCount``).
  In v2.2.1 the pod sets are built by one loop over the template's replicated jobs, in their
  order (``pkg/runtime/core/trainingruntime.go`` ``RuntimeInfo``), so index and name match
  for every runtime; the counts themselves (numNodes on the ``trainer`` ancestor, the MPI
  plugin's launcher and node split) are the same code in both tags (only a nil guard added).
* the MPI SSH volume (#3649, in v2.3.0): mode and defaultMode of the Secret items; Kueue does
  not count volumes.

What the pair could still disagree on is a field Trainer 2.3.0 knows and v2.2.1 does not: Kueue
would drop it when it decodes the runtime and admit a different shape. So every runtime and
TrainJob the library renders must also be valid, unknown fields refused, against the v2.2.1
CRDs (tests/data/crds/trainer-v2.2.1.json, from the v2.2.1 tag's manifests/base/crds).
Bumping either pin fails :func:`test_the_pins_are_the_checked_pair` until this is re-checked.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from fm_constructs import pins
from fm_constructs.kubernetes import jobs
from fm_constructs.kubernetes.node_shape import WorkloadTarget
from fm_constructs.kubernetes.training_runtimes import training_runtimes
from tests.kubernetes_schemas import _strict_crd

V2_2_1 = Path(__file__).parents[1] / "data" / "crds" / "trainer-v2.2.1.json"
TYPES = ["p5.48xlarge", "p5en.48xlarge", "p4d.24xlarge", "p6-b200.48xlarge"]


def test_the_pins_are_the_checked_pair() -> None:
    assert pins.chart("kueue").version == "0.19.2"
    assert pins.chart("kubeflow-trainer").version == "2.3.0"


@functools.cache
def _validator(kind: str) -> Any:
    schema = _strict_crd(json.loads(V2_2_1.read_text())["kinds"][kind])
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


@pytest.mark.parametrize("instance_type", TYPES)
@pytest.mark.parametrize("hyperpod", [False, True], ids=["eks", "hyperpod"])
def test_rendered_trainer_objects_mean_the_same_to_kueues_trainer(
    instance_type: str, hyperpod: bool
) -> None:
    target = WorkloadTarget("pretraining", instance_type, hyperpod=hyperpod)
    objects = [
        *training_runtimes(target),
        jobs.nccl_tests_trainjob(target, 2),
        jobs.fsdp_trainjob(target, 2),
    ]
    for obj in objects:
        assert obj["apiVersion"] == "trainer.kubeflow.org/v1alpha1"
        _validator(obj["kind"]).validate(obj)


def test_a_field_v2_2_1_does_not_know_is_refused() -> None:
    """The check can fail: an unknown field in a replicated job's pod spec."""
    runtime = training_runtimes(WorkloadTarget("pretraining", "p5.48xlarge"))[0]
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]
    pod["template"]["spec"]["notAField"] = True
    with pytest.raises(jsonschema.ValidationError):
        _validator("TrainingRuntime").validate(runtime)
