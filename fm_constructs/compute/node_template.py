"""What every node launch template of the library sets: IMDSv2 and an encrypted gp3 root.

The GPU launch template (:class:`~fm_constructs.compute.launch_template.GpuLaunchTemplate`),
the EKS system node group's template and the template of a PCS node group without EFA all
require IMDSv2 tokens (hop limit 1 unless a node needs 2, so a pod outside the host network
cannot reach the metadata service and take the node role's credentials) and give the node an
encrypted gp3 root volume deleted with the instance. The two pieces are built here, once, and
:func:`node_launch_template` assembles the template of a node that needs nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence

from aws_cdk import Fn
from aws_cdk import aws_ec2 as ec2
from constructs import Construct


def imds_v2_options(hop_limit: int = 1) -> ec2.CfnLaunchTemplate.MetadataOptionsProperty:
    """The instance metadata service on, IMDSv2 tokens required, ``hop_limit`` hops."""
    return ec2.CfnLaunchTemplate.MetadataOptionsProperty(
        http_endpoint="enabled",
        http_tokens="required",
        http_put_response_hop_limit=hop_limit,
    )


def encrypted_root_volume(
    device_name: str, size_gib: int, *, kms_key_arn: str | None = None
) -> ec2.CfnLaunchTemplate.BlockDeviceMappingProperty:
    """An encrypted gp3 root volume of ``size_gib`` on the image's root device
    ``device_name`` (with the account's default EBS key unless ``kms_key_arn``), deleted with
    the instance."""
    return ec2.CfnLaunchTemplate.BlockDeviceMappingProperty(
        device_name=device_name,
        ebs=ec2.CfnLaunchTemplate.EbsProperty(
            volume_size=size_gib,
            volume_type="gp3",
            encrypted=True,
            kms_key_id=kms_key_arn,
            delete_on_termination=True,
        ),
    )


def node_launch_template(
    scope: Construct,
    construct_id: str,
    *,
    root_device_name: str,
    root_volume_size_gib: int,
    security_group_ids: Sequence[str] | None = None,
    user_data: str | None = None,
) -> ec2.CfnLaunchTemplate:
    """A launch template with IMDSv2 required (hop limit 1), the encrypted root volume and,
    when given, the security groups and the user data (base64-encoded here); no AMI, instance
    type or subnet: the node group that uses it sets them."""
    return ec2.CfnLaunchTemplate(
        scope,
        construct_id,
        launch_template_data=ec2.CfnLaunchTemplate.LaunchTemplateDataProperty(
            security_group_ids=list(security_group_ids) if security_group_ids else None,
            metadata_options=imds_v2_options(),
            block_device_mappings=[encrypted_root_volume(root_device_name, root_volume_size_gib)],
            user_data=Fn.base64(user_data) if user_data else None,
        ),
    )
