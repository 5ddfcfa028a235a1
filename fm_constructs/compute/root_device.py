"""The root device name of a node's image, which the launch template's root volume must use.

A block device mapping whose ``DeviceName`` is not the image's root device does not resize the
root volume: EC2 attaches a second, empty volume under that name and the root keeps the size
of the image's snapshot. The name depends on the image: Amazon Linux, the EKS-optimized AMIs
and Bottlerocket boot from ``/dev/xvda``; Ubuntu and the Ubuntu Deep Learning AMIs from
``/dev/sda1`` (``RootDeviceName`` in EC2 DescribeImages).

At synth the image is known only by name: EKS picks an Amazon Linux 2023 image when the
launch template has none, and a public image published as an SSM parameter names its
distribution in the parameter's path (``/aws/service/canonical/ubuntu/...``,
``/aws/service/deeplearning/ami/x86_64/base-oss-nvidia-driver-gpu-ubuntu-22.04/...``). An AMI
id says nothing, so the caller has to give the name.
"""

from __future__ import annotations

from typing import Any

from aws_cdk import CfnParameter, Stack
from aws_cdk import aws_ec2 as ec2
from constructs import Construct

AMAZON_LINUX_ROOT_DEVICE = "/dev/xvda"
UBUNTU_ROOT_DEVICE = "/dev/sda1"

#: Words in a public image's SSM parameter path, and the root device of that distribution.
_PARAMETER_WORDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("ubuntu", "/canonical/"), UBUNTU_ROOT_DEVICE),
    (
        ("amazon-linux", "amzn", "al2023", "/aws/service/eks/", "/aws/service/bottlerocket/"),
        AMAZON_LINUX_ROOT_DEVICE,
    ),
)


def root_device_for_parameter(parameter_name: str) -> str | None:
    """The root device of the image an SSM parameter publishes, or None if its path does not
    say which distribution it is."""
    lowered = parameter_name.lower()
    for words, device in _PARAMETER_WORDS:
        if any(word in lowered for word in words):
            return device
    return None


def _parameter_name(scope: Construct, image: ec2.IMachineImage) -> str | None:
    """The SSM parameter an image is read from at deploy time (the default of the template
    parameter its id refers to), or None when the id is a literal AMI id."""
    stack = Stack.of(scope)
    reference: Any = stack.resolve(image.get_image(scope).image_id)
    if not isinstance(reference, dict) or set(reference) != {"Ref"}:
        return None
    for construct in stack.node.find_all():
        if (
            isinstance(construct, CfnParameter)
            and stack.resolve(construct.logical_id) == reference["Ref"]
        ):
            default = construct.default
            return default if isinstance(default, str) else None
    return None


def root_device_name(scope: Construct, machine_image: ec2.IMachineImage | None) -> str | None:
    """The root device of ``machine_image`` (EKS's Amazon Linux image when None), or None when
    it cannot be known at synth."""
    if machine_image is None:
        return AMAZON_LINUX_ROOT_DEVICE
    name = _parameter_name(scope, machine_image)
    return root_device_for_parameter(name) if name else None
