"""``-c admin_role_arns=...`` fills in the cluster admins the shipped profiles leave empty."""

from __future__ import annotations

from pathlib import Path

import pytest

from fm_constructs.config import load_profile
from fm_constructs.errors import FmValidationError
from stacks.app_builder import with_admin_roles

ROOT = Path(__file__).resolve().parents[2]
ARN_A = "arn:aws:iam::123456789012:role/PlatformAdmin"
ARN_B = "arn:aws:iam::123456789012:role/Oncall"


def test_shipped_profiles_name_no_placeholder_admin() -> None:
    for path in sorted((ROOT / "config").glob("*.toml")):
        profile = load_profile(path)
        assert profile.platform.admin_role_arns == (), path.name
        assert "role/PlatformAdmin" not in path.read_text(), path.name


def test_context_value_replaces_the_profiles_admins() -> None:
    profile = load_profile(ROOT / "config" / "default.toml")
    assert with_admin_roles(profile, None) is profile
    assert with_admin_roles(profile, "") is profile
    comma = with_admin_roles(profile, f"{ARN_A}, {ARN_B}")
    assert comma.platform.admin_role_arns == (ARN_A, ARN_B)
    listed = with_admin_roles(profile, [ARN_A])
    assert listed.platform.admin_role_arns == (ARN_A,)
    assert listed.pretraining == profile.pretraining


def test_context_roles_get_the_profiles_admin_rules() -> None:
    """A bad role given with -c fails as the same role in the profile would, before any
    construct is built."""
    profile = load_profile(ROOT / "config" / "default.toml")
    with pytest.raises(FmValidationError) as raised:
        with_admin_roles(profile, "PlatformAdmin,arn:aws:iam::123456789012:user/alice")
    assert raised.value.context == "cdk context -c admin_role_arns"
    assert raised.value.codes == ("FM202", "FM202")
    assert "admin_role_arns[1]: must be an IAM role ARN" in str(raised.value)
