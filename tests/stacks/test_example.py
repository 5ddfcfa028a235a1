"""docs/patterns/consumer-example.md, followed literally.

The page's step blocks (the ``bash`` fences after a ``consumer-steps`` comment) run as written
with ``bash -e``, from the root of a fresh copy of the repository's files (what a clone has) and
with a PATH that holds neither the repository's ``.venv`` nor its ``node_modules``: the app is
copied to a folder outside the clone, a new virtual environment, the library installed from the
clone's path as the page says, the CDK CLI from the example's own lock file, ``npx cdk synth``,
and the example's own pytest tests.
Any failing step fails the test. Then every template goes through cfn-lint.

Speed without changing a step, through the environment only: pip reads the wheels ``make
setup`` keeps in ``.venv/wheels`` (``PIP_NO_INDEX`` with ``PIP_FIND_LINKS``; the library itself
is still built from the copy) and skips compiling aws-cdk-lib's 220 MB of Python to bytecode
(``PIP_COMPILE=0``: imports compile what they use, once); npm prefers its cache, which ``make
setup``'s ``npm ci`` of the same CLI version filled.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.stacks.profiles import ROOT
from tests.support import cfn_lint

pytestmark = pytest.mark.xdist_group("consumer-example")
#: Following the page installs a virtual environment, the library and the CDK CLI (most of a
#: minute of one core): a stage of its own (``make e2e``, run by .ci/run after ``make test``).
#: ``make test`` builds the same app in process and checks it against its snapshot.
followed_literally = pytest.mark.e2e

PAGE = ROOT / "docs" / "patterns" / "consumer-example.md"
EXAMPLE = ROOT / "examples" / "training-cluster"
WHEELS = ROOT / ".venv" / "wheels"
_STEPS = re.compile(r"<!-- consumer-steps[^>]*-->\s*```bash\n(.*?)```", re.DOTALL)


def page_steps() -> list[str]:
    """The command lines of the page's step blocks, in order, comments stripped."""
    lines: list[str] = []
    for block in _STEPS.findall(PAGE.read_text()):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command and not command.startswith("#"):
                lines.append(command)
    return lines


def _repository_files() -> list[str]:
    """What a clone of the repository holds: tracked files plus new, not ignored ones."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def _clean_environment() -> dict[str, str]:
    """The caller's environment without the repository's own tools on PATH."""
    own = {str(ROOT / ".venv" / "bin"), str(ROOT / "node_modules" / ".bin")}
    env = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "PYTHONPATH",
            "VIRTUAL_ENV",
            "CDK_OUTDIR",
            "CDK_CONTEXT_JSON",
            "PYTHONDONTWRITEBYTECODE",
            "PYTHONPYCACHEPREFIX",
        }
        and not k.startswith(("PYTEST_", "FM_"))
    }
    env["PATH"] = os.pathsep.join(
        part for part in env.get("PATH", "").split(os.pathsep) if part and part not in own
    )
    if WHEELS.is_dir():
        env["PIP_NO_INDEX"] = "1"
        env["PIP_FIND_LINKS"] = str(WHEELS)
        # Installing from the wheels alone: the machine's pip configuration (extra indexes it
        # may list) plays no part, and warns about none of them.
        env["PIP_CONFIG_FILE"] = os.devnull
    env["PIP_COMPILE"] = "0"
    env["npm_config_prefer_offline"] = "true"
    env["npm_config_audit"] = "false"
    env["npm_config_fund"] = "false"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _example_template(context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The example app built in this process, its stack's template made stable; ``context``
    replaces the app's feature flags (default: fm_constructs.feature_flags, as new_app())."""
    import importlib.util

    import aws_cdk as cdk

    from fm_constructs.testing import new_app, stable_template

    spec = importlib.util.spec_from_file_location("training_cluster_app", EXAMPLE / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = new_app() if context is None else cdk.App(context=context)
    return dict(stable_template(module.build(app)))


@functools.cache
def _example_template_json() -> str:
    """The example's template with the published flags, built once for the tests below."""
    return json.dumps(_example_template(), sort_keys=True)


def test_example_built_in_process_matches_its_snapshot_and_passes_cfn_lint(
    request: pytest.FixtureRequest,
) -> None:
    """What the page's steps end with (the example's own snapshot test), without the install:
    the app the page copies builds from this checkout into the committed snapshot.
    ``pytest tests/stacks --snapshot-update`` refreshes that snapshot too."""
    from fm_constructs.testing import assert_matches_snapshot

    template = json.loads(_example_template_json())
    update = bool(request.config.getoption("--snapshot-update"))
    snapshot = EXAMPLE / "tests" / "snapshots" / "team-training.json"
    assert_matches_snapshot(template, snapshot, update=update)
    assert cfn_lint(json.dumps(template), "us-east-1") == []


@pytest.fixture(scope="module")
def followed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """Copy the repository, run the page's steps there; the example folder and the output."""
    clone = tmp_path_factory.mktemp("consumer") / "fm-constructs"  # ../ is a folder of its own
    for name in _repository_files():
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    script = "\n".join(["set -euo pipefail", *page_steps()])
    result = subprocess.run(
        ["bash", "-c", script],
        cwd=clone,
        env=_clean_environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, f"a step of {PAGE.name} failed:\n{result.stdout[-6000:]}"
    app = clone.parent / "my-training-app"
    assert not app.is_relative_to(clone)
    return app, result.stdout


def _templates(outdir: Path) -> dict[str, Path]:
    manifest = json.loads((outdir / "manifest.json").read_text())
    return {
        artifact["properties"].get("stackName", name): outdir
        / artifact["properties"]["templateFile"]
        for name, artifact in manifest["artifacts"].items()
        if artifact["type"] == "aws:cloudformation:stack"
    }


def test_page_steps_cover_install_cli_synth_and_tests() -> None:
    steps = page_steps()
    assert steps[:3] == [
        'FM_CONSTRUCTS="$PWD"',
        "cp -r examples/training-cluster ../my-training-app",
        "cd ../my-training-app",
    ]  # the app builds outside the repository
    for expected in (
        'pip install "$FM_CONSTRUCTS" -r requirements.txt',
        "npm ci",
        "npx cdk synth",
        "cfn-lint cdk.out/*.template.json",
        "pytest",
    ):
        assert any(step.startswith(expected) for step in steps), expected


@followed_literally
def test_example_synthesizes_its_own_stack_from_building_blocks(
    followed: tuple[Path, str],
) -> None:
    example, _ = followed
    templates = _templates(example / "cdk.out")
    assert list(templates) == ["team-training"]
    resources = json.loads(templates["team-training"].read_text())["Resources"]
    types = {r["Type"] for r in resources.values()}
    for expected in (
        "AWS::EC2::VPC",
        "AWS::S3::Bucket",
        "AWS::FSx::FileSystem",
        "AWS::EKS::Cluster",
        "AWS::EKS::Nodegroup",
        "AWS::APS::Scraper",
    ):
        assert expected in types


@followed_literally
def test_example_templates_pass_cfn_lint(followed: tuple[Path, str]) -> None:
    example, _ = followed
    for path in _templates(example / "cdk.out").values():
        assert cfn_lint(path.read_text(), "us-east-1") == [], path.name


#: Warnings that come from the machine, not from the steps: npm reading a user ~/.npmrc.
_MACHINE_WARNINGS = re.compile(r"npm warn Unknown user config")


@followed_literally
def test_steps_print_no_warning(followed: tuple[Path, str]) -> None:
    """No packaging, Node end-of-life, feature-flag or construct warning on the way."""
    _, output = followed
    warnings = [
        line
        for line in output.splitlines()
        if re.search(r"warn|end-of-life|feature flags", line, re.IGNORECASE)
        and not _MACHINE_WARNINGS.search(line)
    ]
    assert warnings == []


def test_example_uses_the_published_feature_flags_and_the_pinned_cli() -> None:
    from fm_constructs.feature_flags import feature_flags

    assert json.loads((EXAMPLE / "cdk.json").read_text())["context"] == feature_flags()
    root_cli = json.loads((ROOT / "package.json").read_text())["devDependencies"]["aws-cdk"]
    example_cli = json.loads((EXAMPLE / "package.json").read_text())["devDependencies"]
    assert example_cli == {"aws-cdk": root_cli}
    lock = json.loads((EXAMPLE / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/aws-cdk"]["version"] == root_cli


def test_example_does_not_reach_into_the_repository() -> None:
    for source in [EXAMPLE / "app.py", *(EXAMPLE / "tests").glob("*.py")]:
        text = source.read_text()
        assert "sys.path" not in text, source
        assert "from stacks" not in text and "import stacks" not in text, source


def test_example_lint_settings_skip_exactly_what_its_template_raises(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app's .cfnlintrc.yaml (what `cfn-lint cdk.out/*.template.json` reads in the app's
    folder, a page step) skips W3005 and W3010, each with a reason, and those are the only
    findings cfn-lint has for the template without it: nothing is hidden that is not there."""
    import yaml
    from cfnlint.config import ConfigMixIn, ManualArgs
    from cfnlint.decode.decode import decode_str
    from cfnlint.runner import Runner

    settings = (EXAMPLE / ".cfnlintrc.yaml").read_text()
    ignored = yaml.safe_load(settings)["ignore_checks"]
    assert sorted(ignored) == ["W3005", "W3010"]
    for rule in ignored:
        assert re.search(rf"# {rule} \"[^\"]+\": \S", settings), f"{rule} has no reason"
    decoded, errors = decode_str(_example_template_json())
    assert not errors and decoded is not None
    # From a folder without settings (cfn-lint reads a .cfnlintrc.yaml in the working folder,
    # and the repository's own skips the same two rules).
    monkeypatch.chdir(tmp_path)
    runner = Runner(ConfigMixIn(**ManualArgs(regions=["us-east-1"])))
    assert {m.rule.id for m in runner.validate_template(decoded)} == set(ignored)
    for rule in ignored:
        assert rule in PAGE.read_text(), f"the page does not explain {rule}"


_SHAPING_FLAGS = re.compile(r"<!-- example-shaping-flags -->\n((?:- .*\n(?:  .*\n)*)+)")


def test_the_flags_the_page_names_are_all_the_example_depends_on() -> None:
    """docs/patterns/consumer-example.md names the feature flags that shape the example's
    template: with only those set (to the published values), the template is the same as with
    every published flag."""
    from fm_constructs.feature_flags import feature_flags

    block = _SHAPING_FLAGS.search(PAGE.read_text())
    assert block is not None
    named = dict(re.findall(r"^- `([^`]+)`: `([^`]+)`", block.group(1), re.MULTILINE))
    flags = feature_flags()
    assert named and all(json.dumps(flags[k]) == v for k, v in named.items()), named
    only_named = _example_template({k: flags[k] for k in named})
    assert json.dumps(only_named, sort_keys=True) == _example_template_json()
