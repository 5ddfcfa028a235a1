"""The fast shared tier: FSx for Lustre linked to the data bucket.

Datasets load lazily from S3 into ``/datasets``; checkpoints written to ``/checkpoints`` export
to S3 automatically. Built on the ``AWS::FSx::FileSystem`` L1 rather than aws-cdk-lib's
``LustreFileSystem`` L2: the L2 has no metadata configuration, EFA, Lustre logging or data
repository associations (they would be untyped overrides), it raises its own unnamed errors for
rules validated here with named fields, and its security group does not know EFA's rules. The
L1 takes every property typed, and the security group and ``connections`` are built here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Unpack

import jsii
from aws_cdk import Annotations, ArnFormat, Names, RemovalPolicy, Stack, Token
from aws_cdk import aws_ec2 as ec2
from aws_cdk import aws_fsx as fsx
from aws_cdk import aws_kms as kms
from aws_cdk import aws_logs as logs
from constructs import Construct, IConstruct

from fm_constructs import pins
from fm_constructs.errors import Problems
from fm_constructs.planning.fsx_sizing import (
    DEFAULT_PER_UNIT_THROUGHPUT,
    DEFAULT_STORAGE_CAPACITY_GIB,
    FsxSizingRequest,
    FsxSizingResult,
    LustreDeploymentType,
    size_fsx_lustre,
)
from fm_constructs.policy import logs_encryption_key
from fm_constructs.rules import constructs as codes
from fm_constructs.rules.findings import Finding, warnings
from fm_constructs.rules.storage import (
    data_repository_associations,
    lustre_file_system,
    lustre_settings,
    lustre_sizing_request,
)
from fm_constructs.storage.associations import (
    DataRepositoryAssociation,
    create_associations,
    default_associations,
    normalize_file_system_path,
    warn,
)
from fm_constructs.storage.data_bucket import IDataBucket
from fm_constructs.storage.imported_lustre import (
    ImportedLustreFileSystem,
    LustreFileSystemAttributes,
)
from fm_constructs.storage.lustre_client import LustreClientAccess
from fm_constructs.storage.lustre_connections import LustreConnections
from fm_constructs.storage.lustre_interface import ILustreFileSystem

#: Lustre version of the file systems (``FileSystemTypeVersion``), pinned in pins.toml.
LUSTRE_VERSION = pins.service("fsx-lustre").version
#: FSx only writes Lustre logs to log groups whose name starts with this prefix.
FSX_LOG_GROUP_PREFIX = "/aws/fsx/"
#: Daily backups of a persistent file system without data repository associations. With
#: associations the default is 0: FSx does not back up file systems linked to S3 ("File system
#: backups aren't supported on file systems that are linked to an Amazon S3 data repository",
#: FSx for Lustre User Guide; aws-parallelcluster's fsx_validators rejects the combination).
#: S3 is then the durable copy.
DEFAULT_BACKUP_RETENTION_DAYS = 7
#: FSx's DailyTime (HH:MM, 5 characters) and WeeklyTime (d:HH:MM, 7 characters).


class LustreLogLevel(StrEnum):
    """Which data-repository events FSx logs to CloudWatch Logs."""

    WARN_ERROR = "WARN_ERROR"
    WARN_ONLY = "WARN_ONLY"
    ERROR_ONLY = "ERROR_ONLY"
    DISABLED = "DISABLED"


@jsii.implements(ec2.IConnectable)
class LustreFileSystem(LustreClientAccess, Construct):
    """FSx for Lustre (PERSISTENT_2 SSD by default) in one subnet, linked to the data bucket.

    Sizing: give ``storage_capacity_gib``/``throughput_mb_s_per_tib``, or ``sizing`` (the
    cheapest PERSISTENT_2 configuration meeting a checkpoint write-time target, see
    :func:`fm_constructs.planning.fsx_sizing.size_fsx_lustre`), not both; with neither, 1200 GiB
    at the deployment type's default tier (250 MB/s/TiB on PERSISTENT_2).

    Defaults: Lustre 2.15, LZ4 compression, metadata configuration AUTOMATIC (``metadata_iops``
    switches to USER_PROVISIONED), a created KMS key with rotation, Lustre logging (WARN_ERROR)
    to a created ``/aws/fsx/...`` log group encrypted with the stack's logs key, associations
    ``/datasets`` <- ``s3://<bucket>/datasets/`` and ``/checkpoints`` <-> ``s3://<bucket>/
    checkpoints/`` (deletes on Lustre are not exported, see :func:`default_associations`), and
    Retain on the file system, its key and its security group.

    Backups: none with associations (FSx does not back up file systems linked to S3; the bucket
    is the durable copy, and asking for backups then is an error); 7 days of daily backups
    without them.

    Teardown: the file system is retained and so is its security group, so deleting the stack
    leaves both behind instead of failing on a group still in use. The log group is deleted
    with the stack: its name must be fixed (FSx only logs to ``/aws/fsx/...``), and a retained
    log group with a fixed name would make the next deploy fail with "already exists". The
    file system's network interfaces stay in the subnet: delete the file system (after its
    exports finished) before the stack that owns the VPC (docs/storage.md, "Tear down").

    Children (construct ids are a contract): ``Resource`` (the file system), ``Key``,
    ``SecurityGroup``, ``Logs``, ``Associations/<path>`` (``/a/b`` -> ``a::b``).

    ``defer_associations``: create the associations later, with :meth:`add_associations`
    under a scope of the caller's choice (``associations`` is empty until then). FSx creates
    the associations of a file system one after another (a few minutes each); created in the
    stack of the file system's clients, they link it to S3 while the clients start, instead of
    holding back every stack that waits for the file system.

    Clients: ``fs.connections.allow_default_port_from(nodes)`` opens TCP 988 and 1018-1023 (all
    traffic both ways with EFA) between the nodes' and the file system's security groups.
    """

    #: The code of this construct's argument problems (docs/reference/errors.md).
    problem_code = codes.LUSTRE

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        vpc: ec2.IVpc,
        subnet: ec2.ISubnet,
        data_bucket: IDataBucket,
        associations: Sequence[DataRepositoryAssociation] | None = None,
        storage_capacity_gib: int | None = None,
        throughput_mb_s_per_tib: int | None = None,
        sizing: FsxSizingRequest | None = None,
        deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2,
        metadata_iops: int | None = None,
        efa_enabled: bool = False,
        kms_key: kms.IKey | None = None,
        automatic_backup_retention_days: int | None = None,
        daily_backup_start_time_utc: str = "03:00",
        weekly_maintenance_start_time_utc: str = "7:05:00",
        log_level: LustreLogLevel = LustreLogLevel.WARN_ERROR,
        log_retention: logs.RetentionDays = logs.RetentionDays.ONE_YEAR,
        security_group: ec2.ISecurityGroup | None = None,
        removal_policy: RemovalPolicy = RemovalPolicy.RETAIN,
        defer_associations: bool = False,
    ) -> None:
        super().__init__(scope, construct_id)
        problems = Problems.of(self)
        deployment_type = LustreDeploymentType(deployment_type)
        persistent = deployment_type is not LustreDeploymentType.SCRATCH_2
        chosen = list(default_associations() if associations is None else associations)

        # -- settings: sized, checked and defaulted before anything is created ----------------
        self.sizing_result: FsxSizingResult | None = None
        storage_capacity_gib, throughput_mb_s_per_tib = self._size(
            problems,
            sizing,
            deployment_type=deployment_type,
            storage_capacity_gib=storage_capacity_gib,
            throughput_mb_s_per_tib=throughput_mb_s_per_tib,
            efa_enabled=efa_enabled,
        )
        problems.adopt(
            lustre_settings(
                deployment_type=deployment_type,
                storage_capacity_gib=_literal(storage_capacity_gib),
                throughput_mb_s_per_tib=_literal(throughput_mb_s_per_tib),
                metadata_iops=_literal(metadata_iops),
                efa_enabled=efa_enabled,
            )
        )
        problems.adopt(
            lustre_file_system(
                deployment_type=deployment_type,
                kms_key=None if kms_key is None else str(kms_key),
                automatic_backup_retention_days=automatic_backup_retention_days,
                associated=bool(chosen),
                daily_backup_start_time_utc=daily_backup_start_time_utc,
                weekly_maintenance_start_time_utc=weekly_maintenance_start_time_utc,
            )
        )
        if automatic_backup_retention_days is None:
            automatic_backup_retention_days = (
                DEFAULT_BACKUP_RETENTION_DAYS if persistent and not chosen else 0
            )
        found = data_repository_associations(chosen, bucket_name=data_bucket.bucket_name)
        problems.add_findings(found)
        problems.raise_if_any()
        self._warn_about_associations(found, chosen, data_bucket)

        self.deployment_type = deployment_type
        self.storage_capacity_gib: int = storage_capacity_gib
        self.throughput_mb_s_per_tib: int | None = throughput_mb_s_per_tib
        self.efa_enabled = efa_enabled
        self.metadata_iops = metadata_iops

        # -- network, key and logs, then the file system --------------------------------------
        self.security_group: ec2.ISecurityGroup = (
            security_group
            if security_group is not None
            else self._create_security_group(vpc, removal_policy)
        )
        self.connections = LustreConnections(
            security_groups=[self.security_group],
            efa_enabled=efa_enabled,
            explicit_egress_scope=self if security_group is not None else None,
        )
        self_rules = self._allow_servers_internally()
        self.kms_key: kms.IKey | None = None
        if persistent:
            self.kms_key = kms_key or self._create_key(removal_policy)
        self.log_group: logs.LogGroup | None = None
        log_configuration = self._set_up_logging(log_level, log_retention)
        self.file_system = self._create_file_system(
            subnet,
            self._lustre_configuration(
                automatic_backup_retention_days=automatic_backup_retention_days,
                daily_backup_start_time_utc=daily_backup_start_time_utc,
                weekly_maintenance_start_time_utc=weekly_maintenance_start_time_utc,
                log_configuration=log_configuration,
            ),
            removal_policy=removal_policy,
            self_rules=self_rules,
        )
        self.file_system_id: str = self.file_system.ref
        self.dns_name: str = self.file_system.attr_dns_name
        self.mount_name: str = self.file_system.attr_lustre_mount_name

        # -- data repository associations (now, or later with add_associations) ---------------
        self._pending_associations = tuple(chosen)
        #: The file-system directories linked to the bucket (``/datasets``, ``/checkpoints``
        #: by default), normalized, known before their associations exist.
        self.association_paths: tuple[str, ...] = tuple(
            normalize_file_system_path(a.file_system_path) for a in chosen
        )
        self._bucket_name = data_bucket.bucket_name
        self.associations: Mapping[str, fsx.CfnDataRepositoryAssociation] = {}
        if not defer_associations:
            self.add_associations(self)

    # ----------------------------------------------------------------------------- settings

    def _size(
        self,
        problems: Problems,
        sizing: FsxSizingRequest | None,
        *,
        deployment_type: LustreDeploymentType,
        storage_capacity_gib: int | None,
        throughput_mb_s_per_tib: int | None,
        efa_enabled: bool,
    ) -> tuple[int, int | None]:
        """The storage capacity and per-unit throughput: from ``sizing`` when given (kept in
        ``sizing_result``), else as given, else the defaults (no throughput on SCRATCH_2).
        The smallest size is announced, not silent, as it may be far from what the jobs
        need."""
        if sizing is not None:
            problems.adopt(
                lustre_sizing_request(
                    deployment_type=deployment_type,
                    storage_capacity_gib=storage_capacity_gib,
                    throughput_mb_s_per_tib=throughput_mb_s_per_tib,
                )
            )
            if efa_enabled and not sizing.efa_enabled:
                sizing = dataclasses.replace(sizing, efa_enabled=True)
            problems.add_findings(f.under("sizing.") for f in sizing.findings())
            if not problems:
                self.sizing_result = size_fsx_lustre(sizing)
                storage_capacity_gib = self.sizing_result.storage_capacity_gib
                throughput_mb_s_per_tib = self.sizing_result.throughput_mb_s_per_tib
        if storage_capacity_gib is None:
            storage_capacity_gib = DEFAULT_STORAGE_CAPACITY_GIB
            Annotations.of(self).add_info(
                f"No storage_capacity_gib or sizing: {DEFAULT_STORAGE_CAPACITY_GIB} GiB, the "
                "smallest size. Give storage_capacity_gib, or sizing=FsxSizingRequest(...) to "
                "size it for checkpoints and reads."
            )
        if throughput_mb_s_per_tib is None:
            throughput_mb_s_per_tib = DEFAULT_PER_UNIT_THROUGHPUT[deployment_type]
        return storage_capacity_gib, throughput_mb_s_per_tib

    def _warn_about_associations(
        self,
        found: Sequence[Finding],
        chosen: Sequence[DataRepositoryAssociation],
        data_bucket: IDataBucket,
    ) -> None:
        """The associations' warnings, and one when the bucket's key may not let FSx in (a
        key DataBucket did not create has no statement for FSx's data repositories)."""
        warn(self, [f.message() for f in warnings(found)])
        if chosen and not data_bucket.key_allows_fsx_data_repositories:
            Annotations.of(self).add_warning_v2(
                "fm:fsx-data-bucket-key-policy",
                "The data bucket's KMS key was not created by DataBucket, so its policy may not "
                "let FSx read and write the bucket; add "
                "DataBucket.fsx_data_repository_key_statement(...) to the key policy, or the "
                "associations will fail to import and export.",
            )

    # ----------------------------------------------------------------------------- resources

    def _create_security_group(
        self, vpc: ec2.IVpc, removal_policy: RemovalPolicy
    ) -> ec2.SecurityGroup:
        """The file system's group (``SecurityGroup``). Lustre servers talk to each other and
        to clients on 988 and 1018-1023; outbound stays open (FSx servers call back to clients
        and reach S3 for associations). It gets the file system's removal policy: the
        retained file system keeps using it, and deleting it with the stack would fail ("has a
        dependent object") and leave the stack DELETE_FAILED."""
        group = ec2.SecurityGroup(
            self,
            "SecurityGroup",
            vpc=vpc,
            description=f"FSx for Lustre {self.node.path}: TCP 988 and 1018-1023"
            + (", all traffic for EFA" if self.efa_enabled else ""),
            allow_all_outbound=True,
        )
        group.apply_removal_policy(removal_policy)
        return group

    def _allow_servers_internally(self) -> list[IConstruct]:
        """Open the Lustre ports (all traffic with EFA) within the file system's group and
        return the rules this added, which the file system waits for."""
        ids_before = {c.node.id for c in self.security_group.node.children}
        self.connections.allow_default_port_internally()
        return [c for c in self.security_group.node.children if c.node.id not in ids_before]

    def _create_key(self, removal_policy: RemovalPolicy) -> kms.Key:
        """The file system's KMS key (``Key``), rotated, with the file system's removal
        policy."""
        return kms.Key(
            self,
            "Key",
            description=f"FSx for Lustre {self.node.path}",
            enable_key_rotation=True,
            removal_policy=removal_policy,
        )

    def _set_up_logging(
        self, log_level: LustreLogLevel, log_retention: logs.RetentionDays
    ) -> fsx.CfnFileSystem.LogConfigurationProperty:
        """Lustre logging at ``log_level``; unless DISABLED, to a created log group (``Logs``,
        kept in ``log_group``) under ``/aws/fsx/``, the only prefix FSx writes to. The group
        is deleted with the stack (see the class docstring: a retained log group with a fixed
        name blocks every later deploy) and encrypted with the stack's logs key."""
        if log_level is LustreLogLevel.DISABLED:
            return fsx.CfnFileSystem.LogConfigurationProperty(level=log_level.value)
        log_group_name = f"{FSX_LOG_GROUP_PREFIX}lustre/{Names.unique_id(self)}"
        self.log_group = logs.LogGroup(
            self,
            "Logs",
            log_group_name=log_group_name,
            retention=log_retention,
            encryption_key=logs_encryption_key(self),
            removal_policy=RemovalPolicy.DESTROY,
        )
        # FSx wants the plain log-group ARN (the L2's ARN ends in ':*').
        destination = Stack.of(self).format_arn(
            service="logs",
            resource="log-group",
            resource_name=log_group_name,
            arn_format=ArnFormat.COLON_RESOURCE_NAME,
        )
        return fsx.CfnFileSystem.LogConfigurationProperty(
            level=log_level.value, destination=destination
        )

    def _lustre_configuration(
        self,
        *,
        automatic_backup_retention_days: int,
        daily_backup_start_time_utc: str,
        weekly_maintenance_start_time_utc: str,
        log_configuration: fsx.CfnFileSystem.LogConfigurationProperty,
    ) -> fsx.CfnFileSystem.LustreConfigurationProperty:
        """The Lustre settings of the file system: deployment type and throughput, LZ4,
        backups (persistent types only; the start time only when backups are on), the
        maintenance window, the metadata configuration (PERSISTENT_2 only), EFA and logging."""
        deployment_type = self.deployment_type
        persistent = deployment_type is not LustreDeploymentType.SCRATCH_2
        backups_on = persistent and automatic_backup_retention_days != 0
        return fsx.CfnFileSystem.LustreConfigurationProperty(
            deployment_type=deployment_type.value,
            per_unit_storage_throughput=self.throughput_mb_s_per_tib,
            data_compression_type="LZ4",
            automatic_backup_retention_days=automatic_backup_retention_days if persistent else None,
            daily_automatic_backup_start_time=daily_backup_start_time_utc if backups_on else None,
            weekly_maintenance_start_time=weekly_maintenance_start_time_utc,
            metadata_configuration=(
                fsx.CfnFileSystem.MetadataConfigurationProperty(mode="AUTOMATIC")
                if self.metadata_iops is None
                else fsx.CfnFileSystem.MetadataConfigurationProperty(
                    mode="USER_PROVISIONED", iops=self.metadata_iops
                )
            )
            if deployment_type is LustreDeploymentType.PERSISTENT_2
            else None,
            efa_enabled=True if self.efa_enabled else None,
            log_configuration=log_configuration,
        )

    def _create_file_system(
        self,
        subnet: ec2.ISubnet,
        lustre_configuration: fsx.CfnFileSystem.LustreConfigurationProperty,
        *,
        removal_policy: RemovalPolicy,
        self_rules: Sequence[IConstruct],
    ) -> fsx.CfnFileSystem:
        """The file system (``Resource``), created after its log group and its group's self
        rules: FSx checks that the group lets its servers reach each other when it creates
        the file system. Client rules are left out on purpose: they may live in another
        stack, and waiting for them would chain stacks."""
        file_system = fsx.CfnFileSystem(
            self,
            "Resource",
            file_system_type="LUSTRE",
            file_system_type_version=LUSTRE_VERSION,
            storage_type="SSD",
            storage_capacity=self.storage_capacity_gib,
            subnet_ids=[subnet.subnet_id],
            security_group_ids=[self.security_group.security_group_id],
            kms_key_id=self.kms_key.key_arn if self.kms_key else None,
            lustre_configuration=lustre_configuration,
        )
        file_system.apply_removal_policy(removal_policy)
        if self.log_group is not None:
            file_system.node.add_dependency(self.log_group)
        for rule in self_rules:
            file_system.node.add_dependency(rule)
        return file_system

    def add_associations(self, scope: Construct) -> Mapping[str, fsx.CfnDataRepositoryAssociation]:
        """Create the file system's data repository associations under
        ``scope``/``Associations`` (once; ``scope`` is this file system unless
        ``defer_associations`` was given). A construct with this file system's id in another
        stack keeps their logical ids."""
        if self.associations or not self._pending_associations:
            return self.associations
        self.associations = create_associations(
            Construct(scope, "Associations"),
            self._pending_associations,
            file_system_id=self.file_system_id,
            bucket_name=self._bucket_name,
        )
        return self.associations

    @staticmethod
    def from_lustre_file_system_attributes(
        scope: Construct, construct_id: str, **attributes: Unpack[LustreFileSystemAttributes]
    ) -> ILustreFileSystem:
        """Use a file system that already exists (``aws fsx describe-file-systems`` gives its
        id, DNS name, mount name and security groups: :class:`LustreFileSystemAttributes`);
        clients are allowed in its groups. It goes wherever a created one does."""
        return ImportedLustreFileSystem(scope, construct_id, **attributes)


def _literal(value: int | None) -> int | None:
    """``value`` unless it is a CDK token (tokens are not validated)."""
    if value is None or Token.is_unresolved(value):
        return None
    return value
