"""Network building blocks for accelerated clusters."""

from fm_constructs.network.efa_security_group import EfaSecurityGroup
from fm_constructs.network.gpu_vpc import GpuClusterVpc

__all__ = ["EfaSecurityGroup", "GpuClusterVpc"]
