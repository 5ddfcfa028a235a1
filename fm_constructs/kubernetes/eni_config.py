"""ENIConfig objects of VPC CNI custom networking: one per zone, named after it.

With ``ENI_CONFIG_LABEL_DEF=topology.kubernetes.io/zone`` every node reads the ENIConfig named
after its zone, so node groups need no label of their own. An ENIConfig without security groups
gives the pod ENIs the node's primary-ENI groups (amazon-vpc-cni-k8s v1.23.0
``pkg/awsutils/awsutils.go``, ``createENIUsingCustomCfg``): pods keep the rules the nodes have.
Pure data: no aws_cdk import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: API of the ENIConfig custom resource the VPC CNI installs (its CRD ships with the add-on).
API_VERSION = "crd.k8s.amazonaws.com/v1alpha1"
KIND = "ENIConfig"


def eni_config(
    zone: str, subnet_id: str, *, security_group_ids: Sequence[str] = ()
) -> dict[str, Any]:
    """The ENIConfig of ``zone``: pod ENIs of that zone's nodes go to ``subnet_id``."""
    spec: dict[str, Any] = {"subnet": subnet_id}
    if security_group_ids:
        spec["securityGroups"] = list(security_group_ids)
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": zone}, "spec": spec}


def eni_configs(subnets_by_zone: Mapping[str, str]) -> list[dict[str, Any]]:
    """One ENIConfig per zone, in zone order."""
    return [eni_config(zone, subnets_by_zone[zone]) for zone in sorted(subnets_by_zone)]
