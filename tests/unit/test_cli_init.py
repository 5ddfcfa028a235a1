"""fmc init, against botocore's Stubber: the calls it makes, what it writes, what it refuses."""

from __future__ import annotations

import tomllib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fm_constructs.cli.init import render_profile, role_arn_of_caller
from fm_constructs.config import load_profile
from tests.unit.cli_stubs import DEFAULT_PROFILE, REPO, Stubs, run, stubs

FIXTURES = (stubs,)  # the Stubber fixture, found by pytest under this module's name "stubs"
ACCOUNT = "444455556666"
ROLE_SESSION = f"arn:aws:sts::{ACCOUNT}:assumed-role/MlPlatformAdmin/alice"
DEFAULT_TYPES = ["p5.48xlarge", "p5en.48xlarge", "g6e.48xlarge"]
ZONE_FILTERS = [
    {"Name": "state", "Values": ["available"]},
    {"Name": "zone-type", "Values": ["availability-zone"]},
]


def _identity(s: Stubs, arn: str = ROLE_SESSION, role_path: str = "/") -> None:
    """GetCallerIdentity, and for an assumed-role session the GetRole that names the role."""
    s["sts"].add_response(
        "get_caller_identity", {"Account": ACCOUNT, "Arn": arn, "UserId": "AROAEXAMPLE:alice"}, {}
    )
    if ":assumed-role/" in arn:
        role = arn.split("/")[1]
        _get_role(s, role, f"arn:aws:iam::{ACCOUNT}:role{role_path}{role}", role_path)


def _get_role(s: Stubs, name: str, arn: str, path: str) -> None:
    s["iam"].add_response(
        "get_role",
        {
            "Role": {
                "Path": path,
                "RoleName": name,
                "RoleId": "AROAEXAMPLEEXAMPLE123",
                "Arn": arn,
                "CreateDate": datetime(2026, 1, 1, tzinfo=UTC),
            }
        },
        {"RoleName": name},
    )


def _offerings(s: Stubs, offered: dict[str, list[str]], types: list[str]) -> None:
    s["ec2"].add_response(
        "describe_instance_type_offerings",
        {
            "InstanceTypeOfferings": [
                {"InstanceType": t, "LocationType": "availability-zone", "Location": zone}
                for t, zones in offered.items()
                for zone in zones
            ]
        },
        {
            "LocationType": "availability-zone",
            "Filters": [{"Name": "instance-type", "Values": types}],
        },
    )


def _zones(s: Stubs, names: list[str]) -> None:
    s["ec2"].add_response(
        "describe_availability_zones",
        {"AvailabilityZones": [{"ZoneName": n, "State": "available"} for n in names]},
        {"Filters": ZONE_FILTERS},
    )


def test_writes_a_valid_profile_with_a_zone_offering_every_type(
    stubs: Stubs, tmp_path: Path
) -> None:
    _identity(stubs)
    # us-east-1a (the template's zone) lacks p5en; us-east-1d offers all three.
    _offerings(
        stubs,
        {
            "p5.48xlarge": ["us-east-1a", "us-east-1d"],
            "p5en.48xlarge": ["us-east-1d"],
            "g6e.48xlarge": ["us-east-1a", "us-east-1d"],
        },
        DEFAULT_TYPES,
    )
    _zones(stubs, ["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1d", "us-east-1f"])
    output = tmp_path / "mine.toml"
    result = run("init", str(output), "--from", DEFAULT_PROFILE, "--region", "us-east-1")
    assert result.code == 0, result.err
    stubs.assert_done()
    profile = load_profile(output)
    assert profile.platform.account == ACCOUNT
    assert profile.platform.availability_zone == "us-east-1d"
    assert list(profile.platform.availability_zones) == ["us-east-1d", "us-east-1f"]
    assert list(profile.platform.admin_role_arns) == [
        f"arn:aws:iam::{ACCOUNT}:role/MlPlatformAdmin"
    ]
    # What it chose and why, one line per key.
    assert (
        "availability_zone   us-east-1d  (offers g6e.48xlarge, p5.48xlarge, p5en.48xlarge"
        in result.out
    )
    assert "from sts:GetCallerIdentity" in result.out
    assert "region              us-east-1  (from --region)" in result.out
    # Everything else is the template's, comments included.
    written = output.read_text()
    assert "# GPU nodes, FSx and placement groups live here" in written
    assert "111122223333" not in written
    template = tomllib.loads(Path(DEFAULT_PROFILE).read_text())
    assert tomllib.loads(written)["pretraining"] == template["pretraining"]


def test_keeps_the_templates_zone_when_it_offers_everything(stubs: Stubs, tmp_path: Path) -> None:
    _identity(stubs)
    _offerings(stubs, {t: ["us-east-1a", "us-east-1b"] for t in DEFAULT_TYPES}, DEFAULT_TYPES)
    _zones(stubs, ["us-east-1a", "us-east-1b"])
    output = tmp_path / "mine.toml"
    assert run("init", str(output), "--region", "us-east-1", "--from", DEFAULT_PROFILE).code == 0
    assert load_profile(output).platform.availability_zone == "us-east-1a"


def test_never_overwrites_without_force(stubs: Stubs, tmp_path: Path) -> None:
    output = tmp_path / "mine.toml"
    output.write_text("# mine\n")
    result = run("init", str(output), "--region", "us-east-1", "--from", DEFAULT_PROFILE)
    assert result.code == 2
    assert "--force" in result.err
    assert output.read_text() == "# mine\n"
    stubs.assert_done()  # no AWS call either

    _identity(stubs)
    _offerings(stubs, {t: ["us-east-1a"] for t in DEFAULT_TYPES}, DEFAULT_TYPES)
    _zones(stubs, ["us-east-1a", "us-east-1b"])
    forced = run("init", str(output), "--region", "us-east-1", "--from", DEFAULT_PROFILE, "--force")
    assert forced.code == 0, forced.err
    assert load_profile(output).platform.account == ACCOUNT


def test_type_offered_nowhere_fails_and_writes_nothing(stubs: Stubs, tmp_path: Path) -> None:
    _identity(stubs)
    types = ["p5.48xlarge", "p5en.48xlarge", "g6e.48xlarge"]
    _offerings(stubs, {"g6e.48xlarge": ["eu-west-1a"]}, types)
    output = tmp_path / "mine.toml"
    result = run("init", str(output), "--region", "eu-west-1", "--from", DEFAULT_PROFILE)
    assert result.code == 1
    assert "p5.48xlarge is not offered in any availability zone" in result.err
    assert not output.exists()


def test_a_user_caller_keeps_the_templates_admin_roles_and_says_so(
    stubs: Stubs, tmp_path: Path
) -> None:
    _identity(stubs, arn=f"arn:aws:iam::{ACCOUNT}:user/alice")
    template = str(REPO / "config" / "inference-g6e.toml")
    _offerings(stubs, {"g6e.48xlarge": ["us-west-2b"]}, ["g6e.48xlarge"])
    _zones(stubs, ["us-west-2a", "us-west-2b", "us-west-2c"])
    output = tmp_path / "serve.toml"
    result = run("init", str(output), "--region", "us-west-2", "--from", template)
    assert result.code == 0, result.err
    assert "is not a role" in result.out
    profile = load_profile(output)
    assert list(profile.platform.availability_zones) == ["us-west-2b", "us-west-2c"]
    assert profile.platform.admin_role_arns == load_profile(template).platform.admin_role_arns


def test_access_denied_is_an_aws_error(stubs: Stubs, tmp_path: Path) -> None:
    stubs["sts"].add_client_error("get_caller_identity", "AccessDenied", "no")
    result = run("init", str(tmp_path / "x.toml"), "--region", "us-east-1")
    assert result.code == 3
    assert "sts:GetCallerIdentity" in result.err


def test_help_works(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("init", "--help").code == 0
    assert "--force" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("arn", "role"),
    [
        (ROLE_SESSION, f"arn:aws:iam::{ACCOUNT}:role/MlPlatformAdmin"),
        (f"arn:aws:iam::{ACCOUNT}:role/Deployer", f"arn:aws:iam::{ACCOUNT}:role/Deployer"),
        (f"arn:aws:iam::{ACCOUNT}:user/alice", None),
        (
            "arn:aws-us-gov:sts::123456789012:assumed-role/R/s",
            "arn:aws-us-gov:iam::123456789012:role/R",
        ),
    ],
)
def test_role_of_caller(arn: str, role: str | None) -> None:
    assert role_arn_of_caller(arn) == role


def test_render_inserts_a_missing_key_and_replaces_placeholders() -> None:
    text = (
        '[platform]\nname = "fm"\nregion = "us-east-1"   # where\n\n[pretraining]\nenabled = true\n'
    )
    out = render_profile(text, {"region": "us-west-2", "account": ACCOUNT})
    assert 'region = "us-west-2"   # where' in out
    assert out.index(f'account = "{ACCOUNT}"') < out.index("[pretraining]")
    assert tomllib.loads(out)["platform"] == {
        "name": "fm",
        "region": "us-west-2",
        "account": ACCOUNT,
    }
