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
GIT_TREE = re.compile(r"^[0-9a-f]{40}$")


def _files(name: str, version: str) -> set[str]:
    """The release files the scripts download for binary ``name`` at ``version``."""
    per_arch = {
        "node_exporter": ["node_exporter-{v}.linux-{a}.tar.gz"],
        "prometheus": ["prometheus-{v}.linux-{a}.tar.gz"],
        "slurm_exporter": ["slurm_exporter-{v}-linux-{a}.tar.gz"],
        "enroot": ["enroot_{v}-1_{a}.deb", "enroot+caps_{v}-1_{a}.deb"],
        # GitHub's archive of the tag: one file, whatever the node's architecture.
        "pyxis": ["pyxis-{v}.tar.gz"],
    }[name]
    return {pattern.format(v=version, a=arch) for pattern in per_arch for arch in ARCHES}


@pytest.mark.parametrize("name", sorted(pins.load().binaries))
def test_each_download_is_pinned_or_says_why_not(name: str) -> None:
    """Each file by its sha256, or (a source archive a host makes of a tag) by the git tree
    it holds, with where that tree was read; or the pins say why neither is pinned."""
    pin = pins.binary(name)
    files = _files(name, pin.version)
    pinned = set(pin.sha256) | set(pin.git_tree)
    assert pinned <= files, f"{name}: pins for files no script downloads"
    assert not set(pin.sha256) & set(pin.git_tree), f"{name}: a file pinned twice"
    for file, digest in pin.sha256.items():
        assert SHA256.match(digest), f"{file}: {digest!r} is not a sha256"
    for file, tree in pin.git_tree.items():
        assert GIT_TREE.match(tree), f"{file}: {tree!r} is not a git tree id"
        assert tree in pin.git_tree_source and f"v{pin.version}" in pin.git_tree_source
    if pin.sha256_unavailable:
        assert not pinned, f"{name}: files pinned and said to be unavailable"
        assert pin.version in pin.sha256_unavailable or name in pin.sha256_unavailable
    else:
        assert pinned == files, f"{name}: no pin for {sorted(files - pinned)}"


def test_the_source_trees_reach_the_container_scripts_parameters() -> None:
    """containers.sh reads source_git_tree (HyperPod and PCS nodes alike)."""
    trees = pins.source_trees()
    assert set(trees) == {f"pyxis-{pins.binary('pyxis').version}.tar.gz"}
    assert container_parameters()["source_git_tree"] == trees


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
