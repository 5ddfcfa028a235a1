"""Every version the library pins (charts, images, binaries, Kubernetes versions), with its source.

The versions live in one data file, ``pins.toml`` beside this module; every layer reads them
from here, so a bump is one edit and a test (``tests/unit/test_pins.py``) fails on a version
literal anywhere else in the package. Pure data: no aws_cdk import (floor 1).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

#: Name of the data file inside this package.
PINS_FILE = "pins.toml"


@dataclass(frozen=True)
class ChartPin:
    """A Helm chart at a pinned version, from an ``https://`` or ``oci://`` repository."""

    name: str
    chart: str
    repository: str
    version: str
    source: str


#: An image digest as the pins write it (the digest of the tag's image index).
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class ImagePin:
    """A container image: its repository (``<region>``/``<account>`` mark regional parts),
    pinned tag (None when the tag is chosen per Kubernetes minor) and, where a named public
    record gives it, the digest of that tag (``digests``: one per tag, for images whose tag
    varies); ``digest_unavailable`` says why an image has none yet."""

    name: str
    repository: str
    tag: str | None
    source: str
    digest: str | None = None
    digests: dict[str, str] = field(default_factory=dict)
    digest_unavailable: str = ""

    def digest_of(self, tag: str) -> str | None:
        """The pinned digest of ``tag`` (None: not pinned)."""
        return self.digest if tag == self.tag and self.digest else self.digests.get(tag)

    def tag_reference(self, tag: str) -> str:
        """``tag``, with ``@<digest>`` when that tag's digest is pinned (what follows the
        ``:`` of a reference: ``v1.2.3@sha256:...``)."""
        digest = self.digest_of(tag)
        return f"{tag}@{digest}" if digest else tag

    @property
    def reference(self) -> str:
        """``repository:tag`` (``repository:tag@sha256:...`` with a pinned digest), for
        images whose repository is fixed."""
        if self.tag is None or "<" in self.repository:
            raise ValueError(f"image pin {self.name!r} has no fixed reference")
        return f"{self.repository}:{self.tag_reference(self.tag)}"


@dataclass(frozen=True)
class BinaryPin:
    """A release binary downloaded on nodes and run as root, with the digests nodes require.

    ``sha256``: release file name -> its sha256 digest (``[binaries.<name>.sha256]``), the
    digest the project publishes, as recorded by public packaging named in ``pins.toml``. A
    node uses a downloaded file only when its digest is pinned here and matches: the pins,
    not the download site, are the root of trust. ``git_tree``: for a source archive a host
    makes of a tag on request (whose bytes are no fixed fact), archive name -> the git tree
    id of the tag's commit (``[binaries.<name>.git_tree]``, with ``git_tree_source`` saying
    where it was read): nodes extract the archive and use it only when what it holds is that
    tree. ``sha256_unavailable``: why no digest is pinned yet (the nodes then refuse that
    download)."""

    name: str
    version: str
    source: str
    sha256: dict[str, str] = field(default_factory=dict)
    git_tree: dict[str, str] = field(default_factory=dict)
    git_tree_source: str = ""
    sha256_unavailable: str = ""


@dataclass(frozen=True)
class KubernetesVersionPin:
    """A Kubernetes minor version EKS runs for this library: its end of standard support (ISO
    date, None when not yet published) and the Cluster Autoscaler image tag of that minor."""

    version: str
    end_of_standard_support: str | None
    cluster_autoscaler_image_tag: str


@dataclass(frozen=True)
class PcsPins:
    """AWS PCS: the Slurm major version clusters run, the name pattern and owner of the node
    image ``fmc pcs-ami`` resolves (``{architecture}`` and ``{slurm_version}`` filled in), and
    where the choices are documented."""

    slurm_version: str
    source: str
    ami_name_pattern: str
    ami_owner: str

    def ami_name(self, architecture: str) -> str:
        """The image name pattern for nodes of ``architecture`` (x86_64 or arm64)."""
        return self.ami_name_pattern.format(
            architecture=architecture, slurm_version=self.slurm_version
        )


@dataclass(frozen=True)
class ServicePin:
    """A version a managed AWS service runs for the library (FSx for Lustre, Managed Grafana):
    asked for through the service's API, never downloaded."""

    name: str
    version: str
    source: str


@dataclass(frozen=True)
class KubernetesPins:
    """The supported Kubernetes versions, the default, and those whose support ends soon."""

    default: str
    ending_soon: frozenset[str]
    versions: dict[str, KubernetesVersionPin]
    source: str
    #: The versions SageMaker HyperPod supports for EKS orchestration, and where that is said.
    hyperpod_eks: tuple[str, ...] = ()
    hyperpod_eks_source: str = ""


@dataclass(frozen=True)
class Pins:
    """The whole pins file, typed."""

    kubernetes: KubernetesPins
    charts: dict[str, ChartPin]
    images: dict[str, ImagePin]
    binaries: dict[str, BinaryPin]
    pcs: PcsPins
    services: dict[str, ServicePin] = field(default_factory=dict)


def _parse(data: dict[str, Any]) -> Pins:
    k8s = data["kubernetes"]
    kubernetes = KubernetesPins(
        default=k8s["default"],
        ending_soon=frozenset(k8s["ending_soon"]),
        versions={
            version: KubernetesVersionPin(
                version=version,
                end_of_standard_support=entry.get("end_of_standard_support"),
                cluster_autoscaler_image_tag=entry["cluster_autoscaler_image_tag"],
            )
            for version, entry in k8s["versions"].items()
        },
        source=k8s["source"],
        hyperpod_eks=tuple(k8s["hyperpod_eks"]["versions"]),
        hyperpod_eks_source=k8s["hyperpod_eks"]["source"],
    )
    if kubernetes.default not in kubernetes.versions:
        raise ValueError(f"{PINS_FILE}: kubernetes.default {kubernetes.default!r} not listed")
    return Pins(
        kubernetes=kubernetes,
        charts={name: ChartPin(name=name, **entry) for name, entry in data["charts"].items()},
        images={name: _image(name, entry) for name, entry in data["images"].items()},
        binaries={name: BinaryPin(name=name, **entry) for name, entry in data["binaries"].items()},
        pcs=PcsPins(**data["pcs"]),
        services={name: ServicePin(name=name, **entry) for name, entry in data["services"].items()},
    )


def _image(name: str, entry: dict[str, Any]) -> ImagePin:
    pin = ImagePin(
        name=name,
        repository=entry["repository"],
        tag=entry.get("tag"),
        source=entry["source"],
        digest=entry.get("digest"),
        digests=dict(entry.get("digests", {})),
        digest_unavailable=entry.get("digest_unavailable", ""),
    )
    for digest in (pin.digest, *pin.digests.values()):
        if digest is not None and not _DIGEST.match(digest):
            raise ValueError(f"{PINS_FILE}: images.{name}: {digest!r} is not 'sha256:<64 hex>'")
    if not (pin.digest or pin.digests) and not pin.digest_unavailable:
        raise ValueError(f"{PINS_FILE}: images.{name} needs a digest or digest_unavailable")
    return pin


@cache
def load() -> Pins:
    """The pins file of the installed package (read once)."""
    text = resources.files(__name__).joinpath(PINS_FILE).read_text(encoding="utf-8")
    return _parse(tomllib.loads(text))


def chart(name: str) -> ChartPin:
    """The pinned chart ``name`` (the key under ``[charts]``)."""
    return load().charts[name]


def image(name: str) -> ImagePin:
    """The pinned image ``name`` (the key under ``[images]``)."""
    return load().images[name]


def image_tag(name: str) -> str:
    """The pinned tag of image ``name`` (for images whose repository is regional)."""
    tag = image(name).tag
    if tag is None:
        raise ValueError(f"image pin {name!r} has no tag of its own")
    return tag


def binary(name: str) -> BinaryPin:
    """The pinned release binary ``name`` (the key under ``[binaries]``)."""
    return load().binaries[name]


def service(name: str) -> ServicePin:
    """The version managed service ``name`` runs (the key under ``[services]``)."""
    return load().services[name]


def pcs() -> PcsPins:
    """The AWS PCS pins (Slurm version)."""
    return load().pcs


def download_digests() -> dict[str, str]:
    """Every pinned release file digest (file name -> sha256), for the nodes that download
    them as root."""
    digests: dict[str, str] = {}
    for pin in load().binaries.values():
        digests.update(pin.sha256)
    return digests


def source_trees() -> dict[str, str]:
    """Every pinned source archive's tree (archive name -> git tree id), for the nodes that
    build those sources as root."""
    trees: dict[str, str] = {}
    for pin in load().binaries.values():
        trees.update(pin.git_tree)
    return trees


def kubernetes() -> KubernetesPins:
    """The Kubernetes versions table."""
    return load().kubernetes


__all__ = [
    "BinaryPin",
    "ChartPin",
    "ImagePin",
    "KubernetesPins",
    "KubernetesVersionPin",
    "Pins",
    "ServicePin",
    "binary",
    "chart",
    "image",
    "image_tag",
    "kubernetes",
    "load",
    "service",
    "source_trees",
]
