"""What each service checks when CloudFormation creates (or deletes) one of the resources
moto's CloudFormation does not model: the resources a property names must exist at that
moment, in this account and region, and the service's own documented rules must hold.

Existence is the check cfn-lint and snapshots cannot make: a property that names another
resource by a literal ARN or id carries no dependency, so CloudFormation may create the two in
either order; here the named resource must already exist. Messages follow the services' own
exception texts (EKS ``ResourceNotFoundException``/``InvalidParameterException``, EC2
``InvalidSubnetID.NotFound``, S3 ``NoSuchBucket``, ...).
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Iterable
from typing import Any

from moto.ec2.models import ec2_backends
from moto.fsx.models import fsx_backends
from moto.iam.models import iam_backends
from moto.kms.models import kms_backends
from moto.logs.models import logs_backends
from moto.s3.models import s3_backends
from moto.sns.models import sns_backends

from tests.rehearsal.local_aws.resources import (
    CREATE_HOOKS,
    CREATE_RULES,
    DELETE_HOOKS,
    DELETE_RULES,
    Created,
    ResourceFailedError,
    existing,
)


def _ec2(resource: Created) -> Any:
    return ec2_backends[resource.account][resource.region]


def require_subnets(resource: Created, subnet_ids: Iterable[str]) -> list[Any]:
    """EC2: every subnet exists."""
    found = []
    for subnet_id in subnet_ids:
        try:
            found.append(_ec2(resource).get_subnet(subnet_id))
        except Exception as error:
            raise ResourceFailedError(f"The subnet ID '{subnet_id}' does not exist") from error
    return found


def require_security_groups(resource: Created, group_ids: Iterable[str]) -> None:
    """EC2: every security group exists."""
    for group_id in group_ids:
        if _ec2(resource).get_security_group_from_id(group_id) is None:
            raise ResourceFailedError(f"The security group '{group_id}' does not exist")


def require_role(resource: Created, role_arn: str | None) -> None:
    """IAM: the role exists."""
    if not role_arn:
        return
    try:
        iam_backends[resource.account]["aws"].get_role_by_arn(role_arn)
    except Exception as error:
        raise ResourceFailedError(f"Role {role_arn} cannot be found") from error


def require_bucket(resource: Created, uri_or_arn: str) -> None:
    """S3: the bucket of an ``s3://bucket/prefix`` URI or bucket ARN exists."""
    name = uri_or_arn.removeprefix("s3://").removeprefix("arn:aws:s3:::").split("/", 1)[0]
    try:
        s3_backends[resource.account]["aws"].get_bucket(name)
    except Exception as error:
        raise ResourceFailedError(
            f"NoSuchBucket: The specified bucket does not exist: {name}"
        ) from error


def require_key(resource: Created, key: str | None) -> None:
    """KMS: the key (id or ARN) exists."""
    if not key:
        return
    try:
        kms_backends[resource.account][resource.region].describe_key(key)
    except Exception as error:
        raise ResourceFailedError(f"NotFoundException: Key '{key}' does not exist") from error


def cluster(resource: Created, name_or_arn: str) -> Created:
    """EKS: the cluster, by name or ARN."""
    clusters = existing(resource.account, resource.region, "AWS::EKS::Cluster")
    for candidate in clusters.values():
        if name_or_arn in (candidate.physical_id, candidate.attributes.get("Arn")):
            return candidate
    name = name_or_arn.rsplit("/", 1)[-1]
    raise ResourceFailedError(f"ResourceNotFoundException: No cluster found for name: {name}.")


def workspace(resource: Created, arn_or_id: str) -> Created:
    """Amazon Managed Service for Prometheus: the workspace, by ARN or id."""
    spaces = existing(resource.account, resource.region, "AWS::APS::Workspace")
    for candidate in spaces.values():
        if arn_or_id in (candidate.physical_id, candidate.attributes.get("Arn")):
            return candidate
    raise ResourceFailedError(f"ResourceNotFoundException: Workspace not found: {arn_or_id}")


# --- EKS ---------------------------------------------------------------------------------


def eks_cluster(resource: Created) -> None:
    config = resource.properties.get("ResourcesVpcConfig", {})
    subnets = require_subnets(resource, config.get("SubnetIds", []))
    zones = {subnet.availability_zone for subnet in subnets}
    if len(zones) < 2:
        raise ResourceFailedError(
            "InvalidParameterException: Subnets specified must be in at least two different AZs"
        )
    require_security_groups(resource, config.get("SecurityGroupIds", []))
    require_role(resource, resource.properties.get("RoleArn"))
    for provider in resource.properties.get("EncryptionConfig", []):
        require_key(resource, provider.get("Provider", {}).get("KeyArn"))


def eks_cluster_attributes(resource: Created) -> None:
    """The cluster security group EKS creates is a real group other resources refer to."""
    config = resource.properties.get("ResourcesVpcConfig", {})
    vpc_id = _ec2(resource).get_subnet(config["SubnetIds"][0]).vpc_id
    name = resource.physical_id
    group = _ec2(resource).create_security_group(
        name=f"eks-cluster-sg-{name}-{uuid.uuid4().hex[:8]}",
        description="EKS created security group applied to ENI that is attached to EKS "
        "Control Plane master nodes, as well as any managed workloads.",
        vpc_id=vpc_id,
        tags={"aws:eks:cluster-name": name},
    )
    host = f"{uuid.uuid4().hex.upper()}.gr7.{resource.region}.eks.amazonaws.com"
    resource.attributes.update(
        {
            "Arn": f"arn:aws:eks:{resource.region}:{resource.account}:cluster/{name}",
            "ClusterSecurityGroupId": group.id,
            "Endpoint": f"https://{host}",
            "OpenIdConnectIssuerUrl": f"https://oidc.eks.{resource.region}.amazonaws.com/id/"
            f"{uuid.uuid4().hex.upper()}",
            "CertificateAuthorityData": base64.b64encode(b"rehearsal-ca").decode(),
        }
    )


def eks_cluster_delete(resource: Created) -> None:
    groups = existing(resource.account, resource.region, "AWS::EKS::Nodegroup")
    attached = [
        g for g in groups.values() if g.properties.get("ClusterName") == resource.physical_id
    ]
    if attached:
        raise ResourceFailedError(
            f"ResourceInUseException: Cluster has nodegroups attached: "
            f"{[g.physical_id for g in attached]}"
        )


def eks_cluster_group_delete(resource: Created) -> None:
    group_id = resource.attributes.get("ClusterSecurityGroupId")
    if group_id:
        _ec2(resource).delete_security_group(group_id=group_id)


def eks_nodegroup(resource: Created) -> None:
    props = resource.properties
    cluster(resource, str(props["ClusterName"]))
    require_role(resource, props.get("NodeRole"))
    require_subnets(resource, props.get("Subnets", []))
    scaling = props.get("ScalingConfig", {})
    low = int(scaling.get("MinSize", 1))
    high = int(scaling.get("MaxSize", 1))
    desired = int(scaling.get("DesiredSize", low))
    if not low <= desired <= high:
        raise ResourceFailedError(
            "InvalidParameterException: Minimum capacity "
            f"{low} can't be greater than desired size {desired}"
            if low > desired
            else f"InvalidParameterException: Desired capacity {desired} can't be greater "
            f"than max size {high}"
        )
    template = props.get("LaunchTemplate")
    if template:
        backend = _ec2(resource)
        try:
            found = (
                backend.get_launch_template(template["Id"])
                if "Id" in template
                else backend.get_launch_template_by_name(template["Name"])
            )
        except Exception as error:
            raise ResourceFailedError(
                f"InvalidParameterException: The specified launch template, with template "
                f"ID {template.get('Id') or template.get('Name')}, does not exist."
            ) from error
        version = str(template.get("Version", "$Default"))
        if version.isdigit() and int(version) > len(found.versions):
            raise ResourceFailedError(
                f"InvalidParameterException: Launch template version {version} of "
                f"{found.id} does not exist"
            )
        resource.attributes["LaunchTemplateVersion"] = version


def eks_nodegroup_names(resource: Created) -> None:
    """EKS names an unnamed node group after its logical id; its id is ``cluster/name``."""
    name = resource.properties.get("NodegroupName") or (
        f"{resource.logical_id}-{uuid.uuid4().hex[:12]}"
    )
    cluster_name = resource.properties["ClusterName"]
    resource.physical_id = f"{cluster_name}/{name}"
    resource.attributes.update(
        {
            "Id": resource.physical_id,
            "NodegroupName": name,
            "Arn": f"arn:aws:eks:{resource.region}:{resource.account}:nodegroup/{cluster_name}/"
            f"{name}/{uuid.uuid4()}",
        }
    )


def eks_in_cluster(resource: Created) -> None:
    cluster(resource, str(resource.properties["ClusterName"]))
    require_role(resource, resource.properties.get("RoleArn"))
    require_role(resource, resource.properties.get("ServiceAccountRoleArn"))


def eks_access_entry(resource: Created) -> None:
    cluster(resource, str(resource.properties["ClusterName"]))
    principal = str(resource.properties["PrincipalArn"])
    if ":role/" in principal:
        require_role(resource, principal)


# --- FSx ---------------------------------------------------------------------------------


def fsx_file_system(resource: Created) -> None:
    props = resource.properties
    require_subnets(resource, props.get("SubnetIds", []))
    require_security_groups(resource, props.get("SecurityGroupIds", []))
    require_key(resource, props.get("KmsKeyId"))
    lustre = props.get("LustreConfiguration", {})
    destination = lustre.get("LogConfiguration", {}).get("Destination")
    if destination:
        group = destination.split(":log-group:", 1)[-1].split(":", 1)[0]
        if group not in logs_backends[resource.account][resource.region].groups:
            raise ResourceFailedError(
                f"BadRequest: Unable to validate Lustre log destination {destination}: "
                "log group does not exist"
            )


def fsx_file_system_in_backend(resource: Created) -> None:
    """Register the file system with moto's FSx, in its VPC, so ``DescribeFileSystems`` (the
    teardown guard's call) lists it while it exists."""
    props = resource.properties
    backend = fsx_backends[resource.account][resource.region]
    file_system = backend.create_file_system(
        client_request_token="",
        file_system_type=str(props["FileSystemType"]),
        storage_capacity=int(props.get("StorageCapacity", 1200)),
        storage_type=str(props.get("StorageType", "SSD")),
        subnet_ids=list(props["SubnetIds"]),
        security_group_ids=list(props.get("SecurityGroupIds", [])),
        tags=[
            {"Key": "aws:cloudformation:stack-name", "Value": _stack_name(resource)},
            *list(props.get("Tags", [])),
        ],
        kms_key_id=props.get("KmsKeyId"),
        windows_configuration=None,
        lustre_configuration=props.get("LustreConfiguration"),
        ontap_configuration=None,
        file_system_type_version=props.get("FileSystemTypeVersion"),
        open_zfs_configuration=None,
    )
    backend.file_systems.pop(file_system.file_system_id)
    file_system.file_system_id = resource.physical_id
    file_system.vpc_id = _ec2(resource).get_subnet(props["SubnetIds"][0]).vpc_id
    backend.file_systems[resource.physical_id] = file_system
    resource.attributes["LustreMountName"] = uuid.uuid4().hex[:8]
    resource.attributes["DNSName"] = f"{resource.physical_id}.fsx.{resource.region}.amazonaws.com"


def fsx_file_system_out_of_backend(resource: Created) -> None:
    fsx_backends[resource.account][resource.region].file_systems.pop(resource.physical_id, None)


def fsx_data_repository_association(resource: Created) -> None:
    props = resource.properties
    systems = existing(resource.account, resource.region, "AWS::FSx::FileSystem")
    system = systems.get(str(props["FileSystemId"]))
    if system is None:
        raise ResourceFailedError(
            f"FileSystemNotFound: File system '{props['FileSystemId']}' does not exist."
        )
    if system.properties.get("FileSystemType") != "LUSTRE":
        raise ResourceFailedError(
            "BadRequest: Data repository associations need a Lustre file system"
        )
    require_bucket(resource, str(props["DataRepositoryPath"]))
    path = str(props["FileSystemPath"])
    for other in existing(resource.account, resource.region, resource.resource_type).values():
        if (
            other.properties.get("FileSystemId") == props["FileSystemId"]
            and other.properties.get("FileSystemPath") == path
        ):
            raise ResourceFailedError(
                f"BadRequest: File system path {path} is already used by another data "
                "repository association"
            )


# --- Prometheus, Grafana, SageMaker, policies ----------------------------------------------


def aps_rule_groups(resource: Created) -> None:
    workspace(resource, str(resource.properties["Workspace"]))


def aps_scraper(resource: Created) -> None:
    props = resource.properties
    workspace(resource, str(props["Destination"]["AmpConfiguration"]["WorkspaceArn"]))
    eks = props["Source"].get("EksConfiguration")
    if eks:
        cluster(resource, str(eks["ClusterArn"]))
        require_subnets(resource, eks.get("SubnetIds", []))
        require_security_groups(resource, eks.get("SecurityGroupIds", []))
    require_role(resource, props.get("RoleConfiguration", {}).get("SourceRoleArn"))


def aps_workspace(resource: Created) -> None:
    require_key(resource, resource.properties.get("KmsKeyArn"))


def grafana_workspace(resource: Created) -> None:
    require_role(resource, resource.properties.get("RoleArn"))
    resource.attributes["Endpoint"] = (
        f"{resource.physical_id}.grafana-workspace.{resource.region}.amazonaws.com"
    )


def sagemaker_cluster(resource: Created) -> None:
    props = resource.properties
    vpc = props.get("VpcConfig", {})
    require_subnets(resource, vpc.get("Subnets", []))
    require_security_groups(resource, vpc.get("SecurityGroupIds", []))
    eks = props.get("Orchestrator", {}).get("Eks")
    if eks:
        cluster(resource, str(eks["ClusterArn"]))
    for group in props.get("InstanceGroups", []):
        require_role(resource, group.get("ExecutionRole"))
        source = group.get("LifeCycleConfig", {}).get("SourceS3Uri")
        if source:
            require_bucket(resource, str(source))


def s3_bucket_policy(resource: Created) -> None:
    require_bucket(resource, str(resource.properties["Bucket"]))


def sns_topic_policy(resource: Created) -> None:
    topics = sns_backends[resource.account][resource.region].topics
    for arn in resource.properties.get("Topics", []):
        if arn not in topics:
            raise ResourceFailedError(f"NotFound: Topic does not exist: {arn}")


def security_group_egress(resource: Created) -> None:
    require_security_groups(resource, [str(resource.properties["GroupId"])])
    target = resource.properties.get("DestinationSecurityGroupId")
    if target:
        require_security_groups(resource, [str(target)])


def vpc_cidr_block(resource: Created) -> None:
    """EC2: associate the CIDR with the VPC for real, so subnets in it can be created (and
    only after it: a subnet of a secondary CIDR needs the association first)."""
    props = resource.properties
    association = _ec2(resource).associate_vpc_cidr_block(
        vpc_id=str(props["VpcId"]),
        cidr_block=str(props["CidrBlock"]),
        amazon_provided_ipv6_cidr_block=bool(props.get("AmazonProvidedIpv6CidrBlock", False)),
    )
    resource.physical_id = str(association["association_id"])
    resource.attributes["Id"] = resource.physical_id


def vpc_cidr_block_delete(resource: Created) -> None:
    _ec2(resource).disassociate_vpc_cidr_block(association_id=resource.physical_id)


def _stack_name(resource: Created) -> str:
    parts = resource.stack_id.split("/")
    return parts[1] if len(parts) > 2 else ""


def install() -> None:
    """Register every rule and hook (idempotent)."""
    rules = {
        "AWS::EKS::Cluster": [eks_cluster],
        "AWS::EKS::Nodegroup": [eks_nodegroup],
        "AWS::EKS::Addon": [eks_in_cluster],
        "AWS::EKS::PodIdentityAssociation": [eks_in_cluster],
        "AWS::EKS::AccessEntry": [eks_access_entry],
        "AWS::FSx::FileSystem": [fsx_file_system],
        "AWS::FSx::DataRepositoryAssociation": [fsx_data_repository_association],
        "AWS::APS::Workspace": [aps_workspace],
        "AWS::APS::RuleGroupsNamespace": [aps_rule_groups],
        "AWS::APS::Scraper": [aps_scraper],
        "AWS::Grafana::Workspace": [grafana_workspace],
        "AWS::SageMaker::Cluster": [sagemaker_cluster],
        "AWS::S3::BucketPolicy": [s3_bucket_policy],
        "AWS::SNS::TopicPolicy": [sns_topic_policy],
        "AWS::EC2::SecurityGroupEgress": [security_group_egress],
    }
    CREATE_RULES.clear()
    CREATE_RULES.update(rules)
    CREATE_HOOKS.clear()
    CREATE_HOOKS.update(
        {
            "AWS::EKS::Cluster": [eks_cluster_attributes],
            "AWS::EKS::Nodegroup": [eks_nodegroup_names],
            "AWS::EC2::VPCCidrBlock": [vpc_cidr_block],
            "AWS::FSx::FileSystem": [fsx_file_system_in_backend],
        }
    )
    DELETE_RULES.clear()
    DELETE_RULES.update({"AWS::EKS::Cluster": [eks_cluster_delete]})
    DELETE_HOOKS.clear()
    DELETE_HOOKS.update(
        {
            "AWS::EKS::Cluster": [eks_cluster_group_delete],
            "AWS::EC2::VPCCidrBlock": [vpc_cidr_block_delete],
            "AWS::FSx::FileSystem": [fsx_file_system_out_of_backend],
        }
    )
