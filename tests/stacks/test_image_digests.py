"""Every image the library renders (Kubernetes manifests and chart values of every shipped
profile) is pinned by digest (``repository:tag@sha256:...``) or its pin in pins.toml says why
it is not yet (``digest_unavailable``). A tag alone can be moved to other content by whoever
controls the repository; the digest names the content."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from fm_constructs import pins
from fm_constructs.pins import ImagePin
from tests.iam_policies import Templates
from tests.stacks.profiles import profile_params, synthesize

MANIFEST = "Custom::AWSCDK-EKS-KubernetesResource"
CHART = "Custom::AWSCDK-EKS-HelmChart"
#: Charts whose values set an image, and the pin that image comes from.
CHART_IMAGES = {"cluster-autoscaler": "cluster-autoscaler"}


def _images(node: Any) -> Iterator[Any]:
    """Every value under an ``image`` key of ``node``."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "image":
                yield value
            yield from _images(value)
    elif isinstance(node, list):
        for value in node:
            yield from _images(value)


def rendered_images(profile: str) -> list[tuple[str, str]]:
    """(where, image reference) of every image the profile's manifests and chart values name;
    a chart's ``{"tag": ...}`` is completed with the repository of its pin."""
    templates = Templates(synthesize(profile).templates)
    found: list[tuple[str, str]] = []
    for stack, template in templates.templates.items():
        for logical_id, resource in template["Resources"].items():
            props = resource.get("Properties", {})
            if resource["Type"] == MANIFEST:
                for image in _images(json.loads(templates.render(stack, props["Manifest"]))):
                    found.append((f"{stack}/{logical_id}", image))
            elif resource["Type"] == CHART and props.get("Values"):
                chart = props["Chart"]
                for image in _images(json.loads(templates.render(stack, props["Values"]))):
                    assert chart in CHART_IMAGES, f"{chart} sets an image no pin is known for"
                    repository = pins.image(CHART_IMAGES[chart]).repository
                    found.append((f"{stack}/{logical_id}", f"{repository}:{image['tag']}"))
    return found


def _pin_of(reference: str) -> tuple[ImagePin, str, str | None]:
    """The pin ``reference`` comes from, with its tag and digest (None: by tag alone)."""
    name, _, digest = reference.partition("@")
    repository, _, tag = name.rpartition(":")
    for pin in pins.load().images.values():
        pattern = re.escape(pin.repository)
        pattern = pattern.replace(re.escape("<account>"), r"\d{12}")
        pattern = pattern.replace(re.escape("<region>"), r"[a-z]{2}(-[a-z]+)+-\d")
        if re.fullmatch(pattern, repository):
            return pin, tag, digest or None
    raise AssertionError(f"{reference} comes from no image pin")


@pytest.mark.parametrize("profile", profile_params())
def test_every_rendered_image_is_pinned_by_digest_or_says_why_not(profile: str) -> None:
    images = rendered_images(profile)
    assert images or not synthesize(profile).stacks.clusters
    for where, reference in images:
        pin, tag, digest = _pin_of(reference)
        if digest is not None:
            assert digest == pin.digest_of(tag), (where, reference, "not the pinned digest")
        else:
            assert pin.digest_of(tag) is None, (where, reference, "rendered without its digest")
            assert pin.digest_unavailable, (where, reference, "no digest and no reason")
