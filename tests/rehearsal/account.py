"""What the rehearsal reads back from the local AWS after a CLI run: stack states, retained
resources, the resources the extensions hold."""

from __future__ import annotations

from typing import Any

import boto3

from tests.rehearsal.local_aws import resources
from tests.rehearsal.local_aws.server import LocalAws, assert_loopback


def client(local: LocalAws, service: str, region: str) -> Any:
    """A boto3 client of the local AWS (loopback only, dummy credentials)."""
    assert_loopback(local.endpoint)
    return boto3.client(
        service,
        region_name=region,
        endpoint_url=local.endpoint,
        aws_access_key_id="rehearsal",
        aws_secret_access_key="rehearsal",
    )


def stack_statuses(local: LocalAws, region: str) -> dict[str, str]:
    """Stack name -> status of every stack that is not deleted."""
    stacks = client(local, "cloudformation", region).describe_stacks()["Stacks"]
    return {s["StackName"]: s["StackStatus"] for s in stacks}


def modelled(local: LocalAws, region: str, resource_type: str) -> list[resources.Created]:
    """The resources of a type the extensions model that exist right now."""
    return list(resources.existing(local.account, region, resource_type).values())
