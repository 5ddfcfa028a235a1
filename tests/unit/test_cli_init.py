"""fmc init, against botocore's Stubber: the calls it makes, what it writes, what it refuses."""

from __future__ import annotations

import json
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


# ---------------------------------------------------------------- offline and every choice a flag

SSO_ROLE = "AWSReservedSSO_MlAdmin_0123456789abcdef"
SSO_PATH = "/aws-reserved/sso.amazonaws.com/eu-west-2/"


def test_help_shows_the_offline_path(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("init", "--help").code == 0
    shown = capsys.readouterr().out
    for flag in (
        "--offline",
        "--workloads",
        "--capacity-kind",
        "--reservation-id",
        "--instance-count",
        "--availability-zones",
        "--admin-role-arn",
        "--no-input",
        "--json",
    ):
        assert flag in shown, flag
    assert "fmc init profiles/mine.toml --offline" in shown


def test_offline_init_writes_a_profile_that_plans_and_synthesizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A newcomer with no credentials at all: init offline, then fmc plan, then synth."""
    for name in list(__import__("os").environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    output = tmp_path / "profiles" / "serve.toml"
    result = run(
        "init",
        str(output),
        "--offline",
        "--no-input",
        "--name",
        "serve",
        "--region",
        "us-west-2",
        "--availability-zones",
        "us-west-2b,us-west-2c",
        "--account",
        ACCOUNT,
        "--admin-role-arn",
        f"arn:aws:iam::{ACCOUNT}:role/Ops",
        "--workloads",
        "inference",
        "--instance-count",
        "3",
    )
    assert result.code == 0, result.err
    profile = load_profile(output)
    assert [w.name for w in profile.enabled_workloads] == ["inference"]
    assert profile.inference.instance_count == 3
    assert profile.platform.name == "serve"
    assert profile.platform.account == ACCOUNT
    assert profile.platform.region == "us-west-2"
    assert profile.platform.availability_zone == "us-west-2b"
    assert list(profile.platform.admin_role_arns) == [f"arn:aws:iam::{ACCOUNT}:role/Ops"]
    plan = run("plan", "--config", str(output))
    assert plan.code == 0, plan.err
    assert "inference" in plan.out

    from stacks.app_builder import build_stacks, create_app
    from tests.stacks.profiles import cdk_json_context

    app = create_app(outdir=str(tmp_path / "out"), context=cdk_json_context())
    stacks = build_stacks(app, profile)
    assembly = app.synth()
    assert {s.stack_name for s in assembly.stacks} == {s.stack_name for s in stacks.all}
    assert "serve-inference-compute" in {s.stack_name for s in assembly.stacks}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert "missing" not in manifest  # no lookup, though the profile names an account


def test_offline_in_another_region_asks_for_the_zones(tmp_path: Path) -> None:
    result = run("init", str(tmp_path / "x.toml"), "--offline", "--region", "eu-west-1")
    assert result.code == 2
    assert "--availability-zones eu-west-1a,eu-west-1b" in result.err
    assert not (tmp_path / "x.toml").exists()


def test_offline_capacity_block_flags(tmp_path: Path) -> None:
    output = tmp_path / "train.toml"
    result = run(
        "init",
        str(output),
        "--offline",
        "--no-input",
        "--workloads",
        "pretraining",
        "--instance-count",
        "pretraining=8",
        "--capacity-kind",
        "capacity-block",
        "--reservation-id",
        "cr-0123456789abcdef0",
    )
    assert result.code == 0, result.err
    profile = load_profile(output)
    assert profile.pretraining.instance_count == 8
    assert profile.pretraining.capacity.kind.value == "capacity-block"
    assert profile.pretraining.capacity.reservation_id == "cr-0123456789abcdef0"
    assert not profile.post_training.enabled and not profile.inference.enabled


def test_a_template_resource_group_of_another_region_is_dropped(tmp_path: Path) -> None:
    """pretraining-1024's resource_group_arn is in us-east-1: not written for us-west-2."""
    template = str(REPO / "config" / "pretraining-1024.toml")
    output = tmp_path / "xl.toml"
    argv = [
        "init",
        str(output),
        "--from",
        template,
        "--offline",
        "--no-input",
        "--region",
        "us-west-2",
        "--availability-zones",
        "us-west-2a,us-west-2b",
    ]
    refused = run(*argv)
    # Without one of its own the profile does not load: nothing written, the fix named.
    assert refused.code == 1
    assert not output.exists()
    assert "resource_group_arn" in refused.err or "reservation_id" in refused.err

    result = run(*argv, "--capacity-kind", "on-demand")
    assert result.code == 0, result.err
    written = output.read_text()
    assert "arn:aws:resource-groups:us-east-1" not in written
    assert "# replace: your reservations' resource group" not in written
    profile = load_profile(output)
    assert profile.pretraining.capacity.resource_group_arn is None
    assert profile.pretraining.capacity.kind.value == "on-demand"

    mine = "arn:aws:resource-groups:us-west-2:444455556666:group/mine"
    kept = run(*argv, "--force", "--resource-group-arn", mine, "--json")
    assert kept.code == 0, kept.err
    document = json.loads(kept.out)
    assert any("was dropped" in w for w in document["warnings"])
    assert load_profile(output).pretraining.capacity.resource_group_arn == mine


def test_an_identity_center_session_gets_its_role_arn_with_its_path(
    stubs: Stubs, tmp_path: Path
) -> None:
    """assumed-role/AWSReservedSSO_... names no path; iam:GetRole gives the ARN that exists."""
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/{SSO_ROLE}/alice@example.com"
    _identity(stubs, arn=session, role_path=SSO_PATH)
    output = tmp_path / "mine.toml"
    result = run(
        "init",
        str(output),
        "--from",
        DEFAULT_PROFILE,
        "--region",
        "us-east-1",
        "--availability-zones",
        "us-east-1a,us-east-1b",
        "--no-input",
    )
    assert result.code == 0, result.err
    stubs.assert_done()
    assert list(load_profile(output).platform.admin_role_arns) == [
        f"arn:aws:iam::{ACCOUNT}:role/aws-reserved/sso.amazonaws.com/eu-west-2/{SSO_ROLE}"
    ]
    assert "by iam:GetRole" in result.out


def test_when_get_role_is_denied_no_guessed_principal_is_written(
    stubs: Stubs, tmp_path: Path
) -> None:
    session = f"arn:aws:sts::{ACCOUNT}:assumed-role/{SSO_ROLE}/alice@example.com"
    stubs["sts"].add_response(
        "get_caller_identity", {"Account": ACCOUNT, "Arn": session, "UserId": "AROA:alice"}, {}
    )
    stubs["iam"].add_client_error("get_role", "AccessDenied", "no", expected_params=None)
    output = tmp_path / "mine.toml"
    result = run(
        "init",
        str(output),
        "--region",
        "us-east-1",
        "--availability-zones",
        "us-east-1a,us-east-1b",
        "--no-input",
    )
    assert result.code == 0, result.err
    assert load_profile(output).platform.admin_role_arns == ()
    assert f"aws iam get-role --role-name {SSO_ROLE} --query Role.Arn" in result.out
    assert "aws-reserved/sso.amazonaws.com/<region>/" in result.out


def test_at_a_terminal_init_asks_what_no_flag_gave(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    # workloads, then nodes per workload, then the capacity of the first one.
    answers = Terminal("pretraining,inference\n6\n\ncapacity-block\ncr-0123456789abcdef0\n")
    monkeypatch.setattr(sys, "stdin", answers)
    monkeypatch.setattr(sys, "stderr", Terminal())
    output = tmp_path / "asked.toml"
    result = run("init", str(output), "--offline")
    assert result.code == 0, result.err
    profile = load_profile(output)
    assert [w.name for w in profile.enabled_workloads] == ["pretraining", "inference"]
    assert profile.pretraining.instance_count == 6
    assert (
        profile.inference.instance_count == load_profile(DEFAULT_PROFILE).inference.instance_count
    )
    assert profile.pretraining.capacity.reservation_id == "cr-0123456789abcdef0"
    assert "workloads (pretraining, post_training, inference) [" in result.err
    assert "pretraining: capacity (on-demand, odcr, capacity-block, training-plan)" in result.err


def test_no_input_never_asks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal(""))
    monkeypatch.setattr(sys, "stderr", Terminal())
    result = run("init", str(tmp_path / "x.toml"), "--offline", "--no-input")
    assert result.code == 0, result.err
    assert result.err == ""


def test_without_credentials_online_init_names_the_offline_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in list(__import__("os").environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    result = run("init", str(tmp_path / "x.toml"), "--no-input", "--region", "us-east-1")
    assert result.code == 3
    assert "no AWS credentials found" in result.err and "--offline" in result.err
    assert not (tmp_path / "x.toml").exists()


def test_at_a_terminal_empty_answers_keep_the_templates_choices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Enter at every question: the template's workloads, counts and Capacity Block stay."""
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    template = REPO / "config" / "pretraining-capacity-block.toml"
    monkeypatch.setattr(sys, "stdin", Terminal("\n\n\n\n"))
    monkeypatch.setattr(sys, "stderr", Terminal())
    output = tmp_path / "kept.toml"
    result = run("init", str(output), "--offline", "--from", str(template))
    assert result.code == 0, result.err
    written, shipped = load_profile(output), load_profile(template)
    assert written.pretraining.capacity == shipped.pretraining.capacity
    assert written.pretraining.instance_count == shipped.pretraining.instance_count
