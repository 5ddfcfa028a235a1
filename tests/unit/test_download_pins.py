"""Every file a node downloads and runs as root has a sha256 pinned in pins.toml, or the pins
say why not (and the node then refuses it: tests/unit/test_hyperpod_node.py runs the scripts).

The file names are the ones the node scripts build (metrics.sh fetch_release and
install_slurm_exporter, containers.sh install_enroot and install_pyxis), for both
architectures the nodes run (x86_64, and aarch64 on Arm-based hosts such as Grace GPU nodes)."""

from __future__ import annotations

import re

import pytest

from fm_constructs import pins
from fm_constructs.orchestration.slurm.parameters import container_parameters, metrics_parameters

ARCHES = ("amd64", "arm64")
SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _files(name: str, version: str) -> set[str]:
    """The release files the scripts download for binary ``name`` at ``version``."""
    per_arch = {
        "node_exporter": ["node_exporter-{v}.linux-{a}.tar.gz"],
        "prometheus": ["prometheus-{v}.linux-{a}.tar.gz"],
        "slurm_exporter": ["slurm_exporter-{v}-linux-{a}.tar.gz"],
        "enroot": ["enroot_{v}-1_{a}.deb", "enroot+caps_{v}-1_{a}.deb"],
        "pyxis": ["pyxis-{v}.tar.gz"],
    }[name]
    return {pattern.format(v=version, a=arch) for pattern in per_arch for arch in ARCHES}


@pytest.mark.parametrize("name", sorted(pins.load().binaries))
def test_each_download_is_pinned_or_says_why_not(name: str) -> None:
    pin = pins.binary(name)
    files = _files(name, pin.version)
    assert set(pin.sha256) <= files, f"{name}: digests for files no script downloads"
    for file, digest in pin.sha256.items():
        assert SHA256.match(digest), f"{file}: {digest!r} is not a sha256"
    if pin.sha256_unavailable:
        assert not pin.sha256, f"{name}: digests pinned and said to be unavailable"
        assert pin.version in pin.sha256_unavailable or name in pin.sha256_unavailable
    else:
        assert set(pin.sha256) == files, f"{name}: no digest for {sorted(files - set(pin.sha256))}"


def test_the_digests_reach_both_scripts_parameters() -> None:
    """containers.sh and metrics.sh each read download_sha256 from their parameters (HyperPod
    and PCS clusters alike build them from these two functions)."""
    digests = pins.download_digests()
    assert digests, "no digest pinned at all"
    assert container_parameters()["download_sha256"] == digests
    assert metrics_parameters("us-east-1")["download_sha256"] == digests


def test_the_digests_are_distinct() -> None:
    digests = list(pins.download_digests().values())
    assert len(digests) == len(set(digests))
