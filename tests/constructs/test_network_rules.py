"""GpuClusterVpc runs the profile's zone and CIDR rules on its own arguments."""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from fm_constructs import FmValidationError, GpuClusterVpc
from tests.support import TEST_ENV


def test_zones_of_another_region_and_a_bad_cidr_are_reported_with_the_path() -> None:
    stack = cdk.Stack(cdk.App(), "Net", env=TEST_ENV)
    with pytest.raises(FmValidationError) as raised:
        GpuClusterVpc(
            stack, "Vpc", availability_zones=["eu-west-1a", "us-east-1g"], cidr="10.0.0.0/8"
        )
    error = raised.value
    assert error.context == "GpuClusterVpc Net/Vpc"
    assert error.codes == ("FM105", "FM102", "FM102")
    assert "must be a zone of the stack's region 'us-east-1'" in str(error)
