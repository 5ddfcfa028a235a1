"""Lifecycle scripts for HyperPod nodes, shipped in this package and deployed to S3.

HyperPod copies every object under ``LifeCycleConfig.SourceS3Uri`` onto each node and runs
``OnCreate`` from there, so the scripts must sit in S3 as individual objects (a CDK asset is a
single zip). :class:`LifecycleScripts` therefore deploys the package's ``lifecycle_scripts``
directory with a ``BucketDeployment`` under one prefix of a bucket, together with
``provisioning_parameters.json`` (rendered here, with deploy-time values such as the FSx DNS
name), and grants read of exactly that prefix: the bucket is not named ``sagemaker-*``, so the
AWS managed instance policy alone would not let nodes read it.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from aws_cdk import Names, RemovalPolicy, Stack, Token
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_s3_deployment as s3deploy
from constructs import Construct

from fm_constructs import pins
from fm_constructs.domain.users import ClusterUser
from fm_constructs.errors import FmValidationError
from fm_constructs.orchestration.hyperpod.instance_groups import (
    InstanceGroup,
    Orchestrator,
    SlurmNodeType,
)
from fm_constructs.orchestration.nag_findings import acknowledge_generated_iam, flatten_reference
from fm_constructs.planning.fsx_sizing import EFA_CONNECTIONS
from fm_constructs.policy import acknowledge
from fm_constructs.rules import constructs as codes

ON_CREATE = "on_create.sh"
PARAMETERS_FILE = "provisioning_parameters.json"
PARAMETERS_VERSION = "1.0.0"
DEFAULT_MOUNT_POINT = "/fsx"
#: Exporter ports (node exporter, DCGM exporter, EFA exporter; the Slurm exporter's default
#: port on the controller).
EXPORTER_PORTS = {"node": 9100, "dcgm": 9400, "efa": 9109, "slurm": 9341}
#: The HyperPod EFA exporter image (node exporter with the amazonefa collector, which publishes
#: the ``node_amazonefa_*`` counters the rules read), as AWS's HyperPod observability lifecycle
#: scripts pull it: repository and tag in the region's HyperPod/EKS ECR registry.
EFA_EXPORTER_REPOSITORY = "hyperpod/efa_exporter"
EFA_EXPORTER_TAG = pins.image_tag("hyperpod-efa-exporter")
#: Registry account of the EFA exporter image by region: the Amazon EKS add-on image
#: registries (awsdocs/amazon-eks-user-guide@1cc6ebb, latest/ug/workloads/add-ons-images.adoc,
#: "View Amazon container image registries for Amazon EKS add-ons"). HyperPod publishes the
#: image there: AWS's lifecycle scripts pull it from 602401143452 in us-east-1 and us-west-2
#: (awslabs/awsome-distributed-training@0edaf15, base-config/observability/
#: install_efa_exporter.sh) and a public HyperPod DaemonSet from 296578399912 in
#: ap-southeast-3, both as this table says; other regions follow the table (unverified live).
EFA_EXPORTER_ACCOUNTS: dict[str, str] = {
    "af-south-1": "877085696533",
    "ap-east-1": "800184023465",
    "ap-southeast-3": "296578399912",
    "ap-south-2": "900889452093",
    "ap-southeast-4": "491585149902",
    "ap-southeast-6": "333609536671",
    "ap-southeast-7": "121268973566",
    "eu-south-1": "590381155156",
    "eu-south-2": "455263428931",
    "eu-central-2": "900612956339",
    "il-central-1": "066635153087",
    "mx-central-1": "730335286997",
    "me-south-1": "558608220178",
    "me-central-1": "759879836304",
    "ca-west-1": "761377655185",
    **{
        region: "602401143452"
        for region in (
            "ap-south-1",
            "ap-northeast-1",
            "ap-northeast-2",
            "ap-northeast-3",
            "ap-southeast-1",
            "ap-southeast-2",
            "ca-central-1",
            "eu-central-1",
            "eu-north-1",
            "eu-west-1",
            "eu-west-2",
            "eu-west-3",
            "sa-east-1",
            "us-east-1",
            "us-east-2",
            "us-west-1",
            "us-west-2",
        )
    },
}
#: The account of most regions, for a stack whose region is not known at synthesis.
EFA_EXPORTER_DEFAULT_ACCOUNT = "602401143452"


def efa_exporter_account(region: str) -> str:
    """Registry account of the EFA exporter image in ``region`` (the default account when the
    region is a deploy-time token); a region outside the table is an error."""
    if Token.is_unresolved(region):
        return EFA_EXPORTER_DEFAULT_ACCOUNT
    account = EFA_EXPORTER_ACCOUNTS.get(region)
    if account is None:
        raise FmValidationError(
            [
                f"region: {region!r} has no HyperPod EFA exporter registry; use one of "
                f"{sorted(EFA_EXPORTER_ACCOUNTS)}"
            ],
            context="HyperPod EFA exporter",
            code=codes.HYPERPOD_CLUSTER,
        )
    return account


def efa_exporter_image(region: str) -> str:
    """URI of the EFA exporter image in ``region``'s HyperPod ECR registry."""
    return (
        f"{efa_exporter_account(region)}.dkr.ecr.{region}.amazonaws.com/"
        f"{EFA_EXPORTER_REPOSITORY}:{EFA_EXPORTER_TAG}"
    )


def scripts_directory() -> Path:
    """The packaged ``lifecycle_scripts`` directory."""
    return Path(str(resources.files("fm_constructs.orchestration.hyperpod") / "lifecycle_scripts"))


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


#: The FSx for Lustre guide's table of EFA interfaces AWS's client setup gives LNet by type
#: (same page); other types get 2 with several network cards, else 1.
LNET_EFA_INTERFACES = {
    "p6-b300.48xlarge": 16,
    "p6e-gb200.36xlarge": 8,
    "p6-b200.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5.48xlarge": 8,
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
        if group.spec is not None and group.spec.efa_supported
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
    if spec is None or not spec.efa_supported:
        return 0
    default = LNET_EFA_INTERFACES.get(spec.name, 2 if len(spec.network_cards) > 1 else 1)
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
    :func:`efa_interface_cap` over ``efa_clients``); ``prometheus``
    (``remote_write_url``) or null,
    ``users`` (see :meth:`ClusterUser.parameters`; created on every Slurm node, homes under
    ``<mount_point>/home``),
    ``exporter_ports``, ``efa_exporter_image``, and the pinned ``node_exporter_version``,
    ``prometheus_version``, ``slurm_exporter_version`` and ``dcgm_exporter_image`` that
    ``metrics.sh`` installs and the ``enroot_version`` and ``pyxis_version`` that
    ``containers.sh`` installs.
    """

    def first(node_type: SlurmNodeType) -> str | None:
        names = [g.name for g in instance_groups if g.slurm_node_type is node_type]
        return names[0] if names else None

    slurm = orchestrator is Orchestrator.SLURM
    workers = [g for g in instance_groups if g.slurm_node_type is SlurmNodeType.WORKER]
    worker_groups = [worker_group_parameters(g) for g in workers]
    if fsx is not None and fsx.get("efa_enabled"):
        cap = efa_interface_cap(instance_groups, efa_clients)
        for entry, group in zip(worker_groups, workers, strict=True):
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
        "exporter_ports": dict(EXPORTER_PORTS),
        "efa_exporter_image": efa_exporter_image(region),
        "node_exporter_version": pins.binary("node_exporter").version,
        "prometheus_version": pins.binary("prometheus").version,
        "slurm_exporter_version": pins.binary("slurm_exporter").version,
        "dcgm_exporter_image": pins.image("dcgm-exporter").reference,
        "enroot_version": pins.binary("enroot").version,
        "pyxis_version": pins.binary("pyxis").version,
    }


class LifecycleScripts(Construct):
    """The lifecycle scripts and provisioning parameters of one cluster under one S3 prefix.

    ``bucket``: where to put them; created when absent (S3-managed encryption, TLS only, no
    public access, versioned). A created bucket is retained when the stack is deleted (its
    objects are removed with the deployment, so it is left empty apart from old versions);
    delete it by hand if it is no longer needed.
    Children: ``Bucket`` (when created), ``Deployment``.
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
        if bucket is None:
            created = s3.Bucket(
                self,
                "Bucket",
                encryption=s3.BucketEncryption.S3_MANAGED,
                enforce_ssl=True,
                block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
                versioned=True,
                removal_policy=RemovalPolicy.RETAIN,
                auto_delete_objects=False,
            )
            acknowledge(
                created,
                "AwsSolutions-S1",
                "The bucket only holds lifecycle scripts generated from this package (a copy "
                "of the CDK asset); their content and every change are in the template and "
                "CloudTrail, so server access logs would add nothing.",
            )
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
            ],
            prune=True,
            retain_on_delete=False,
        )
        self._acknowledge_deployment_handler()

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
