"""``cdk synth`` as a user runs it, with no AWS credentials anywhere: a profile that sets
``platform.account`` synthesizes without a single context lookup, and the app refuses to guess
a profile that was not named.

The real CDK CLI (the repository's pinned one) runs in a folder of its own, with a
``cdk.json`` that names the repository's ``app.py`` and feature flags. Every ``AWS_*``
variable is removed and the AWS configuration files point at ``/dev/null``, so any lookup
(availability zones, AMIs, VPCs) would either fail for want of credentials or show in the
cloud assembly's ``missing`` list and a ``cdk.context.json`` written next to ``cdk.json``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.stacks.profiles import ROOT, cdk_json_context

#: The CDK CLI synthesizes a profile in a subprocess: the end-to-end stage (make e2e, run by
#: .ci/run after make test).
pytestmark = pytest.mark.e2e

ACCOUNT = "123456789012"
CDK = ROOT / "node_modules" / ".bin" / "cdk"

needs_cdk = pytest.mark.skipif(
    not CDK.exists(), reason="the CDK CLI is not installed (make setup runs npm ci)"
)


def _no_aws_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CDK_"))}
    env.update(
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        CDK_DISABLE_VERSION_CHECK="true",
        CDK_DISABLE_CLI_TELEMETRY="true",
        JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION="1",
        PYTHONPATH=str(ROOT),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    )
    return env


def _cdk(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "cdk.json").write_text(
        json.dumps({"app": f"{sys.executable} {ROOT / 'app.py'}", "context": cdk_json_context()})
    )
    return subprocess.run(
        [str(CDK), *args],
        cwd=folder,
        env=_no_aws_environment(),
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _with_account(folder: Path) -> Path:
    text = (ROOT / "config" / "inference-g6e.toml").read_text()
    assert "\naccount" not in text
    profile = folder / "mine.toml"
    profile.write_text(text.replace("[platform]\n", f'[platform]\naccount = "{ACCOUNT}"\n', 1))
    return profile


@needs_cdk
def test_a_profile_with_an_account_synthesizes_with_no_credentials_and_no_lookup(
    tmp_path: Path,
) -> None:
    profile = _with_account(tmp_path)
    result = _cdk(tmp_path, "synth", "--quiet", "-c", f"config={profile}", "-o", "out")
    assert result.returncode == 0, result.stderr[-4000:]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest.get("missing") is None  # nothing the CLI would have to look up
    assert not (tmp_path / "cdk.context.json").exists()  # nor write down
    stacks = [a for a in manifest["artifacts"].values() if a["type"] == "aws:cloudformation:stack"]
    assert stacks and all(a["environment"] == f"aws://{ACCOUNT}/us-west-2" for a in stacks), [
        a["environment"] for a in stacks
    ]
    platform = json.loads((tmp_path / "out" / "fm-serve-platform.template.json").read_text())
    zones = {
        r["Properties"]["AvailabilityZone"]
        for r in platform["Resources"].values()
        if r["Type"] == "AWS::EC2::Subnet"
    }
    assert zones == {"us-west-2a", "us-west-2b"}  # the profile's zones, not a lookup's
    # The run names the profile it built, with the account.
    assert f"fm-constructs: profile {profile}: deployment 'fm-serve' in us-west-2" in result.stderr
    assert f"account {ACCOUNT}" in result.stderr


@needs_cdk
def test_without_a_named_profile_nothing_is_synthesized(tmp_path: Path) -> None:
    result = _cdk(tmp_path, "synth", "--quiet", "-o", "out")
    assert result.returncode != 0
    assert "no profile named" in result.stderr
    assert "-c config=" in result.stderr and "config/default.toml" in result.stderr
    assert not (tmp_path / "out" / "fm-platform.template.json").exists()


def test_cdk_json_names_no_default_profile() -> None:
    """``cdk deploy --all`` in the repository without ``-c config=...`` deploys nothing."""
    assert "config" not in json.loads((ROOT / "cdk.json").read_text())["context"]


def test_user_profiles_are_not_swept_by_the_profile_tests(tmp_path: Path) -> None:
    """``fmc init profiles/mine.toml`` (the documented place) is outside what the tests and
    the doc figures sweep (``config/*.toml``), and git ignores it."""
    from tests.stacks.profiles import PROFILE_PATHS

    assert all(path.parent == ROOT / "config" for path in PROFILE_PATHS)
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", "profiles/mine.toml"], cwd=ROOT, check=False
    )
    assert ignored.returncode == 0


def test_app_py_without_a_profile_stops_and_lists_the_shipped_ones(tmp_path: Path) -> None:
    """app.py as the CDK CLI starts it (no config context): exit 1, nothing synthesized."""
    env = {
        **_no_aws_environment(),
        "CDK_CONTEXT_JSON": json.dumps(cdk_json_context()),
        "CDK_OUTDIR": str(tmp_path / "out"),
    }
    result = subprocess.run(
        [sys.executable, str(ROOT / "app.py")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert result.returncode == 1
    assert "error: no profile named" in result.stderr
    assert "config/default.toml" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "manifest.json").exists()
