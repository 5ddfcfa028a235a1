"""Online rules of AWS PCS: no other cluster is being created in the region (pcs:ListClusters):
PCS creates one cluster per account and region at a time (``CreateCluster`` fails with
``ServiceQuotaExceededException`` otherwise); and the AMI the profile pins for the nodes is an
available image of their architecture (ec2:DescribeImages)."""

from __future__ import annotations

from typing import Any

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.planning.pcs_limits import CLUSTERS_CREATING_PER_REGION
from fm_constructs.rules.findings import define
from fm_constructs.rules.online.aws import ask, ask_pages

PCS_CREATING = define(
    "FM711",
    "Another AWS PCS cluster is being created in the region: PCS creates one cluster per "
    "account and region at a time, so this deployment's cluster would fail to create.",
    "Wait until that cluster is ACTIVE (aws pcs list-clusters), then deploy.",
    severity=None,
)


def no_cluster_creating(pcs: Any, region: str) -> list[Finding]:
    """A warning naming the clusters in ``CREATING``; an info when there are none."""
    pages = ask_pages(pcs, "list_clusters", "pcs:ListClusters", token="nextToken")
    creating = [
        str(c.get("name"))
        for page in pages
        for c in page.get("clusters", [])
        if str(c.get("status", "")).upper() == "CREATING"
    ]
    if creating:
        detail = (
            f"PCS is creating {', '.join(creating)} in {region}; it creates one cluster per "
            f"account and region at a time (at most {CLUSTERS_CREATING_PER_REGION})"
        )
        fix = "wait until it is ACTIVE (aws pcs list-clusters), then deploy"
        return [Finding(PCS_CREATING.code, Severity.WARNING, "", None, detail, fix)]
    detail = f"no PCS cluster is being created in {region}"
    return [Finding(PCS_CREATING.code, Severity.INFO, "", None, detail)]


PCS_AMI_AVAILABLE = define(
    "FM712",
    "The AMI pinned for AWS PCS nodes ([<workload>.pcs_ami]) is not an available image of "
    "the nodes' architecture in the region: PCS would fail to launch every node.",
    "Pin an available image: fmc pcs-ami --config <profile> --write.",
)

#: Answers of ec2:DescribeImages for an id that names no image the account may launch.
_NO_IMAGE = frozenset({"InvalidAMIID.NotFound", "InvalidAMIID.Unavailable"})


def pinned_ami_available(
    ec2: Any, workload: str, ami_id: str, architecture: str, region: str
) -> list[Finding]:
    """An error when ``ami_id`` (``<workload>.pcs_ami.id``) names no available image of
    ``architecture`` the account can launch in ``region`` (ec2:DescribeImages); an info with
    the image's name otherwise."""
    key = f"{workload}.pcs_ami.id"
    fix = PCS_AMI_AVAILABLE.fix.replace("<profile>", "<this profile>")
    answer = ask(
        ec2, "describe_images", "ec2:DescribeImages", missing_codes=_NO_IMAGE, ImageIds=[ami_id]
    )
    images = (answer or {}).get("Images", [])
    if not images:
        detail = f"{ami_id} names no image this account can launch in {region}"
        return [Finding(PCS_AMI_AVAILABLE.code, Severity.ERROR, key, ami_id, detail, fix)]
    image = images[0]
    state, arch = str(image.get("State", "")), str(image.get("Architecture", ""))
    name = str(image.get("Name", ""))
    if state != "available":
        detail = f"{ami_id} ({name}) is {state or 'in no state'} in {region}, not available"
        return [Finding(PCS_AMI_AVAILABLE.code, Severity.ERROR, key, ami_id, detail, fix)]
    if arch != architecture:
        detail = f"{ami_id} ({name}) is an {arch} image; the nodes are {architecture}"
        return [Finding(PCS_AMI_AVAILABLE.code, Severity.ERROR, key, ami_id, detail, fix)]
    detail = f"{ami_id} ({name}) is available in {region}"
    return [Finding(PCS_AMI_AVAILABLE.code, Severity.INFO, key, ami_id, detail)]
