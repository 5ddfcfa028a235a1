"""Container images the job templates run, pinned by tag, each with the page it was checked on.

All of them carry the EFA user-space stack (libfabric and the AWS OFI NCCL plugin) that a pod
needs on EKS: the accelerated AMIs have the EFA kernel driver only.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ImagePin:
    """An image ``repository:tag`` and where the tag and its contents were checked."""

    repository: str
    tag: str
    source: str

    @property
    def reference(self) -> str:
        return f"{self.repository}:{self.tag}"

    @property
    def enroot_reference(self) -> str:
        """The same image as pyxis/enroot name it (``registry#repository:tag``)."""
        registry, _, path = self.repository.partition("/")
        return f"{registry}#{path}:{self.tag}"


#: AWS-published nccl-tests image: CUDA, EFA installer (libfabric, Open MPI), aws-ofi-nccl,
#: NCCL and nccl-tests under /opt/nccl-tests/build, with sshd for MPI launchers.
NCCL_TESTS = ImagePin(
    repository="public.ecr.aws/hpc-cloud/nccl-tests",
    tag="cuda12.8.1-efa1.42.0-ofiv1.16.0-ncclv2.27.5-1-testsv2.16.4",
    source="https://github.com/aws-samples/awsome-distributed-training/blob/"
    "7217859f67bc693c52ff175ccc6082c41dbd7a1b/1.architectures/3.aws-batch/"
    "aws-batch-distributed-training-p6.yaml (image built from micro-benchmarks/nccl-tests/"
    "nccl-tests.Dockerfile of the same repository)",
)

#: AWS Deep Learning Container for PyTorch training on EC2/EKS: PyTorch 2.9.0, CUDA 13.0,
#: NCCL 2.27.7, EFA installer 1.43.3 (libfabric and aws-ofi-nccl). Needs an NVIDIA driver for
#: CUDA 13 (580 or newer) on the node.
PYTORCH_TRAINING = ImagePin(
    repository="public.ecr.aws/deep-learning-containers/pytorch-training",
    tag="2.9.0-gpu-py312-cu130-ubuntu22.04-ec2",
    source="https://github.com/aws/deep-learning-containers/blob/master/docs/releasenotes/"
    "pytorch/pytorch-training-2.9-gpu-ec2.md",
)

#: NVIDIA JAX-Toolbox JAX image; its base layer carries CUDA, cuDNN, NCCL and EFA (libfabric
#: with the AWS OFI NCCL plugin), per the JAX-Toolbox README's container table.
JAX = ImagePin(
    repository="ghcr.io/nvidia/jax",
    tag="jax-2025-12-17",
    source="https://github.com/NVIDIA/JAX-Toolbox (README: ghcr.io/nvidia/jax:base = CUDA, "
    "cuDNN, NCCL, OFED, EFA; dated jax-YYYY-MM-DD tags)",
)

#: NVIDIA DCGM (nv-hostengine, dcgmi and the diagnostic plugins), the DCGM release the pinned
#: dcgm-exporter chart is built on (4.6.0).
DCGM = ImagePin(
    repository="nvcr.io/nvidia/cloud-native/dcgm",
    tag="4.6.0-1-ubuntu24.04",
    source="https://github.com/NVIDIA/dcgm-exporter (README: tests against "
    "nvcr.io/nvidia/cloud-native/dcgm:4.6.0-1-ubuntu24.04)",
)

ALL_IMAGES: tuple[ImagePin, ...] = (NCCL_TESTS, PYTORCH_TRAINING, JAX, DCGM)
