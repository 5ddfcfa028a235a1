"""Online rule: SageMaker HyperPod lists the instance type (the ``ClusterInstanceType`` enum
of the SageMaker API model the client carries)."""

from __future__ import annotations

from typing import Any

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.rules.findings import define

HYPERPOD_TYPE = define(
    "FM705",
    "SageMaker HyperPod in this region does not list the instance type.",
    "Choose a type HyperPod offers in the region, or orchestrator 'eks'.",
    severity=None,
)


def hyperpod_instance_type(
    sagemaker: Any, hyperpod_name: str | None, instance_type: str, *, workload: str
) -> list[Finding]:
    """``hyperpod_name`` (the ``ml.`` name of ``instance_type``) is a HyperPod cluster
    instance type (an info), else an error; ``workload`` names the profile table of the fix."""
    shape = sagemaker.meta.service_model.shape_for("ClusterInstanceType")
    if hyperpod_name and hyperpod_name in set(shape.enum):
        detail = f"{hyperpod_name} is a HyperPod instance type"
        return [Finding(HYPERPOD_TYPE.code, Severity.INFO, "", None, detail)]
    return [
        Finding(
            HYPERPOD_TYPE.code,
            Severity.ERROR,
            "",
            None,
            f"{hyperpod_name or instance_type} is not a HyperPod cluster instance type in this "
            "botocore version",
            f"choose a type HyperPod offers, or orchestrator 'eks' for {workload}; upgrade boto3 "
            "if the type is new",
        )
    ]
