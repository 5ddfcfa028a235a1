"""Lifecycle scripts for HyperPod nodes, shipped in this package and deployed to S3.

HyperPod copies every object under ``LifeCycleConfig.SourceS3Uri`` onto each node and runs
``OnCreate`` from there, so the scripts must sit in S3 as individual objects (a CDK asset is a
single zip). :class:`LifecycleScripts` therefore deploys the package's ``lifecycle_scripts``
directory with a ``BucketDeployment`` under one prefix of a bucket, together with
``provisioning_parameters.json`` (rendered here, with deploy-time values such as the FSx DNS
name) and, for HyperPod EKS nodes of an EFA-enabled file system, the EKS node groups' LNet boot
script (:func:`lifecycle_files`), and grants read of exactly that prefix: the bucket is not
named ``sagemaker-*``, so the AWS managed instance policy alone would not let nodes read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aws_cdk import Annotations, Names, RemovalPolicy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_kms as kms
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from fm_constructs.compute.user_data import lnet_efa_boot_script
from fm_constructs.domain.kinds import Orchestrator
from fm_constructs.domain.users import ClusterUser
from fm_constructs.orchestration.hyperpod.instance_groups import (
    InstanceGroup,
    SlurmNodeType,
)
from fm_constructs.orchestration.slurm import parameters as slurm_parameters
from fm_constructs.orchestration.slurm.parameters import (
    container_parameters,
    default_lnet_efa_interfaces,
    metrics_parameters,
    scripts_directory,
)
from fm_constructs.planning.fsx_sizing import EFA_CONNECTIONS
from fm_constructs.policy import acknowledge
from fm_constructs.policy.compliance import acknowledge_compliance
from fm_constructs.policy.nag_findings import acknowledge_generated_iam, flatten_reference
from fm_constructs.storage.buckets import (
    KEY_USER_ACTIONS,
    access_log_bucket,
    cloudformation_execution_role_arn,
    encrypted_bucket,
    log_access,
)

#: The shared Slurm node parameters (now in orchestration/slurm/), still importable from here.
EXPORTER_PORTS = slurm_parameters.EXPORTER_PORTS
EFA_EXPORTER_REPOSITORY = slurm_parameters.EFA_EXPORTER_REPOSITORY
EFA_EXPORTER_ACCOUNTS = slurm_parameters.EFA_EXPORTER_ACCOUNTS
LNET_EFA_INTERFACES = slurm_parameters.LNET_EFA_INTERFACES
efa_exporter_account = slurm_parameters.efa_exporter_account
efa_exporter_image = slurm_parameters.efa_exporter_image

ON_CREATE = "on_create.sh"
#: The EKS node groups' LNet-over-EFA boot script (compute/scripts, read from its package, not
#: copied), deployed beside the node scripts for HyperPod EKS nodes of an EFA-enabled file
#: system: ``lnet_efa_eks.sh`` installs it as ``fm-lnet-efa-boot``.
LNET_EFA_BOOT = "lnet_efa_boot.sh"
PARAMETERS_FILE = "provisioning_parameters.json"
PARAMETERS_VERSION = "1.0.0"
DEFAULT_MOUNT_POINT = "/fsx"
#: Why the lifecycle bucket and its logs have no cross-Region replication.
LIFECYCLE_REPLICATION = (
    "The scripts are generated from this package at every deployment (the package and the "
    "template are the source); the logs stay in the cluster's Region. Both buckets are "
    "versioned and retained."
)
#: Server-access-log prefix of the lifecycle bucket in its log bucket.
ACCESS_LOG_PREFIX = "lifecycle-bucket/"
#: Object actions only the deployment handler may perform on a created lifecycle bucket.
OBJECT_WRITE_ACTIONS = (
    "s3:PutObject",
    "s3:PutObjectAcl",
    "s3:PutObjectVersionAcl",
    "s3:PutObjectTagging",
    "s3:PutObjectVersionTagging",
    "s3:PutObjectRetention",
    "s3:PutObjectLegalHold",
    "s3:DeleteObject",
    "s3:DeleteObjectVersion",
    "s3:DeleteObjectTagging",
    "s3:DeleteObjectVersionTagging",
    "s3:RestoreObject",
    "s3:ReplicateObject",
    "s3:ReplicateDelete",
    "s3:BypassGovernanceRetention",
)
#: Bucket actions only CloudFormation may perform on a created lifecycle bucket: everything
#: that would let another principal grant itself writes, turn off encryption or logging,
#: expire or copy the scripts, or delete the bucket.
BUCKET_CONFIGURATION_ACTIONS = (
    "s3:PutBucketPolicy",
    "s3:DeleteBucketPolicy",
    "s3:PutBucketAcl",
    "s3:PutEncryptionConfiguration",
    "s3:PutBucketVersioning",
    "s3:PutBucketPublicAccessBlock",
    "s3:PutBucketOwnershipControls",
    "s3:PutBucketLogging",
    "s3:PutLifecycleConfiguration",
    "s3:PutReplicationConfiguration",
    "s3:PutBucketObjectLockConfiguration",
    "s3:PutBucketNotification",
    "s3:DeleteBucket",
)
#: Key-policy actions of the account on the lifecycle key: administration, no cryptography
#: (the KMS developer guide's "key administrators" set).
KEY_ADMIN_ACTIONS = (
    "kms:Create*",
    "kms:Describe*",
    "kms:Enable*",
    "kms:List*",
    "kms:Put*",
    "kms:Update*",
    "kms:Revoke*",
    "kms:Disable*",
    "kms:Get*",
    "kms:Delete*",
    "kms:TagResource",
    "kms:UntagResource",
    "kms:ScheduleKeyDeletion",
    "kms:CancelKeyDeletion",
    "kms:RotateKeyOnDemand",
)


def _deny_all_but(
    principal_arn: str, *, sid: str, actions: Sequence[str], resource: str
) -> iam.PolicyStatement:
    """A bucket-policy statement denying ``actions`` on ``resource`` to every principal but
    the one whose ARN is ``principal_arn``."""
    return iam.PolicyStatement(
        sid=sid,
        effect=iam.Effect.DENY,
        principals=[iam.AnyPrincipal()],
        actions=list(actions),
        resources=[resource],
        conditions={"StringNotEquals": {"aws:PrincipalArn": [principal_arn]}},
    )


def worker_group_parameters(group: InstanceGroup) -> dict[str, Any]:
    """One ``worker_groups`` entry: ``instance_group_name`` and ``partition_name`` are the keys
    HyperPod's agent reads to put the group's nodes into a Slurm partition; ``gpus`` and ``efa``
    tell the lifecycle scripts which exporters to run (and whether to serve a ``gres.conf``)."""
    spec = group.spec
    return {
        "instance_group_name": group.name,
        "instance_type": group.hyperpod_instance_type,
        "partition_name": group.resolved_partition_name,
        "gpus": spec.accelerator_count
        if spec is not None and spec.accelerator_kind == "gpu"
        else 0,
        "efa": bool(spec is not None and spec.efa_supported),
    }


def efa_interface_cap(
    instance_groups: Sequence[InstanceGroup], efa_clients: int | None = None
) -> int | None:
    """The most EFA interfaces each node may give LNet so that all the clients of the file
    system stay within :data:`EFA_CONNECTIONS` (at least one each).

    ``efa_clients``: the EFA nodes of every cluster that mounts the file system over EFA,
    this one's included (default, and at least: this cluster's own). None when the count is
    only known at deploy time."""
    counts = [
        group.instance_count
        for group in instance_groups
        if group.spec is not None and group.spec.lustre_efa_client
    ]
    if any(Token.is_unresolved(count) for count in counts):
        if efa_clients is None:
            return None
        own = 0
    else:
        own = sum(counts)
    clients = max(own, efa_clients or 0)
    return max(1, EFA_CONNECTIONS // clients) if clients else None


def lnet_efa_interfaces(group: InstanceGroup, cap: int | None) -> int:
    """EFA interfaces LNet uses on a node of ``group``: the FSx guide's figure for its type
    (:data:`LNET_EFA_INTERFACES`), at most ``cap``; 0 for a type without EFA."""
    spec = group.spec
    if spec is None:
        return 0
    default = default_lnet_efa_interfaces(spec)
    return min(default, cap) if cap else default


def provisioning_parameters(
    *,
    orchestrator: Orchestrator,
    cluster_name: str,
    region: str,
    instance_groups: Sequence[InstanceGroup],
    fsx: dict[str, Any] | None = None,
    prometheus_remote_write_url: str | None = None,
    users: Sequence[ClusterUser] = (),
    efa_clients: int | None = None,
) -> dict[str, Any]:
    """The ``provisioning_parameters.json`` HyperPod's agent and the lifecycle scripts read
    (values may be CDK tokens; BucketDeployment substitutes them at deploy time). The agent
    builds ``slurm.conf`` from ``controller_group``, ``login_group`` and ``worker_groups``.

    Keys: ``version``, ``workload_manager`` (slurm|eks), ``cluster_name``, ``region``,
    ``controller_group``, ``login_group``, ``worker_groups`` (see
    :func:`worker_group_parameters`), ``fsx`` (``dns_name``, ``mount_name``,
    ``mount_point``, ``efa_enabled``, ``shared_directories``: the data repository
    directories every user may write) or null; for an EFA file system each worker group also
    gets ``lnet_efa_interfaces`` (:func:`lnet_efa_interfaces`, capped by
    :func:`efa_interface_cap` over ``efa_clients``; 0 for an EKS group of a family FSx takes
    no EFA client of), which Slurm nodes (``mount_fsx.sh``) and EKS nodes
    (``lnet_efa_eks.sh``) give LNet; ``prometheus``
    (``remote_write_url``) or null,
    ``users`` (see :meth:`ClusterUser.parameters`; created on every Slurm node, homes under
    ``<mount_point>/home``),
    ``exporter_ports``, ``efa_exporter_image``, and the pinned ``node_exporter_version``,
    ``prometheus_version``, ``slurm_exporter_version`` and ``dcgm_exporter_image`` that
    ``metrics.sh`` installs and the ``enroot_version`` and ``pyxis_version`` that
    ``containers.sh`` installs; ``download_sha256`` (release file name -> pinned sha256,
    :func:`fm_constructs.pins.download_digests`), which the scripts require of a listed
    download before using it.
    """

    def first(node_type: SlurmNodeType) -> str | None:
        names = [g.name for g in instance_groups if g.slurm_node_type is node_type]
        return names[0] if names else None

    slurm = orchestrator is Orchestrator.HYPERPOD_SLURM
    workers = [g for g in instance_groups if g.slurm_node_type is SlurmNodeType.WORKER]
    worker_groups = [worker_group_parameters(g) for g in workers]
    if fsx is not None and fsx.get("efa_enabled"):
        cap = efa_interface_cap(instance_groups, efa_clients)
        for entry, group in zip(worker_groups, workers, strict=True):
            # 0 for a group of a family FSx takes no EFA client of (trn2): its nodes mount
            # over TCP (mount_fsx.sh, lnet_efa_eks.sh), as EKS node groups do.
            entry["lnet_efa_interfaces"] = lnet_efa_interfaces(group, cap)
    return {
        "version": PARAMETERS_VERSION,
        "workload_manager": "slurm" if slurm else "eks",
        "cluster_name": cluster_name,
        "region": region,
        "controller_group": first(SlurmNodeType.CONTROLLER) if slurm else None,
        "login_group": first(SlurmNodeType.LOGIN) if slurm else None,
        "worker_groups": worker_groups,
        "fsx": fsx,
        "prometheus": (
            {"remote_write_url": prometheus_remote_write_url}
            if prometheus_remote_write_url is not None
            else None
        ),
        "users": [user.parameters() for user in users],
        **metrics_parameters(region),
        **container_parameters(),
    }


def lifecycle_files(parameters: dict[str, Any]) -> dict[str, str]:
    """The files deployed under the lifecycle prefix besides the node scripts and the
    parameters (name -> content): :data:`LNET_EFA_BOOT` on HyperPod EKS nodes of an
    EFA-enabled file system (``workload_manager`` eks, ``fsx.efa_enabled`` true), nothing
    otherwise, so other clusters' scripts are unchanged."""
    fsx = parameters.get("fsx") or {}
    if parameters.get("workload_manager") == "eks" and fsx.get("efa_enabled") is True:
        return {LNET_EFA_BOOT: lnet_efa_boot_script()}
    return {}


class LifecycleScripts(Construct):
    """The lifecycle scripts and provisioning parameters of one cluster under one S3 prefix.

    HyperPod runs these scripts as root on every node of the cluster (on create, and again on
    every software update and scale-out), so whoever can write them owns every node. A bucket
    created here is therefore writable only by the deployment itself:

    * its policy denies object writes and deletes to every principal but the role of the
      stack's ``BucketDeployment`` handler (the Lambda function aws-cdk-lib creates once per
      stack, ``Custom::CDKBucketDeployment...``, whose role copies the scripts from the CDK
      asset bucket), and denies changes to the bucket's policy, ACLs, encryption, versioning,
      public access block, ownership, logging, lifecycle, replication and object lock, and the
      bucket's deletion, to every principal but the stack's CloudFormation execution role (the
      bootstrap role ``cdk-<qualifier>-cfn-exec-role-<account>-<region>`` that
      ``DefaultStackSynthesizer`` names; with another synthesizer there is no such role, and
      the construct warns that configuration changes are not restricted);
    * it is encrypted with its own customer key (``Key``) whose key policy gives the account
      key administration and decryption (through S3) but lets only the deployment handler's
      role encrypt: an IAM policy granting ``kms:Encrypt`` or ``kms:GenerateDataKey`` on this
      key to any other principal has no effect;
    * server access logs go to ``AccessLogs`` (S3 object writes are CloudTrail data events,
      which are not logged unless a trail selects them).

    The account's root user can still delete the bucket policy (S3 always allows it), which
    is the break-glass path. The bucket also blocks public access, requires TLS, is versioned
    and is retained when the stack is deleted (its objects are removed with the deployment, so
    it is left empty apart from old versions); delete it by hand if it is no longer needed.

    With ``bucket=`` given, none of this is applied: secure that bucket the same way.
    Children: ``Bucket``, ``Key``, ``AccessLogs`` (when the bucket is created), ``Deployment``.
    """

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        parameters: dict[str, Any],
        bucket: s3.IBucket | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        #: What ``provisioning_parameters.json`` holds (values may be tokens).
        self.parameters: dict[str, Any] = parameters
        created: s3.Bucket | None = None
        #: The bucket's customer key and access-log bucket (None with ``bucket=`` given).
        self.key: kms.Key | None = None
        self.access_logs_bucket: s3.Bucket | None = None
        if bucket is None:
            created = self._create_bucket()
            bucket = created
        self.bucket: s3.IBucket = bucket
        self.prefix = f"hyperpod-lifecycle/{Names.unique_id(self)}/"
        self.on_create = ON_CREATE
        self.deployment = s3deploy.BucketDeployment(
            self,
            "Deployment",
            destination_bucket=bucket,
            destination_key_prefix=self.prefix,
            sources=[
                s3deploy.Source.asset(str(scripts_directory()), exclude=["__pycache__", "*.pyc"]),
                s3deploy.Source.json_data(PARAMETERS_FILE, parameters),
                *(
                    s3deploy.Source.data(name, text)
                    for name, text in lifecycle_files(parameters).items()
                ),
            ],
            prune=True,
            retain_on_delete=False,
        )
        if created is not None:
            self._restrict_writers(created)
        self._acknowledge_deployment_handler()

    def _create_bucket(self) -> s3.Bucket:
        """The bucket, its key and its access-log bucket (policies come with the deployment,
        whose handler role they name)."""
        self.key = kms.Key(
            self,
            "Key",
            description=f"HyperPod lifecycle scripts of {self.node.path}",
            enable_key_rotation=True,
            removal_policy=RemovalPolicy.RETAIN,
            policy=self._key_policy(),
        )
        self.access_logs_bucket = access_log_bucket(
            self,
            "AccessLogs",
            logged="lifecycle bucket",
            replication_reason=LIFECYCLE_REPLICATION,
        )
        created = encrypted_bucket(self, "Bucket", key=self.key)
        acknowledge_compliance(created, "S3BucketReplicationEnabled", LIFECYCLE_REPLICATION)
        log_access(
            created,
            self.access_logs_bucket,
            prefix=ACCESS_LOG_PREFIX,
            sid="AllowLifecycleBucketServerAccessLogs",
        )
        return created

    def _key_policy(self) -> iam.PolicyDocument:
        """Key administration and decryption through S3 for the account (so IAM decides who
        reads); encryption is added for the deployment handler's role alone."""
        stack = Stack.of(self)
        account = iam.AccountRootPrincipal()
        return iam.PolicyDocument(
            statements=[
                iam.PolicyStatement(
                    sid="KeyAdministration",
                    principals=[account],
                    actions=list(KEY_ADMIN_ACTIONS),
                    resources=["*"],
                ),
                iam.PolicyStatement(
                    sid="DecryptThroughS3",
                    principals=[account],
                    actions=["kms:Decrypt"],
                    resources=["*"],
                    conditions={
                        "StringEquals": {"kms:ViaService": f"s3.{stack.region}.amazonaws.com"}
                    },
                ),
            ]
        )

    def _restrict_writers(self, bucket: s3.Bucket) -> None:
        """Deny writes to all but the deployment handler and configuration changes to all but
        CloudFormation; let only the handler encrypt with the key."""
        writer = self.deployment.handler_role.role_arn
        bucket.add_to_resource_policy(
            _deny_all_but(
                writer,
                sid="DenyObjectWritesExceptDeployment",
                actions=OBJECT_WRITE_ACTIONS,
                resource=bucket.arn_for_objects("*"),
            )
        )
        deployer = cloudformation_execution_role_arn(Stack.of(self))
        if deployer is None:
            Annotations.of(self).add_warning_v2(
                "fm-constructs:lifecycle-bucket-configuration",
                "The stack's synthesizer names no CloudFormation execution role, so changes "
                "to the lifecycle bucket's policy and configuration are not restricted to the "
                "deployment; use DefaultStackSynthesizer, or pass a bucket you secure.",
            )
        else:
            bucket.add_to_resource_policy(
                _deny_all_but(
                    deployer,
                    sid="DenyConfigurationChangesExceptCloudFormation",
                    actions=BUCKET_CONFIGURATION_ACTIONS,
                    resource=bucket.bucket_arn,
                )
            )
        assert self.key is not None
        self.key.add_to_resource_policy(
            iam.PolicyStatement(
                sid="EncryptByDeploymentOnly",
                principals=[iam.ArnPrincipal(writer)],
                actions=list(KEY_USER_ACTIONS),
                resources=["*"],
                conditions={
                    "StringEquals": {"kms:ViaService": f"s3.{Stack.of(self).region}.amazonaws.com"}
                },
            )
        )

    @property
    def source_s3_uri(self) -> str:
        """``s3://<bucket>/<prefix>`` for ``LifeCycleConfig.SourceS3Uri``."""
        return f"s3://{self.bucket.bucket_name}/{self.prefix}"

    def grant_read(self, grantee: iam.IGrantable) -> iam.Grant:
        """Let ``grantee`` list and read the objects under this prefix, nothing else."""
        objects = self.bucket.arn_for_objects(f"{self.prefix}*")
        grant = iam.Grant.add_to_principal(
            grantee=grantee, actions=["s3:GetObject"], resource_arns=[objects]
        )
        iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["s3:ListBucket"],
            resource_arns=[self.bucket.bucket_arn],
            conditions={"StringLike": {"s3:prefix": [f"{self.prefix}*"]}},
        )
        if self.bucket.encryption_key is not None:
            self.bucket.encryption_key.grant_decrypt(grantee)
        if isinstance(grantee, Construct):
            stack = Stack.of(self)
            acknowledge(
                grantee,
                f"AwsSolutions-IAM5[Resource::{flatten_reference(stack.resolve(objects))}]",
                "Nodes read every lifecycle script under this cluster's own prefix; the file "
                "names are generated from the package.",
            )
        return grant

    def _acknowledge_deployment_handler(self) -> None:
        """BucketDeployment runs a stack-wide singleton Lambda; acknowledge the findings of
        that handler (and only it), which aws-cdk-lib fixes."""
        stack = Stack.of(self)
        for child in stack.node.children:
            if not child.node.id.startswith("Custom::CDKBucketDeployment"):
                continue
            acknowledge_generated_iam(
                child,
                managed_reason="aws-cdk-lib's BucketDeployment handler role uses "
                "AWSLambdaBasicExecutionRole for its logs; the library fixes this role.",
                wildcard_reason="aws-cdk-lib's BucketDeployment handler copies the asset "
                "objects into the destination prefix; its s3 action and object wildcards "
                "are generated by the library and scoped to the two buckets.",
            )
            for policy in child.node.find_all():
                if not isinstance(policy, iam.CfnPolicy):
                    continue
                document = stack.resolve(policy.policy_document) or {}
                for statement in document.get("Statement", []):
                    actions = statement.get("Action", [])
                    for action in actions if isinstance(actions, list) else [actions]:
                        if "*" in action:
                            acknowledge(
                                policy,
                                f"AwsSolutions-IAM5[Action::{action}]",
                                "aws-cdk-lib's BucketDeployment handler needs the S3 read, "
                                "list and delete action groups it generates to sync the "
                                "prefix.",
                            )
            acknowledge(
                child,
                "AwsSolutions-L1",
                "The BucketDeployment handler runtime is pinned by aws-cdk-lib.",
            )
