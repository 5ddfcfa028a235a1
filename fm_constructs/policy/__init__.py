"""Policy wiring: cdk-nag rule packs and guard aspects applied to whole apps."""

from fm_constructs.policy.nag import acknowledge, enable_nag

__all__ = ["acknowledge", "enable_nag"]
