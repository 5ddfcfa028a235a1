"""Defaults shared by the profile, the patterns and the blocks: one place per concept.

Every layer reads these names, so the value a profile gets without the key, a pattern gets
without the argument and a block gets without the argument are the same.
"""

from __future__ import annotations

#: Encrypted gp3 root volume of an accelerated node (GiB): the EKS/HyperPod AMI, container
#: images of tens of GB (CUDA, NCCL, framework) and logs. Model weights go to NVMe.
ROOT_VOLUME_SIZE_GIB = 200
#: Smallest root volume the library accepts for an accelerated node (GiB): below this the
#: GPU container images alone fill it.
ROOT_VOLUME_MIN_GIB = 100
#: Largest gp3 volume (GiB): "gp3: 1 - 65,536 GiB" (botocore ``ec2`` CreateVolume ``Size``).
ROOT_VOLUME_MAX_GIB = 65_536
#: Expected model FLOPs utilization of a training goal (``fmc plan``) when none is given: a
#: well-tuned dense transformer on H100-class GPUs reaches 0.35-0.45.
TARGET_MFU = 0.4
#: Extra EBS volume of a HyperPod accelerated group, mounted at /opt/sagemaker (GiB): HyperPod
#: sets the root volume itself; container images and node-local scratch go to this one.
HYPERPOD_EBS_VOLUME_GIB = 500
