"""The storage construct rules called on plain arguments, without a construct or a synthesis."""

from __future__ import annotations

from fm_constructs.planning.fsx_sizing import LustreDeploymentType
from fm_constructs.rules import storage
from fm_constructs.rules.constructs import DATA_BUCKET, LUSTRE

_FS = {
    "deployment_type": LustreDeploymentType.PERSISTENT_2,
    "kms_key": None,
    "automatic_backup_retention_days": None,
    "associated": True,
    "daily_backup_start_time_utc": "03:00",
    "weekly_maintenance_start_time_utc": "7:05:00",
}


def test_valid_lustre_arguments_have_no_findings() -> None:
    assert storage.lustre_file_system(**_FS) == []  # type: ignore[arg-type]
    assert (
        storage.lustre_sizing_request(
            deployment_type=LustreDeploymentType.PERSISTENT_2,
            storage_capacity_gib=None,
            throughput_mb_s_per_tib=None,
        )
        == []
    )
    assert storage.mount_point("/fsx") == []
    assert storage.mount_point("${Token[TOKEN.1]}") == []


def test_sizing_request_next_to_explicit_values() -> None:
    both, scratch = storage.lustre_sizing_request(
        deployment_type=LustreDeploymentType.SCRATCH_2,
        storage_capacity_gib=1200,
        throughput_mb_s_per_tib=None,
    )
    assert (both.code, both.key) == (LUSTRE, "")
    assert both.message().startswith("sizing: give either sizing or storage_capacity_gib")
    assert (scratch.key, scratch.value) == ("deployment_type", "SCRATCH_2")


def test_lustre_backups_keys_and_windows() -> None:
    found = storage.lustre_file_system(
        **{  # type: ignore[arg-type]
            **_FS,
            "deployment_type": LustreDeploymentType.SCRATCH_2,
            "kms_key": "Key",
            "automatic_backup_retention_days": 7,
            "daily_backup_start_time_utc": "24:00",
            "weekly_maintenance_start_time_utc": "8:05:00",
        }
    )
    assert {f.code for f in found} == {LUSTRE}
    assert [f.key for f in found] == [
        "kms_key",
        "automatic_backup_retention_days",
        "daily_backup_start_time_utc",
        "weekly_maintenance_start_time_utc",
    ]
    assert "SCRATCH_2 file systems have no automatic backups" in found[1].allowed
    (linked,) = storage.lustre_file_system(**{**_FS, "automatic_backup_retention_days": 7})  # type: ignore[arg-type]
    assert "FSx does not back up file systems linked to S3" in linked.allowed
    (range_,) = storage.lustre_file_system(**{**_FS, "automatic_backup_retention_days": 91})  # type: ignore[arg-type]
    assert range_.allowed.startswith("must be a whole number of days from 0")


def test_imported_lustre_attributes() -> None:
    found = storage.imported_lustre(
        file_system_id="vol-1",
        dns_name="",
        mount_name="abc",
        security_group_ids=[],
        association_paths=("data",),
    )
    assert [f.key for f in found] == [
        "file_system_id",
        "dns_name",
        "security_group_ids",
        "association_paths[0]",
    ]


def test_data_bucket_rules() -> None:
    assert (
        storage.data_bucket(
            noncurrent_version_expiration_days=30, checkpoints_to_keep=3, checkpoint_prefix="c/"
        )
        == []
    )
    found = storage.data_bucket(
        noncurrent_version_expiration_days=0, checkpoints_to_keep=101, checkpoint_prefix="/c"
    )
    assert {f.code for f in found} == {DATA_BUCKET}
    assert [f.key for f in found] == [
        "noncurrent_version_expiration_days",
        "checkpoints_to_keep",
        "checkpoint_prefix",
    ]
    bad = storage.imported_data_bucket(bucket_name="s3://b", key_arn="alias/x")
    assert [f.key for f in bad] == ["bucket_name", "key_arn"]
    assert storage.imported_data_bucket(bucket_name="b", key_arn=None) == []
