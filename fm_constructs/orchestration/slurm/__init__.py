"""Slurm node code shared by SageMaker HyperPod (Slurm) and AWS PCS: the node scripts
(``node_scripts/``: FSx for Lustre mount, users, containers, metrics, Slurm configuration and
hooks) and the parameters they read."""

from fm_constructs.orchestration.slurm.parameters import (
    EXPORTER_PORTS,
    LNET_EFA_INTERFACES,
    container_parameters,
    default_lnet_efa_interfaces,
    efa_exporter_account,
    efa_exporter_image,
    efa_exporter_repository_arn,
    fsx_parameters,
    metrics_parameters,
    scripts_directory,
)

__all__ = [
    "EXPORTER_PORTS",
    "LNET_EFA_INTERFACES",
    "container_parameters",
    "default_lnet_efa_interfaces",
    "efa_exporter_account",
    "efa_exporter_image",
    "efa_exporter_repository_arn",
    "fsx_parameters",
    "metrics_parameters",
    "scripts_directory",
]
