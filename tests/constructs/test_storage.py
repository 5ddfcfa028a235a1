"""DataBucket and LustreFileSystem: template assertions, pinned logical ids, every validation
rule, cfn-lint and cdk-nag. All variants synthesize once, as stacks of one App."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aws_cdk as cdk
import pytest
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk.assertions import Annotations, Match, Template

from fm_constructs.errors import FmValidationError
from fm_constructs.policy import acknowledge, enable_nag
from fm_constructs.storage import (
    DataBucket,
    DataRepositoryAssociation,
    FsxSizingRequest,
    LustreDeploymentType,
    LustreFileSystem,
    LustreLogLevel,
    S3Event,
)
from tests.support import TEST_ENV, cfn_lint

# Every test of this module runs on one xdist worker, so the App synthesizes once.
pytestmark = pytest.mark.xdist_group("storage-constructs")

IMPORTED_KEY_ARN = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"


def _network(stack: cdk.Stack) -> tuple[ec2.IVpc, ec2.ISubnet]:
    """A VPC from attributes: no resources, no lookups."""
    vpc = ec2.Vpc.from_vpc_attributes(
        stack,
        "Vpc",
        vpc_id="vpc-0123456789abcdef0",
        availability_zones=["us-east-1a"],
        private_subnet_ids=["subnet-0123456789abcdef0"],
    )
    return vpc, vpc.private_subnets[0]


@dataclass
class Variants:
    default: Template
    efa: Template
    imported: Template
    scratch: Template
    sized: Template
    stacks: dict[str, cdk.Stack]
    filesystems: dict[str, LustreFileSystem]
    assembly: cdk.cx_api.CloudAssembly


@pytest.fixture(scope="module")
def variants() -> Iterator[Variants]:
    app = cdk.App()
    stacks: dict[str, cdk.Stack] = {}
    filesystems: dict[str, LustreFileSystem] = {}

    def stack(name: str) -> cdk.Stack:
        stacks[name] = cdk.Stack(app, name, env=TEST_ENV)
        return stacks[name]

    # Default: created bucket + file system with every default, one client group.
    s = stack("Default")
    vpc, subnet = _network(s)
    data = DataBucket(s, "Data")
    fs = LustreFileSystem(s, "Fsx", vpc=vpc, subnet=subnet, data_bucket=data)
    nodes = ec2.SecurityGroup(s, "Nodes", vpc=vpc, allow_all_outbound=False)
    fs.connections.allow_default_port_from(nodes)
    data.grant_read_write(_role(s, "Trainer"))
    filesystems["Default"] = fs

    # EFA: PERSISTENT_2 at 1000 MB/s/TiB, 4800 GiB, user-provisioned metadata.
    s = stack("Efa")
    vpc, subnet = _network(s)
    data = DataBucket(s, "Data")
    fs = LustreFileSystem(
        s,
        "Fsx",
        vpc=vpc,
        subnet=subnet,
        data_bucket=data,
        storage_capacity_gib=4800,
        throughput_mb_s_per_tib=1000,
        metadata_iops=12000,
        efa_enabled=True,
    )
    fs.allow_clients(ec2.SecurityGroup(s, "Nodes", vpc=vpc))
    filesystems["Efa"] = fs

    # Imported bucket with its own key; explicit associations.
    s = stack("Imported")
    vpc, subnet = _network(s)
    imported = DataBucket.from_data_bucket_attributes(
        s, "Data", bucket_name="my-training-data", key_arn=IMPORTED_KEY_ARN
    )
    fs = LustreFileSystem(
        s,
        "Fsx",
        vpc=vpc,
        subnet=subnet,
        data_bucket=imported,
        associations=[
            DataRepositoryAssociation(
                file_system_path="/corpora/web/",
                data_repository_path="s3://my-training-data/web-v2/",
                imported_file_chunk_size_mib=4096,
                import_events=(S3Event.NEW,),
            ),
            DataRepositoryAssociation(
                file_system_path="/outputs",
                import_events=(),
                export_events=(S3Event.NEW, S3Event.CHANGED),
                batch_import_metadata_on_create=False,
            ),
        ],
        automatic_backup_retention_days=0,
        log_level=LustreLogLevel.DISABLED,
    )
    imported.grant_read(_role(s, "Reader"))
    filesystems["Imported"] = fs

    # SCRATCH_2: no key, no backups, no throughput tier, no metadata configuration.
    s = stack("Scratch")
    vpc, subnet = _network(s)
    fs = LustreFileSystem(
        s,
        "Fsx",
        vpc=vpc,
        subnet=subnet,
        data_bucket=DataBucket(s, "Data"),
        deployment_type=LustreDeploymentType.SCRATCH_2,
        storage_capacity_gib=2400,
    )
    filesystems["Scratch"] = fs

    # Sized from a request.
    s = stack("Sized")
    vpc, subnet = _network(s)
    fs = LustreFileSystem(
        s,
        "Fsx",
        vpc=vpc,
        subnet=subnet,
        data_bucket=DataBucket(s, "Data"),
        sizing=FsxSizingRequest(
            model_parameters=7e9,
            target_checkpoint_write_seconds=120,
            dataset_size_gib=1000,
            checkpoints_to_keep=3,
        ),
    )
    cdk.CfnOutput(s, "Mount", value=fs.mount_command())
    filesystems["Sized"] = fs

    enable_nag(app)
    assembly = app.synth()
    yield Variants(
        default=Template.from_stack(stacks["Default"]),
        efa=Template.from_stack(stacks["Efa"]),
        imported=Template.from_stack(stacks["Imported"]),
        scratch=Template.from_stack(stacks["Scratch"]),
        sized=Template.from_stack(stacks["Sized"]),
        stacks=stacks,
        filesystems=filesystems,
        assembly=assembly,
    )


def _role(scope: cdk.Stack, name: str) -> iam.Role:
    """A consumer role; its wildcard findings come from the grants under test, which follow
    aws-cdk-lib's bucket grants (object ARNs with /*, s3:List*, kms:GenerateDataKey*)."""
    role = iam.Role(scope, name, assumed_by=iam.ServicePrincipal("ec2.amazonaws.com"))
    for finding in (
        "Action::s3:GetBucket*",
        "Action::s3:GetObject*",
        "Action::s3:List*",
        "Action::s3:DeleteObject*",
        "Action::s3:Abort*",
        "Action::kms:GenerateDataKey*",
        "Action::kms:ReEncrypt*",
        "Resource::<Data2D4B752F.Arn>/*",
        "Resource::arn:<AWS::Partition>:s3:::my-training-data/*",
    ):
        acknowledge(role, f"AwsSolutions-IAM5[{finding}]", "Test consumer of DataBucket grants.")
    return role


def _only(template: Template, resource_type: str) -> tuple[str, Any]:
    found = template.find_resources(resource_type)
    assert len(found) == 1, found.keys()
    return next(iter(found.items()))


# ----------------------------------------------------------------------------- data bucket


def test_bucket_is_encrypted_versioned_private_and_logged(variants: Variants) -> None:
    t = variants.default
    t.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {
                        "BucketKeyEnabled": True,
                        "ServerSideEncryptionByDefault": {
                            "SSEAlgorithm": "aws:kms",
                            "KMSMasterKeyID": {"Fn::GetAtt": ["DataKey5F086070", "Arn"]},
                        },
                    }
                ]
            },
            "VersioningConfiguration": {"Status": "Enabled"},
            "PublicAccessBlockConfiguration": {
                "BlockPublicAcls": True,
                "BlockPublicPolicy": True,
                "IgnorePublicAcls": True,
                "RestrictPublicBuckets": True,
            },
            "LoggingConfiguration": {
                "DestinationBucketName": {"Ref": "DataAccessLogsC0C25EE4"},
                "LogFilePrefix": "data-bucket/",
            },
        },
    )


def test_bucket_lifecycle_rules(variants: Variants) -> None:
    variants.default.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "LifecycleConfiguration": {
                "Rules": [
                    {
                        "Id": "AbortIncompleteMultipartUploads",
                        "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7},
                        "Status": "Enabled",
                    },
                    {
                        "Id": "ExpireNoncurrentCheckpoints",
                        "Prefix": "checkpoints/",
                        # the newest 3 noncurrent versions stay, whatever their age
                        "NoncurrentVersionExpiration": {
                            "NoncurrentDays": 30,
                            "NewerNoncurrentVersions": 3,
                        },
                        "ExpiredObjectDeleteMarker": True,
                        "Status": "Enabled",
                    },
                ]
            }
        },
    )


def test_bucket_policy_denies_plain_http_and_old_tls(variants: Variants) -> None:
    variants.default.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": "Data2D4B752F"},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
                            }
                        ),
                        Match.object_like(
                            {
                                "Effect": "Deny",
                                "Condition": {"NumericLessThan": {"s3:TlsVersion": 1.2}},
                            }
                        ),
                    ]
                )
            },
        },
    )


def test_log_bucket_s3_managed_and_allows_log_delivery(variants: Variants) -> None:
    t = variants.default
    t.has_resource_properties(
        "AWS::S3::Bucket",
        {
            "BucketEncryption": {
                "ServerSideEncryptionConfiguration": [
                    {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}
                ]
            },
        },
    )
    t.has_resource_properties(
        "AWS::S3::BucketPolicy",
        {
            "Bucket": {"Ref": "DataAccessLogsC0C25EE4"},
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "AllowDataBucketServerAccessLogs",
                                "Principal": {"Service": "logging.s3.amazonaws.com"},
                                "Action": "s3:PutObject",
                                "Condition": {
                                    "ArnLike": {
                                        "aws:SourceArn": {"Fn::GetAtt": ["Data2D4B752F", "Arn"]}
                                    },
                                    "StringEquals": {"aws:SourceAccount": "111122223333"},
                                },
                            }
                        )
                    ]
                )
            },
        },
    )


def test_bucket_key_rotates_and_lets_fsx_use_it_through_s3(variants: Variants) -> None:
    variants.default.has_resource_properties(
        "AWS::KMS::Key",
        {
            "EnableKeyRotation": True,
            "KeyPolicy": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Sid": "AllowFsxLustreDataRepositoriesThroughS3",
                                "Principal": {"AWS": "*"},
                                "Action": Match.array_with(["kms:Decrypt", "kms:GenerateDataKey*"]),
                                "Condition": {
                                    "StringEquals": {
                                        "kms:CallerAccount": "111122223333",
                                        "kms:ViaService": Match.any_value(),
                                    },
                                    "ArnLike": {
                                        "aws:PrincipalArn": {
                                            "Fn::Join": [
                                                "",
                                                [
                                                    "arn:",
                                                    {"Ref": "AWS::Partition"},
                                                    ":iam::111122223333:role/aws-service-role/"
                                                    "s3.data-source.lustre.fsx.amazonaws.com/"
                                                    "AWSServiceRoleForFSxS3Access_*",
                                                ],
                                            ]
                                        }
                                    },
                                    "StringLike": Match.any_value(),
                                },
                            }
                        )
                    ]
                )
            },
        },
    )
    assert variants.filesystems["Default"] is not None


def test_grant_read_write_includes_key(variants: Variants) -> None:
    variants.default.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {"Action": Match.array_with(["s3:DeleteObject*", "s3:PutObject"])}
                        ),
                        Match.object_like(
                            {
                                "Action": Match.array_with(["kms:Decrypt", "kms:GenerateDataKey*"]),
                                "Resource": {"Fn::GetAtt": ["DataKey5F086070", "Arn"]},
                            }
                        ),
                    ]
                )
            }
        },
    )


def test_imported_bucket_grants_and_warns_about_key_policy(variants: Variants) -> None:
    t = variants.imported
    t.resource_count_is("AWS::S3::Bucket", 0)
    t.resource_count_is("AWS::KMS::Key", 1)  # only the file system's own key
    t.has_resource_properties(
        "AWS::IAM::Policy",
        {
            "PolicyDocument": {
                "Statement": Match.array_with(
                    [
                        Match.object_like(
                            {
                                "Action": ["kms:Decrypt", "kms:DescribeKey"],
                                "Resource": IMPORTED_KEY_ARN,
                            }
                        )
                    ]
                )
            }
        },
    )
    Annotations.from_stack(variants.stacks["Imported"]).has_warning(
        "/Imported/Fsx", Match.string_like_regexp("fsx_data_repository_key_statement")
    )


def test_retain_and_pinned_logical_ids(variants: Variants) -> None:
    t = variants.default
    for logical_id, resource_type in [
        ("Data2D4B752F", "AWS::S3::Bucket"),
        ("DataKey5F086070", "AWS::KMS::Key"),
        ("DataAccessLogsC0C25EE4", "AWS::S3::Bucket"),
        ("Fsx636578FC", "AWS::FSx::FileSystem"),
        ("FsxKey83FC2C89", "AWS::KMS::Key"),
        # the retained file system keeps using its group: deleting it would fail the stack
        ("FsxSecurityGroup9CAF7527", "AWS::EC2::SecurityGroup"),
    ]:
        resource = t.to_json()["Resources"][logical_id]
        assert resource["Type"] == resource_type
        assert resource["DeletionPolicy"] == "Retain", logical_id
        assert resource["UpdateReplacePolicy"] == "Retain", logical_id
    # The log group has a fixed name (FSx logs only to /aws/fsx/...): it goes with its stack,
    # or a rollback or a redeploy after destroy fails with "already exists".
    logs = t.to_json()["Resources"]["FsxLogsBA5647B5"]
    assert logs["DeletionPolicy"] == "Delete"
    assert (
        logs["Properties"]["KmsKeyId"]
        == {"Fn::GetAtt": [Match.string_like_regexp("LogsKey"), "Arn"]}
        or "Fn::GetAtt" in logs["Properties"]["KmsKeyId"]
    )


# ----------------------------------------------------------------------------- file system


def test_file_system_defaults(variants: Variants) -> None:
    variants.default.has_resource_properties(
        "AWS::FSx::FileSystem",
        {
            "FileSystemType": "LUSTRE",
            "FileSystemTypeVersion": "2.15",
            "StorageType": "SSD",
            "StorageCapacity": 1200,
            "SubnetIds": ["subnet-0123456789abcdef0"],
            "SecurityGroupIds": [
                {"Fn::GetAtt": [Match.string_like_regexp("FsxSecurityGroup"), "GroupId"]}
            ],
            "KmsKeyId": {"Fn::GetAtt": ["FsxKey83FC2C89", "Arn"]},
            "LustreConfiguration": {
                "DeploymentType": "PERSISTENT_2",
                "PerUnitStorageThroughput": 250,
                "DataCompressionType": "LZ4",
                # linked to S3 by associations: FSx takes no backups; S3 is the durable copy
                "AutomaticBackupRetentionDays": 0,
                "DailyAutomaticBackupStartTime": Match.absent(),
                "WeeklyMaintenanceStartTime": "7:05:00",
                "MetadataConfiguration": {"Mode": "AUTOMATIC"},
                "LogConfiguration": {
                    "Level": "WARN_ERROR",
                    "Destination": {
                        "Fn::Join": [
                            "",
                            [
                                "arn:",
                                {"Ref": "AWS::Partition"},
                                Match.string_like_regexp(
                                    ":logs:us-east-1:111122223333:log-group:/aws/fsx/lustre/"
                                ),
                            ],
                        ]
                    },
                },
            },
        },
    )
    fs = variants.default.to_json()["Resources"]["Fsx636578FC"]
    assert "EfaEnabled" not in fs["Properties"]["LustreConfiguration"]
    group = variants.default.to_json()["Resources"]["FsxLogsBA5647B5"]["Properties"]
    assert group["LogGroupName"].startswith("/aws/fsx/")
    assert group["RetentionInDays"] == 365
    # created after its log group and its own security-group self rules, nothing else
    depends = set(fs["DependsOn"])
    assert "FsxLogsBA5647B5" in depends
    assert not any("Nodes" in d for d in depends)


def test_efa_variant(variants: Variants) -> None:
    t = variants.efa
    t.has_resource_properties(
        "AWS::FSx::FileSystem",
        {
            "StorageCapacity": 4800,
            "LustreConfiguration": Match.object_like(
                {
                    "PerUnitStorageThroughput": 1000,
                    "EfaEnabled": True,
                    "MetadataConfiguration": {"Mode": "USER_PROVISIONED", "Iops": 12000},
                }
            ),
        },
    )
    # all traffic: the group to itself, clients to the group, the group to clients
    t.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "IpProtocol": "-1",
            "GroupId": {"Fn::GetAtt": [Match.string_like_regexp("FsxSecurityGroup"), "GroupId"]},
            "SourceSecurityGroupId": {
                "Fn::GetAtt": [Match.string_like_regexp("FsxSecurityGroup"), "GroupId"]
            },
        },
    )
    t.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "IpProtocol": "-1",
            "GroupId": {"Fn::GetAtt": [Match.string_like_regexp("FsxSecurityGroup"), "GroupId"]},
            "SourceSecurityGroupId": {"Fn::GetAtt": [Match.string_like_regexp("Nodes"), "GroupId"]},
        },
    )
    t.has_resource_properties(
        "AWS::EC2::SecurityGroupIngress",
        {
            "IpProtocol": "-1",
            "GroupId": {"Fn::GetAtt": [Match.string_like_regexp("Nodes"), "GroupId"]},
            "SourceSecurityGroupId": {
                "Fn::GetAtt": [Match.string_like_regexp("FsxSecurityGroup"), "GroupId"]
            },
        },
    )


def test_scratch_variant(variants: Variants) -> None:
    t = variants.scratch
    _, fs = _only(t, "AWS::FSx::FileSystem")
    props = fs["Properties"]
    assert props["StorageCapacity"] == 2400
    assert "KmsKeyId" not in props
    lustre = props["LustreConfiguration"]
    assert lustre["DeploymentType"] == "SCRATCH_2"
    for absent in (
        "PerUnitStorageThroughput",
        "AutomaticBackupRetentionDays",
        "DailyAutomaticBackupStartTime",
        "MetadataConfiguration",
    ):
        assert absent not in lustre
    keys = t.find_resources("AWS::KMS::Key")
    # the data bucket's and the stack's log-group key only
    assert sorted(k.rstrip("0123456789ABCDEF") for k in keys) == ["DataKey", "LogsKey"]


def test_sized_variant_uses_the_sizing_result(variants: Variants) -> None:
    fs = variants.filesystems["Sized"]
    assert fs.sizing_result is not None
    assert (fs.storage_capacity_gib, fs.throughput_mb_s_per_tib) == (2400, 500)
    variants.sized.has_resource_properties(
        "AWS::FSx::FileSystem",
        {
            "StorageCapacity": 2400,
            "LustreConfiguration": Match.object_like({"PerUnitStorageThroughput": 500}),
        },
    )
    assert variants.filesystems["Default"].sizing_result is None


def test_imported_variant_disables_backups_and_logging(variants: Variants) -> None:
    _, fs = _only(variants.imported, "AWS::FSx::FileSystem")
    lustre = fs["Properties"]["LustreConfiguration"]
    assert lustre["AutomaticBackupRetentionDays"] == 0
    assert "DailyAutomaticBackupStartTime" not in lustre
    assert lustre["LogConfiguration"] == {"Level": "DISABLED"}
    variants.imported.resource_count_is("AWS::Logs::LogGroup", 0)


# ----------------------------------------------------------------------------- associations


def test_default_associations(variants: Variants) -> None:
    t = variants.default
    resources = t.to_json()["Resources"]
    datasets = resources["FsxAssociationsdatasets0F6327C1"]["Properties"]
    checkpoints = resources["FsxAssociationscheckpointsA87D56D0"]["Properties"]
    assert datasets == {
        "FileSystemId": {"Ref": "Fsx636578FC"},
        "FileSystemPath": "/datasets",
        "DataRepositoryPath": {"Fn::Join": ["", ["s3://", {"Ref": "Data2D4B752F"}, "/datasets/"]]},
        "BatchImportMetaDataOnCreate": True,
        "S3": {"AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]}},
    }
    assert checkpoints["FileSystemPath"] == "/checkpoints"
    assert checkpoints["DataRepositoryPath"] == {
        "Fn::Join": ["", ["s3://", {"Ref": "Data2D4B752F"}, "/checkpoints/"]]
    }
    # A checkpoint deleted on Lustre (rotation, a mistaken rm) is not deleted from S3.
    assert checkpoints["S3"] == {
        "AutoImportPolicy": {"Events": ["NEW", "CHANGED", "DELETED"]},
        "AutoExportPolicy": {"Events": ["NEW", "CHANGED"]},
    }
    # FSx handles one association change of a file system at a time: created one by one.
    assert "DependsOn" not in resources["FsxAssociationsdatasets0F6327C1"]
    assert resources["FsxAssociationscheckpointsA87D56D0"]["DependsOn"] == [
        "FsxAssociationsdatasets0F6327C1"
    ]
    assert set(variants.filesystems["Default"].associations) == {"/datasets", "/checkpoints"}


def test_explicit_associations(variants: Variants) -> None:
    t = variants.imported
    t.has_resource_properties(
        "AWS::FSx::DataRepositoryAssociation",
        {
            "FileSystemPath": "/corpora/web",
            "DataRepositoryPath": "s3://my-training-data/web-v2/",
            "ImportedFileChunkSize": 4096,
            "BatchImportMetaDataOnCreate": True,
            "S3": {"AutoImportPolicy": {"Events": ["NEW"]}},
        },
    )
    t.has_resource_properties(
        "AWS::FSx::DataRepositoryAssociation",
        {
            "FileSystemPath": "/outputs",
            "DataRepositoryPath": "s3://my-training-data/outputs/",
            "BatchImportMetaDataOnCreate": False,
            "S3": {"AutoExportPolicy": {"Events": ["NEW", "CHANGED"]}},
        },
    )
    paths = {
        c.node.id
        for c in variants.filesystems["Imported"].node.find_child("Associations").node.children
    }
    assert paths == {"corpora::web", "outputs"}


# ----------------------------------------------------------------------------- security group


def _ingress(template: Template) -> list[dict[str, Any]]:
    return [
        r["Properties"] for r in template.find_resources("AWS::EC2::SecurityGroupIngress").values()
    ]


def test_lustre_ports_from_itself_and_clients(variants: Variants) -> None:
    rules = _ingress(variants.default)

    def has(source: str, from_port: int, to_port: int) -> bool:
        return any(
            r["IpProtocol"] == "tcp"
            and r["FromPort"] == from_port
            and r["ToPort"] == to_port
            and r["GroupId"]["Fn::GetAtt"][0].startswith("FsxSecurityGroup")
            and r["SourceSecurityGroupId"]["Fn::GetAtt"][0].startswith(source)
            for r in rules
        )

    for source in ("FsxSecurityGroup", "Nodes"):
        assert has(source, 988, 988), source
        assert has(source, 1018, 1023), source
    assert not any(r["IpProtocol"] == "-1" for r in rules)
    # the client group restricts egress, so it gets matching egress rules
    egress = [
        r["Properties"]
        for r in variants.default.find_resources("AWS::EC2::SecurityGroupEgress").values()
    ]
    assert {(r["FromPort"], r["ToPort"]) for r in egress} == {(988, 988), (1018, 1023)}


def test_connections_default_port_is_988(variants: Variants) -> None:
    fs = variants.filesystems["Default"]
    port = fs.connections.default_port
    assert port is not None and port.to_string() == "988"
    assert ec2.IConnectable in type(fs).__jsii_ifaces__  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- helpers


def test_mount_command_renders_tokens(variants: Variants) -> None:
    output = variants.sized.find_outputs("Mount")["Mount"]["Value"]
    parts = output["Fn::Join"][1]
    assert parts[0] == "mount -t lustre -o relatime,flock "
    assert parts[1] == {"Fn::GetAtt": ["Fsx636578FC", "DNSName"]}
    assert parts[2] == "@tcp:/"
    assert parts[3] == {"Fn::GetAtt": ["Fsx636578FC", "LustreMountName"]}
    assert parts[4] == " /fsx"


def test_kubernetes_static_volume(variants: Variants) -> None:
    fs = variants.filesystems["Sized"]
    stack = variants.stacks["Sized"]
    pv, pvc = (stack.resolve(m) for m in fs.kubernetes_static_volume(namespace="training"))
    assert pv["kind"] == "PersistentVolume" and pvc["kind"] == "PersistentVolumeClaim"
    spec = pv["spec"]
    assert spec["capacity"] == {"storage": "2400Gi"}
    assert spec["accessModes"] == ["ReadWriteMany"]
    assert spec["persistentVolumeReclaimPolicy"] == "Retain"
    assert spec["storageClassName"] == ""
    assert spec["mountOptions"] == ["flock"]
    assert spec["claimRef"] == {"namespace": "training", "name": "fsx-lustre"}
    csi = spec["csi"]
    assert csi["driver"] == "fsx.csi.aws.com"
    assert csi["volumeHandle"] == {"Ref": "Fsx636578FC"}
    assert csi["volumeAttributes"]["dnsname"]["Fn::GetAtt"][1] == "DNSName"
    assert csi["volumeAttributes"]["mountname"]["Fn::GetAtt"][1] == "LustreMountName"
    assert pvc["metadata"] == {"name": "fsx-lustre", "namespace": "training"}
    assert pvc["spec"]["volumeName"] == "fsx-lustre"
    assert pvc["spec"]["resources"] == {"requests": {"storage": "2400Gi"}}
    json.dumps([pv, pvc])  # plain data, ready for add_manifest


# ----------------------------------------------------------------------------- quality gates


@pytest.mark.parametrize("name", ["Default", "Efa", "Imported", "Scratch", "Sized"])
def test_cfn_lint_clean(variants: Variants, name: str) -> None:
    artifact = variants.assembly.get_stack_by_name(name)
    template = json.dumps(artifact.template)
    assert cfn_lint(template, "us-east-1") == []


def test_nag_ran_clean(variants: Variants) -> None:
    # enable_nag fails synthesis on any unacknowledged finding; reaching here means clean.
    assert set(variants.stacks) == {"Default", "Efa", "Imported", "Scratch", "Sized"}


# ----------------------------------------------------------------------------- validation


@pytest.fixture
def fresh() -> Callable[..., LustreFileSystem]:
    """Build a LustreFileSystem in a throwaway stack (no synthesis)."""

    def build(**kwargs: Any) -> LustreFileSystem:
        stack = cdk.Stack(cdk.App(), "V", env=TEST_ENV)
        vpc, subnet = _network(stack)
        bucket = kwargs.pop("data_bucket", None) or DataBucket.from_data_bucket_attributes(
            stack, "Data", bucket_name="bucket-a"
        )
        return LustreFileSystem(stack, "Fsx", vpc=vpc, subnet=subnet, data_bucket=bucket, **kwargs)

    return build


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"storage_capacity_gib": 2000}, r"storage_capacity_gib: .*2400.*got 2000"),
        (
            {"throughput_mb_s_per_tib": 200},
            r"throughput_mb_s_per_tib: .*125, 250, 500, 1000.*got 200",
        ),
        (
            {"deployment_type": LustreDeploymentType.PERSISTENT_1, "throughput_mb_s_per_tib": 250},
            r"throughput_mb_s_per_tib: for PERSISTENT_1 must be one of 50, 100, 200",
        ),
        (
            {"deployment_type": LustreDeploymentType.SCRATCH_2, "throughput_mb_s_per_tib": 250},
            r"throughput_mb_s_per_tib: must not be set for SCRATCH_2",
        ),
        ({"metadata_iops": 2000}, r"metadata_iops: must be 1500, 3000, 6000, 12000.*got 2000"),
        (
            {"deployment_type": LustreDeploymentType.PERSISTENT_1, "metadata_iops": 1500},
            r"metadata_iops: metadata configuration is only available on PERSISTENT_2",
        ),
        (
            {"deployment_type": LustreDeploymentType.PERSISTENT_1, "efa_enabled": True},
            r"efa_enabled: EFA needs PERSISTENT_2",
        ),
        (
            {"efa_enabled": True, "storage_capacity_gib": 9600, "throughput_mb_s_per_tib": 250},
            r"storage_capacity_gib: an EFA-enabled file system at 250 MB/s/TiB needs a multiple "
            r"of 19200",
        ),
        ({"automatic_backup_retention_days": 91}, r"automatic_backup_retention_days: .*0 .* 90"),
        (
            {
                "deployment_type": LustreDeploymentType.SCRATCH_2,
                "automatic_backup_retention_days": 3,
            },
            r"SCRATCH_2 file systems have no automatic backups",
        ),
        ({"daily_backup_start_time_utc": "24:00"}, r"daily_backup_start_time_utc: must be 'HH:MM'"),
        # FSx wants exactly HH:MM (5 characters) and d:HH:MM (7)
        ({"daily_backup_start_time_utc": "0300"}, r"daily_backup_start_time_utc: must be 'HH:MM'"),
        (
            {"weekly_maintenance_start_time_utc": "7:0500"},
            r"weekly_maintenance_start_time_utc: must be 'd:HH:MM'",
        ),
        (
            {"weekly_maintenance_start_time_utc": "0:05:00"},
            r"weekly_maintenance_start_time_utc: must be 'd:HH:MM'",
        ),
        (
            {
                "sizing": FsxSizingRequest(
                    checkpoint_size_gib=10, target_checkpoint_write_seconds=60
                ),
                "storage_capacity_gib": 1200,
            },
            r"give either sizing or storage_capacity_gib",
        ),
        (
            {"sizing": FsxSizingRequest(target_checkpoint_write_seconds=60)},
            r"sizing\.checkpoint_size_gib / model_parameters",
        ),
        (
            {
                "sizing": FsxSizingRequest(
                    checkpoint_size_gib=10, target_checkpoint_write_seconds=60
                ),
                "deployment_type": LustreDeploymentType.PERSISTENT_1,
            },
            r"deployment_type: must be PERSISTENT_2 when sizing is given",
        ),
    ],
)
def test_file_system_validation(
    fresh: Callable[..., LustreFileSystem], kwargs: dict[str, Any], pattern: str
) -> None:
    with pytest.raises(FmValidationError, match=pattern):
        fresh(**kwargs)


def test_backups_with_associations_are_refused(fresh: Callable[..., LustreFileSystem]) -> None:
    with pytest.raises(
        FmValidationError,
        match=r"automatic_backup_retention_days: FSx does not back up file systems linked to S3",
    ):
        fresh(automatic_backup_retention_days=7)


def test_backups_stay_on_without_associations(fresh: Callable[..., LustreFileSystem]) -> None:
    fs = fresh(associations=[])
    lustre = Template.from_stack(cdk.Stack.of(fs)).find_resources("AWS::FSx::FileSystem")
    (config,) = (r["Properties"]["LustreConfiguration"] for r in lustre.values())
    assert config["AutomaticBackupRetentionDays"] == 7
    assert config["DailyAutomaticBackupStartTime"] == "03:00"


def test_checkpoint_deletes_are_exported_only_when_asked() -> None:
    from fm_constructs.storage.associations import default_associations

    (_, default) = default_associations()
    assert list(default.export_events) == [S3Event.NEW, S3Event.CHANGED]
    (_, asked) = default_associations(export_checkpoint_deletes=True)
    assert list(asked.export_events) == [S3Event.NEW, S3Event.CHANGED, S3Event.DELETED]


def test_imported_group_gets_explicit_efa_egress(fresh: Callable[..., LustreFileSystem]) -> None:
    stack = cdk.Stack(cdk.App(), "E", env=TEST_ENV)
    vpc, subnet = _network(stack)
    # CDK's default for an imported group claims open egress; its real egress may not be.
    group = ec2.SecurityGroup.from_security_group_id(stack, "Given", "sg-0123456789abcdef0")
    nodes = ec2.SecurityGroup.from_security_group_id(stack, "Nodes", "sg-0fedcba9876543210")
    fs = LustreFileSystem(
        stack,
        "Fsx",
        vpc=vpc,
        subnet=subnet,
        data_bucket=DataBucket.from_data_bucket_attributes(stack, "Data", bucket_name="bucket-b"),
        storage_capacity_gib=4800,
        throughput_mb_s_per_tib=1000,
        efa_enabled=True,
        security_group=group,
    )
    fs.allow_clients(nodes)
    egress = Template.from_stack(stack).find_resources("AWS::EC2::SecurityGroupEgress")
    rules = {
        (r["Properties"]["GroupId"], r["Properties"]["DestinationSecurityGroupId"])
        for r in egress.values()
        if r["Properties"]["IpProtocol"] == "-1"
    }
    assert ("sg-0123456789abcdef0", "sg-0123456789abcdef0") in rules  # to itself
    assert ("sg-0123456789abcdef0", "sg-0fedcba9876543210") in rules  # to the clients


def test_scratch_rejects_kms_key(fresh: Callable[..., LustreFileSystem]) -> None:
    stack = cdk.Stack(cdk.App(), "K", env=TEST_ENV)
    key = kms.Key.from_key_arn(stack, "Key", IMPORTED_KEY_ARN)
    with pytest.raises(FmValidationError, match=r"kms_key: SCRATCH_2 file systems are encrypted"):
        fresh(deployment_type=LustreDeploymentType.SCRATCH_2, kms_key=key)


def _assoc(path: str, **kwargs: Any) -> DataRepositoryAssociation:
    return DataRepositoryAssociation(file_system_path=path, **kwargs)


@pytest.mark.parametrize(
    ("associations", "pattern"),
    [
        ([_assoc("/a"), _assoc("/a/")], r"associations\[1\]\.file_system_path: duplicates"),
        ([_assoc("/a"), _assoc("/a/b")], r"associations\[1\]\.file_system_path: overlaps"),
        ([_assoc("/"), _assoc("/x")], r"overlaps .*'/' is only allowed as the only"),
        ([_assoc("datasets")], r"associations\[0\]\.file_system_path: must be an absolute"),
        ([_assoc("/a//b")], r"must be an absolute directory"),
        (
            [_assoc("/a", data_repository_path="https://bucket-a/a/")],
            r"associations\[0\]\.data_repository_path: must be an S3 URL",
        ),
        (
            [_assoc("/a", data_repository_path="s3://other-bucket/a/")],
            r"data_repository_path: must be inside the data bucket: start with 's3://bucket-a/'",
        ),
        (
            [
                _assoc("/a", data_repository_path="s3://bucket-a/same/"),
                _assoc("/b", data_repository_path="s3://bucket-a/same"),
            ],
            r"associations\[1\]\.data_repository_path: duplicates",
        ),
        (
            [_assoc("/a", imported_file_chunk_size_mib=0)],
            r"imported_file_chunk_size_mib: .*1 to 512,000",
        ),
        ([_assoc("/a", imported_file_chunk_size_mib=512001)], r"imported_file_chunk_size_mib"),
        ([_assoc("/a", import_events=("NEW", "NEW"))], r"import_events: must be distinct values"),
        ([_assoc("/a", export_events=("CREATED",))], r"export_events: must be distinct values"),
        ([_assoc(f"/d{i}") for i in range(9)], r"associations: FSx allows at most 8"),
        ([_assoc("/a::b"), _assoc("/a/b")], r"maps to the same construct id 'a::b'"),
    ],
)
def test_association_validation(
    fresh: Callable[..., LustreFileSystem],
    associations: list[DataRepositoryAssociation],
    pattern: str,
) -> None:
    with pytest.raises(FmValidationError, match=pattern):
        fresh(associations=associations)


def test_root_path_alone_is_valid_and_nested_s3_prefixes_warn(
    fresh: Callable[..., LustreFileSystem],
) -> None:
    fs = fresh(associations=[_assoc("/")])
    assert set(fs.associations) == {"/"}
    fs = fresh(
        associations=[
            _assoc("/a", data_repository_path="s3://bucket-a/data/"),
            _assoc("/b", data_repository_path="s3://bucket-a/data/sub/"),
        ]
    )
    warnings = [e.data for e in fs.node.metadata if e.type == "aws:cdk:warning"]
    assert any("nested S3 prefixes" in str(w) for w in warnings)


def test_all_problems_reported_together(fresh: Callable[..., LustreFileSystem]) -> None:
    with pytest.raises(FmValidationError) as raised:
        fresh(
            storage_capacity_gib=1000,
            throughput_mb_s_per_tib=300,
            associations=[_assoc("relative")],
        )
    assert len(raised.value.problems) == 3


def test_tokens_are_not_validated(fresh: Callable[..., LustreFileSystem]) -> None:
    stack = cdk.Stack(cdk.App(), "T", env=TEST_ENV)
    capacity = cdk.Token.as_number(cdk.CfnParameter(stack, "Capacity", type="Number"))
    fs = fresh(storage_capacity_gib=capacity)
    assert cdk.Token.is_unresolved(fs.storage_capacity_gib)


def test_data_bucket_validation() -> None:
    stack = cdk.Stack(cdk.App(), "B", env=TEST_ENV)
    with pytest.raises(FmValidationError) as raised:
        DataBucket(stack, "Data", noncurrent_version_expiration_days=0, checkpoint_prefix="/ckpt")
    text = str(raised.value)
    assert "noncurrent_version_expiration_days: must be a whole number of days >= 1" in text
    assert "checkpoint_prefix: must be a non-empty S3 key prefix" in text
    with pytest.raises(FmValidationError, match=r"bucket_name: must be a bucket name"):
        DataBucket.from_data_bucket_attributes(stack, "Imp", bucket_name="s3://x")
    with pytest.raises(FmValidationError, match=r"key_arn: must be a KMS key ARN"):
        DataBucket.from_data_bucket_attributes(stack, "Imp2", bucket_name="x", key_arn="alias/x")


def test_mount_point_must_be_absolute(fresh: Callable[..., LustreFileSystem]) -> None:
    with pytest.raises(FmValidationError, match=r"mount_point: must be an absolute path"):
        fresh().mount_command("fsx")


def test_access_log_bucket_is_versioned(variants: Variants) -> None:
    logs = variants.default.to_json()["Resources"]["DataAccessLogsC0C25EE4"]["Properties"]
    assert logs["VersioningConfiguration"] == {"Status": "Enabled"}
    (rule,) = logs["LifecycleConfiguration"]["Rules"]
    assert rule["NoncurrentVersionExpiration"] == {"NoncurrentDays": 30}


def test_fsx_key_statement_carries_its_reason_at_the_resource(variants: Variants) -> None:
    key = variants.default.to_json()["Resources"]["DataKey5F086070"]
    (skip,) = key["Metadata"]["checkov"]["skip"]
    assert skip["id"] == "CKV_AWS_33"
    assert "AWSServiceRoleForFSxS3Access_" in skip["comment"]


def test_log_groups_are_encrypted_with_a_key_cloudwatch_logs_may_use(variants: Variants) -> None:
    t = variants.default.to_json()["Resources"]
    (group,) = (r for r in t.values() if r["Type"] == "AWS::Logs::LogGroup")
    key_id = group["Properties"]["KmsKeyId"]["Fn::GetAtt"][0]
    statements = t[key_id]["Properties"]["KeyPolicy"]["Statement"]
    (logs,) = (s for s in statements if s.get("Sid") == "AllowCloudWatchLogsOfThisAccount")
    assert logs["Principal"] == {"Service": "logs.us-east-1.amazonaws.com"}
    assert logs["Condition"]["ArnLike"]["kms:EncryptionContext:aws:logs:arn"] == {
        "Fn::Join": [
            "",
            ["arn:", {"Ref": "AWS::Partition"}, ":logs:us-east-1:111122223333:log-group:*"],
        ]
    }
