"""Cluster users ([[<workload>.users]]) and the HyperPod root volume in the profile: loaded into
the model, checked by coded rules when the profile loads (with the file and the key path),
refused alike by ``fmc plan`` and ``cdk synth``, and by ``HyperPodCluster`` itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from fm_constructs.config import load_profile
from fm_constructs.domain.users import ClusterUser
from fm_constructs.errors import FmValidationError
from fm_constructs.rules.users import check_users
from tests.unit.cli_stubs import run
from tests.unit.test_bad_profiles import _synth

ROOT = Path(__file__).resolve().parents[2]
SLURM = (ROOT / "config" / "hyperpod-slurm.toml").read_text(encoding="utf-8")
USERS = """
[[pretraining.users]]
name = "alice"
uid = 2001

[[pretraining.users]]
name = "bob"
uid = 2002
gid = 3000
groups = ["docker"]
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "profile.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _findings(tmp_path: Path, text: str) -> FmValidationError:
    path = _write(tmp_path, text)
    with pytest.raises(FmValidationError) as raised:
        load_profile(path)
    assert raised.value.context == f"profile {path}"
    return raised.value


def test_users_load_into_the_workload(tmp_path: Path) -> None:
    profile = load_profile(_write(tmp_path, SLURM + USERS))
    assert profile.pretraining.users == (
        ClusterUser(name="alice", uid=2001),
        ClusterUser(name="bob", uid=2002, gid=3000, groups=("docker",)),
    )
    assert profile.pretraining.users[0].primary_gid == 2001
    assert profile.pretraining.users[0].home("/fsx") == "/fsx/home/alice"


@pytest.mark.parametrize(
    ("entry", "key", "code", "fragment"),
    [
        ('name = "Alice"\nuid = 2001', "pretraining.users[0].name", "FM330", "login name"),
        ('name = "slurm"\nuid = 2001', "pretraining.users[0].name", "FM330", "node image"),
        ('name = "carol"\nuid = 1000', "pretraining.users[0].uid", "FM330", "2000 to 59999"),
        (
            'name = "carol"\nuid = 2001\ngid = 70000',
            "pretraining.users[0].gid",
            "FM330",
            "2000 to 59999",
        ),
        (
            'name = "carol"\nuid = 2001\ngroups = ["Wheel"]',
            "pretraining.users[0].groups",
            "FM330",
            "group names",
        ),
        ('name = "carol"', "pretraining.users[0].uid", "FM003", "is required"),
        ('name = "carol"\nuid = "2001"', "pretraining.users[0].uid", "FM002", "an integer"),
        ('name = "carol"\nuid = 2001\nshell = "zsh"', "pretraining.users[0].shell", "FM001", ""),
    ],
    ids=[
        "upper-case",
        "reserved",
        "uid-low",
        "gid-high",
        "group-name",
        "no-uid",
        "uid-type",
        "key",
    ],
)
def test_a_bad_user_is_refused_at_load(
    tmp_path: Path, entry: str, key: str, code: str, fragment: str
) -> None:
    error = _findings(tmp_path, SLURM + f"\n[[pretraining.users]]\n{entry}\n")
    matching = [f for f in error.findings if f.key == key and f.code == code]
    assert matching, f"{key} [{code}] not among {error.codes}: {error}"
    assert fragment in matching[0].line()


def test_two_users_with_one_uid_or_gid_are_refused(tmp_path: Path) -> None:
    clash = USERS + '\n[[pretraining.users]]\nname = "alice2"\nuid = 2001\n'
    clash += '\n[[pretraining.users]]\nname = "carol"\nuid = 2003\ngid = 3000\n'
    error = _findings(tmp_path, SLURM + clash)
    lines = {f.key: f.line() for f in error.findings if f.code == "FM331"}
    assert "is already used by pretraining.users[0] (alice)" in lines["pretraining.users[2].uid"]
    assert "pretraining.users[1] (bob)" in lines["pretraining.users[3].gid"]


def test_users_need_hyperpod_slurm_and_a_file_system(tmp_path: Path) -> None:
    no_storage = SLURM.replace(
        "[pretraining.storage]\n", "[pretraining.storage]\nenabled = false\n"
    )
    error = _findings(tmp_path, no_storage + USERS)
    (finding,) = [f for f in error.findings if f.code == "FM332"]
    assert finding.key == "pretraining.users" and "storage.enabled is false" in finding.line()
    eks = SLURM.replace('orchestrator = "hyperpod-slurm"', 'orchestrator = "eks"')
    error = _findings(tmp_path, eks + USERS)
    assert any(f.code == "FM332" and "'eks'" in f.line() for f in error.findings)


def test_root_volume_size_on_hyperpod_is_refused_by_plan_and_synth(tmp_path: Path) -> None:
    text = SLURM.replace(
        "instance_count = 8\n", "instance_count = 8\nroot_volume_size_gib = 400\n", 1
    )
    error = _findings(tmp_path, text)
    (finding,) = [f for f in error.findings if f.code == "FM334"]
    line = finding.line()
    assert line.startswith("pretraining.root_volume_size_gib: does not apply to HyperPod")
    path = tmp_path / "profile.toml"
    plan = run("plan", "--config", str(path))
    assert plan.code == 2 and line in plan.err
    code, synth = _synth(path)
    assert code == 1 and line in synth


def test_the_rules_pass_a_valid_list() -> None:
    assert (
        check_users([ClusterUser(name="alice", uid=2001), ClusterUser(name="b-2", uid=59999)]) == []
    )


def test_users_on_inference_are_a_key_of_another_workload(tmp_path: Path) -> None:
    text = (ROOT / "config" / "inference-g6e.toml").read_text(encoding="utf-8")
    error = _findings(tmp_path, text + USERS.replace("pretraining", "inference"))
    (finding,) = [f for f in error.findings if f.key == "inference.users"]
    assert finding.code == "FM010" and "[pretraining] or [post_training]" in finding.line()
