"""Instance catalog: accelerated EC2 instance types with their accelerators, network cards,
EFA limits, NVMe storage, EKS AMI family and HyperPod names.

Generated from EC2 DescribeInstanceTypes data (tools/regenerate_instance_catalog.py) and
cross-checked against it in the unit tests. Floor 1: no aws_cdk import.
"""

from fm_constructs.catalog.lookup import (
    all_instance_types,
    catalogued_spec,
    efa_instance_types,
    get_instance_type,
    require_efa,
)
from fm_constructs.catalog.model import (
    AcceleratorKind,
    Architecture,
    EksAmiFamily,
    InstanceSpec,
    NetworkCard,
    NvmeStorage,
)

__all__ = [
    "AcceleratorKind",
    "Architecture",
    "EksAmiFamily",
    "InstanceSpec",
    "NetworkCard",
    "NvmeStorage",
    "all_instance_types",
    "catalogued_spec",
    "efa_instance_types",
    "get_instance_type",
    "require_efa",
]
