"""Offline facts about regions, zones and the services each region offers: the forms of their
names, their zone letters, and where each service has an endpoint.

Regions and services come from botocore's endpoint data (``botocore/data/endpoints.json``, in
every install of boto3): a region is known when a partition lists it, and a service is offered
in a region when the service lists an endpoint there. Zone letters come from
``zones.json`` beside this module (its ``source`` says where each list was read); a region
missing from it is checked by the zone name's form only.
"""

from __future__ import annotations

import json
import re
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

#: A region name (``us-east-1``, ``us-gov-west-1``): the form a profile's ``region`` must have.
REGION_NAME_PATTERN = r"[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d"
#: A zone name of a region (``us-east-1a``): the form a profile's zones must have.
ZONE_NAME_PATTERN = REGION_NAME_PATTERN + "[a-z]"
#: Availability Zone *names* the constructs accept (us-east-1a, and Local Zones such as
#: us-west-2-lax-1a), not zone ids (use1-az4).
AVAILABILITY_ZONE_PATTERN = re.compile(r"^[a-z]{2}(-[a-z0-9]+)+[a-z]$")
#: A zone *id* (``use1-az4``), which names the same physical zone in every account.
ZONE_ID_PATTERN = re.compile(r"[a-z]{2,5}\d+-az\d+")

#: Endpoint prefixes in botocore's data of the services a profile may use, by what they are.
SERVICES = {
    "ec2": "Amazon EC2",
    "eks": "Amazon EKS",
    "fsx": "Amazon FSx for Lustre",
    "api.sagemaker": "Amazon SageMaker (HyperPod)",
    "aps": "Amazon Managed Service for Prometheus",
    "grafana": "Amazon Managed Grafana",
    "s3": "Amazon S3",
    "elasticloadbalancing": "Elastic Load Balancing",
}
ENDPOINTS_SOURCE = "botocore/data/endpoints.json (botocore's offline endpoint data)"


@cache
def _endpoints() -> dict[str, Any]:
    import botocore  # imported here: only the data file is read, never a client

    path = Path(botocore.__file__).parent / "data" / "endpoints.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@cache
def regions() -> dict[str, str]:
    """Every region botocore knows, mapped to its partition (``aws``, ``aws-cn``, ...)."""
    return {
        region: partition["partition"]
        for partition in _endpoints()["partitions"]
        for region in partition["regions"]
    }


def partition_of(region: str) -> str | None:
    return regions().get(region)


@cache
def service_regions(service: str) -> frozenset[str]:
    """Regions where ``service`` (an endpoint prefix of :data:`SERVICES`) has an endpoint."""
    found: set[str] = set()
    for partition in _endpoints()["partitions"]:
        endpoints = partition["services"].get(service, {}).get("endpoints", {})
        found.update(r for r in endpoints if r in partition["regions"])
    return frozenset(found)


def offers(region: str, service: str) -> bool:
    return region in service_regions(service)


@cache
def _zones() -> dict[str, Any]:
    text = resources.files(__package__).joinpath("zones.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def zone_letters(region: str) -> str | None:
    """The zone letters ``region`` has (``abcdef`` for us-east-1), None when not recorded."""
    letters: str | None = _zones()["zones"].get(region)
    return letters


def zones_source() -> str:
    source: str = _zones()["source"]
    return source
