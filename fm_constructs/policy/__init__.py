"""Policy wiring: cdk-nag rule packs and guard aspects applied to whole apps."""

from fm_constructs.policy.compliance import acknowledge_compliance, enable_compliance_packs
from fm_constructs.policy.log_encryption import encrypted_log_group, logs_encryption_key
from fm_constructs.policy.nag import acknowledge, enable_nag

__all__ = [
    "acknowledge",
    "acknowledge_compliance",
    "enable_compliance_packs",
    "enable_nag",
    "encrypted_log_group",
    "logs_encryption_key",
]
