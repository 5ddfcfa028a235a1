"""What the Slurm node scripts read from ``provisioning_parameters.json``, built once for
HyperPod Slurm and AWS PCS.

Both orchestrators run the same scripts (:func:`scripts_directory`): HyperPod from its
lifecycle configuration, PCS through its node wrapper. The exporter ports, the EFA exporter
image, the pinned exporter, enroot and pyxis versions and LNet's EFA interface count per
instance type are therefore one set of values, rendered here into the parameters each
orchestrator writes.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aws_cdk import Stack, Token

from fm_constructs import pins
from fm_constructs.catalog import InstanceSpec
from fm_constructs.domain import ports
from fm_constructs.errors import FmValidationError
from fm_constructs.rules import constructs as codes

if TYPE_CHECKING:
    from fm_constructs.storage.lustre_interface import ILustreFileSystem

#: Exporter ports (node exporter, DCGM exporter, EFA exporter; the Slurm exporter's default
#: port on the controller).
EXPORTER_PORTS = {
    "node": ports.NODE_EXPORTER_PORT,
    "dcgm": ports.DCGM_EXPORTER_PORT,
    "efa": ports.EFA_EXPORTER_PORT,
    "slurm": ports.SLURM_EXPORTER_PORT,
}
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
        f"{EFA_EXPORTER_REPOSITORY}:"
        f"{pins.image('hyperpod-efa-exporter').tag_reference(EFA_EXPORTER_TAG)}"
    )


#: The FSx for Lustre guide's table of EFA interfaces AWS's client setup gives LNet by type
#: ("Configuring EFA clients"); other types get 2 with several network cards, else 1.
LNET_EFA_INTERFACES = {
    "p6-b300.48xlarge": 16,
    "p6e-gb200.36xlarge": 8,
    "p6-b200.48xlarge": 8,
    "p5en.48xlarge": 8,
    "p5e.48xlarge": 8,
    "p5.48xlarge": 8,
}


def scripts_directory() -> Path:
    """The packaged Slurm node scripts (``node_scripts``), deployed whole to S3."""
    return Path(str(resources.files("fm_constructs.orchestration.slurm") / "node_scripts"))


def efa_exporter_repository_arn(stack: Stack) -> str:
    """The ARN of the EFA exporter's repository in the HyperPod ECR registry of ``stack``'s
    region, which EFA nodes pull the exporter image from."""
    return stack.format_arn(
        service="ecr",
        account=efa_exporter_account(stack.region),
        resource="repository",
        resource_name=EFA_EXPORTER_REPOSITORY,
    )


def default_lnet_efa_interfaces(spec: InstanceSpec) -> int:
    """EFA interfaces LNet uses on a node of type ``spec`` before any cap: the FSx guide's
    figure for the type (:data:`LNET_EFA_INTERFACES`), else 2 with several network cards, else
    1; 0 for a type without EFA or of a family FSx takes no EFA client of (trn2), whose nodes
    then mount over TCP."""
    if not spec.lustre_efa_client:
        return 0
    return LNET_EFA_INTERFACES.get(spec.name, 2 if len(spec.network_cards) > 1 else 1)


def metrics_parameters(region: str) -> dict[str, Any]:
    """What ``metrics.sh`` installs: ``exporter_ports``, ``efa_exporter_image`` (in
    ``region``'s registry) and the pinned ``node_exporter_version``, ``prometheus_version``,
    ``slurm_exporter_version`` and ``dcgm_exporter_image``, and ``download_sha256`` (release
    file name -> the pinned sha256 the script requires of a download before it runs it)."""
    return {
        "exporter_ports": dict(EXPORTER_PORTS),
        "efa_exporter_image": efa_exporter_image(region),
        "node_exporter_version": pins.binary("node_exporter").version,
        "prometheus_version": pins.binary("prometheus").version,
        "slurm_exporter_version": pins.binary("slurm_exporter").version,
        "dcgm_exporter_image": pins.image("dcgm-exporter").reference,
        "download_sha256": pins.download_digests(),
    }


def fsx_parameters(file_system: ILustreFileSystem, mount_point: str) -> dict[str, Any]:
    """What ``mount_fsx.sh`` mounts and how: the ``fsx`` table of the parameters
    (``dns_name``, ``mount_name``, ``mount_point``, and ``efa_enabled``, which turns on LNet
    over EFA). Values may be tokens."""
    return {
        "dns_name": file_system.dns_name,
        "mount_name": file_system.mount_name,
        "mount_point": mount_point,
        "efa_enabled": bool(file_system.efa_enabled),
    }


def container_parameters() -> dict[str, Any]:
    """What ``containers.sh`` installs: the pinned ``enroot_version`` and ``pyxis_version``,
    ``download_sha256`` (release file name -> pinned sha256: the script refuses a download
    whose name has none or whose digest differs) and ``source_git_tree`` (source archive
    name -> the git tree it must hold: the script refuses any other)."""
    return {
        "enroot_version": pins.binary("enroot").version,
        "pyxis_version": pins.binary("pyxis").version,
        "download_sha256": pins.download_digests(),
        "source_git_tree": pins.source_trees(),
    }
