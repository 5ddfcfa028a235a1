"""Kueue and KubeRay as a known pair: the pinned KubeRay operator is the release the pinned Kueue
decodes RayJobs and RayClusters with.

Kueue v0.19.2 computes a RayJob's or RayCluster's pod sets (head and worker groups, their
replicas and resources) with its own copy of KubeRay's API types: ``go.mod`` requires
``github.com/ray-project/kuberay/ray-operator v1.6.2`` (``pkg/controller/jobs/rayjob`` and
``raycluster`` import ``ray-operator/apis/ray/v1``). A field the operator knows and that copy
does not is dropped when Kueue decodes the object, so Kueue would admit a shape other than the
one the operator then builds; running the operator of the same release rules that out. The
library renders no Ray objects itself (users submit them), so the pair is a pin check: bumping
either pin fails here until the other is re-checked against Kueue's go.mod at the new tag.
"""

from __future__ import annotations

from fm_constructs import pins


def test_the_pins_are_the_checked_pair() -> None:
    assert pins.chart("kueue").version == "0.19.2"
    assert pins.chart("kuberay-operator").version == "1.6.2"
