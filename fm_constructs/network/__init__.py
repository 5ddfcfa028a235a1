"""Network building blocks for accelerated clusters."""

from fm_constructs.network.efa_security_group import EfaSecurityGroup

__all__ = ["EfaSecurityGroup"]
