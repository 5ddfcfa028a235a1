"""Image pins: a digest, where one is pinned, is rendered with the tag
(``repository:tag@sha256:...``) by every renderer; a pin without one says why. What the
profiles render is checked in tests/stacks/test_image_digests.py."""

from __future__ import annotations

from typing import Any

import pytest

from fm_constructs import pins
from fm_constructs.kubernetes import images as k8s_images
from fm_constructs.orchestration import eks_charts
from fm_constructs.pins import ImagePin

DIGEST = "sha256:" + "ab" * 32


def test_every_image_pin_has_a_digest_or_a_reason() -> None:
    for pin in pins.load().images.values():
        assert pin.digest or pin.digests or pin.digest_unavailable, pin.name


def test_a_pinned_digest_is_rendered_with_its_tag() -> None:
    pin = ImagePin(name="x", repository="registry.example/x", tag="v1", source="", digest=DIGEST)
    assert pin.reference == f"registry.example/x:v1@{DIGEST}"
    per_tag = ImagePin(name="y", repository="r/y", tag=None, source="", digests={"v2": DIGEST})
    assert per_tag.tag_reference("v2") == f"v2@{DIGEST}"
    assert per_tag.tag_reference("v3") == "v3"
    job_image = k8s_images.ImagePin(repository="r/z", tag="t", source="", digest=DIGEST)
    assert job_image.reference == f"r/z:t@{DIGEST}"


@pytest.mark.parametrize(
    "entry",
    [
        {"repository": "r/x", "tag": "1", "source": "s"},
        {"repository": "r/x", "tag": "1", "source": "s", "digest": "sha256:abc"},
    ],
    ids=["neither", "malformed"],
)
def test_a_pin_without_a_valid_digest_or_a_reason_is_refused(entry: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"images\.x"):
        pins._image("x", entry)


def test_the_autoscaler_chart_gets_the_digest_in_its_tag(monkeypatch: pytest.MonkeyPatch) -> None:
    pin = pins.image("cluster-autoscaler")
    pinned = ImagePin(
        name=pin.name,
        repository=pin.repository,
        tag=None,
        source=pin.source,
        digests={"v1.35.2": DIGEST},
    )
    monkeypatch.setitem(pins.load().images, "cluster-autoscaler", pinned)
    values = eks_charts.cluster_autoscaler_values(
        cluster_name="c",
        region="us-east-1",
        image_tag="v1.35.2",
        settings=eks_charts.ClusterAutoscalerSettings(),
    )
    assert values["image"] == {"tag": f"v1.35.2@{DIGEST}"}
