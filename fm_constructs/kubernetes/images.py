"""Container images the job templates run, from the pins file (``fm_constructs/pins``).

All of them carry the EFA user-space stack (libfabric and the AWS OFI NCCL plugin) that a pod
needs on EKS: the accelerated AMIs have the EFA kernel driver only. Each pin names the page
its tag and contents were checked on.
"""

from __future__ import annotations

from dataclasses import dataclass

from fm_constructs import pins


@dataclass(frozen=True)
class ImagePin:
    """An image ``repository:tag`` (with the tag's pinned ``digest``, if any) and where the
    tag and its contents were checked."""

    repository: str
    tag: str
    source: str
    digest: str | None = None

    @property
    def reference(self) -> str:
        """``repository:tag``, or ``repository:tag@sha256:...`` when the digest is pinned."""
        suffix = f"@{self.digest}" if self.digest else ""
        return f"{self.repository}:{self.tag}{suffix}"

    @property
    def enroot_reference(self) -> str:
        """The same image as pyxis/enroot name it (``registry#repository:tag``; by tag)."""
        registry, _, path = self.repository.partition("/")
        return f"{registry}#{path}:{self.tag}"


def _pin(name: str) -> ImagePin:
    pin = pins.image(name)
    tag = pins.image_tag(name)
    return ImagePin(
        repository=pin.repository, tag=tag, source=pin.source, digest=pin.digest_of(tag)
    )


#: AWS-published nccl-tests image: CUDA, EFA installer (libfabric, Open MPI), aws-ofi-nccl,
#: NCCL and nccl-tests under /opt/nccl-tests/build, with sshd for MPI launchers.
NCCL_TESTS = _pin("nccl-tests")
#: AWS Deep Learning Container for PyTorch training on EC2/EKS (EFA installer inside).
PYTORCH_TRAINING = _pin("pytorch-training")
#: NVIDIA JAX-Toolbox JAX image; its base layer carries CUDA, cuDNN, NCCL and EFA.
JAX = _pin("jax")
#: NVIDIA DCGM (nv-hostengine, dcgmi and the diagnostic plugins).
DCGM = _pin("dcgm")

ALL_IMAGES: tuple[ImagePin, ...] = (NCCL_TESTS, PYTORCH_TRAINING, JAX, DCGM)
