"""``fmc pcs-ami``: the newest image of the pinned name pattern and owner, found with one
read-only DescribeImages call (botocore Stubber), printed as the profile's
``[<workload>.pcs_ami]`` table and, with ``--write``, pinned in the profile, which then loads."""

from __future__ import annotations

import re
from pathlib import Path

from fm_constructs import pins
from fm_constructs.config import load_profile
from tests.unit.cli_stubs import REPO, Stubs, run, stubs  # noqa: F401 (fixture)

SHIPPED = (REPO / "config" / "pcs.toml").read_text(encoding="utf-8")
PATTERN = f"fm-pcs-ubuntu-*-x86_64-slurm-{pins.pcs().slurm_version}-*"
OLDER = {
    "ImageId": "ami-00000000000000001",
    "Name": "fm-pcs-ubuntu-22.04-x86_64-slurm-25.05-20261001",
    "CreationDate": "2026-10-01T09:00:00.000Z",
}
NEWER = {
    "ImageId": "ami-0fedcba9876543210",
    "Name": "fm-pcs-ubuntu-22.04-x86_64-slurm-25.05-20261120",
    "CreationDate": "2026-11-20T09:00:00.000Z",
}


def _without_table(text: str) -> str:
    """The shipped profile as a user has it right after switching to 'pcs': no image yet."""
    return re.sub(r"(?:#[^\n]*\n)?\[pretraining\.pcs_ami\]\n(?:[^\[\n][^\n]*\n)*\n?", "", text)


def _expect_describe(stubs: Stubs, images: list[dict[str, str]]) -> None:  # noqa: F811
    stubs["ec2"].add_response(
        "describe_images",
        {"Images": images},
        {
            "Owners": ["self"],
            "Filters": [
                {"Name": "name", "Values": [PATTERN]},
                {"Name": "state", "Values": ["available"]},
            ],
        },
    )


def test_write_pins_the_newest_image_and_the_profile_then_loads(
    tmp_path: Path,
    stubs: Stubs,  # noqa: F811
) -> None:
    path = tmp_path / "pcs.toml"
    path.write_text(_without_table(SHIPPED), encoding="utf-8")
    assert "\n[pretraining.pcs_ami]\n" not in path.read_text()
    _expect_describe(stubs, [OLDER, NEWER])
    result = run("pcs-ami", "--config", str(path), "--write")
    assert result.code == 0, result.err
    stubs.assert_done()
    profile = load_profile(path)
    ami = profile.pretraining.pcs_ami
    assert (ami.id, ami.region, ami.name) == (NEWER["ImageId"], "us-east-1", NEWER["Name"])
    assert f'id = "{NEWER["ImageId"]}"' in result.out and "written to" in result.out
    # The rest of the profile is as the user wrote it, comments included.
    assert path.read_text().startswith(_without_table(SHIPPED).rstrip("\n"))


def test_write_replaces_the_table_in_place(tmp_path: Path, stubs: Stubs) -> None:  # noqa: F811
    path = tmp_path / "pcs.toml"
    path.write_text(SHIPPED, encoding="utf-8")
    _expect_describe(stubs, [NEWER])
    assert run("pcs-ami", "--config", str(path), "--write").code == 0
    text = path.read_text()
    assert text.count("\n[pretraining.pcs_ami]\n") == 1
    assert "ami-0a1b2c3d4e5f60718" not in text
    # The table still sits before [pretraining.storage], which is unchanged.
    assert text.index("\n[pretraining.pcs_ami]\n") < text.index("[pretraining.storage]")
    assert text.split("[pretraining.storage]")[1] == SHIPPED.split("[pretraining.storage]")[1]
    assert load_profile(path).pretraining.pcs_ami.id == NEWER["ImageId"]


def test_without_write_the_profile_is_untouched(tmp_path: Path, stubs: Stubs) -> None:  # noqa: F811
    path = tmp_path / "pcs.toml"
    path.write_text(SHIPPED, encoding="utf-8")
    _expect_describe(stubs, [NEWER])
    result = run("pcs-ami", "--config", str(path), "--json")
    assert result.code == 0, result.err
    assert '"id": "ami-0fedcba9876543210"' in result.out and '"written": false' in result.out
    assert path.read_text() == SHIPPED


def test_no_image_of_the_pattern_is_a_failed_check(tmp_path: Path, stubs: Stubs) -> None:  # noqa: F811
    path = tmp_path / "pcs.toml"
    path.write_text(SHIPPED, encoding="utf-8")
    _expect_describe(stubs, [])
    result = run("pcs-ami", "--config", str(path), "--write")
    assert result.code == 1
    assert PATTERN in result.err and "owned by 'self'" in result.err
    assert path.read_text() == SHIPPED


def test_a_workload_not_on_pcs_is_refused_before_any_call(
    tmp_path: Path,
    stubs: Stubs,  # noqa: F811
) -> None:
    result = run("pcs-ami", "--config", str(REPO / "config" / "hyperpod-slurm.toml"))
    assert result.code == 2
    assert "does not run on 'pcs'" in result.err
    assert not stubs.stubbers  # no AWS client was made


def test_the_table_is_replaced_with_one_blank_line_before_the_next() -> None:
    from fm_constructs.cli.pcs_ami import with_table

    text = '[a]\nx = 1\n\n[pretraining.pcs_ami]\nid = "old"\n\n[b]\ny = 2\n'
    assert with_table(text, "pretraining", '[pretraining.pcs_ami]\nid = "new"\n') == (
        '[a]\nx = 1\n\n[pretraining.pcs_ami]\nid = "new"\n\n[b]\ny = 2\n'
    )
    assert with_table("[a]\nx = 1\n", "pretraining", "[pretraining.pcs_ami]\n") == (
        "[a]\nx = 1\n\n[pretraining.pcs_ami]\n"
    )
