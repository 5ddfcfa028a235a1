"""``fmc pcs-ami``: pin the AMI of a workload's AWS PCS nodes in its profile.

The profile pins the image (``[<workload>.pcs_ami]`` id, region and name; rule FM337), so a
synthesis needs no network and a deploy never picks up a new image by itself. This command
finds the newest available image of the pinned name pattern and owner (``[pcs]`` in the pins:
the Slurm version and the instance type's architecture filled in) in the profile's region
with one read-only call (EC2 DescribeImages), prints the table and, with ``--write``,
writes it into the profile. It reads the profile as TOML, not through the loader, because the
loader refuses a 'pcs' profile that has no AMI yet.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fm_constructs import pins
from fm_constructs.catalog.lookup import find_instance_type
from fm_constructs.cli.exit_codes import CliError, ExitCode
from fm_constructs.rules.online.aws import ask_required

TABLE = "pcs_ami"


@dataclass(frozen=True)
class PcsAmiRequest:
    """What to look for: the profile's file, the workload, its region and the image name
    pattern and owner (the pins' unless given)."""

    path: Path
    workload: str
    region: str
    name_pattern: str
    owner: str


@dataclass(frozen=True)
class PcsImage:
    """The image found: its id, name and creation date (ISO 8601, as EC2 gives it)."""

    image_id: str
    name: str
    creation_date: str


def request_for(
    path: Path,
    workload: str,
    *,
    region: str | None = None,
    name_pattern: str | None = None,
    owner: str | None = None,
) -> PcsAmiRequest:
    """The request for ``workload`` of the profile at ``path``: its platform.region (or
    ``region``) and the pinned name pattern for its instance type's architecture."""
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise CliError(f"pcs-ami: cannot read profile {path}: {error}", ExitCode.USAGE) from None
    table = document.get(workload)
    if not isinstance(table, dict) or table.get("orchestrator") != "pcs":
        raise CliError(
            f"pcs-ami: {path}: [{workload}] does not run on 'pcs' (orchestrator = \"pcs\"); "
            "only AWS PCS nodes take a pinned AMI",
            ExitCode.USAGE,
        )
    chosen_region = region or document.get("platform", {}).get("region")
    if not isinstance(chosen_region, str) or not chosen_region:
        raise CliError(
            f"pcs-ami: {path}: platform.region is not set; set it or pass --region",
            ExitCode.USAGE,
        )
    spec = find_instance_type(str(table.get("instance_type", "")))
    architecture = spec.architecture if spec is not None else "x86_64"
    pinned = pins.pcs()
    return PcsAmiRequest(
        path=path,
        workload=workload,
        region=chosen_region,
        name_pattern=name_pattern or pinned.ami_name(architecture),
        owner=owner or pinned.ami_owner,
    )


def newest_image(ec2: Any, request: PcsAmiRequest) -> PcsImage:
    """The newest available image named like ``request.name_pattern`` owned by
    ``request.owner`` (read-only: ec2:DescribeImages)."""
    answer = ask_required(
        ec2,
        "describe_images",
        "ec2:DescribeImages",
        Owners=[request.owner],
        Filters=[
            {"Name": "name", "Values": [request.name_pattern]},
            {"Name": "state", "Values": ["available"]},
        ],
    )
    images = [
        image
        for image in answer.get("Images", [])
        if image.get("ImageId") and image.get("CreationDate")
    ]
    if not images:
        raise CliError(
            f"pcs-ami: no available image named {request.name_pattern!r} owned by "
            f"{request.owner!r} in {request.region}; build one (docs/blocks/pcs.md, 'The AMI') "
            "or pass --name-pattern and --owner",
            ExitCode.CHECK_FAILED,
        )
    newest = max(images, key=lambda image: str(image["CreationDate"]))
    return PcsImage(str(newest["ImageId"]), str(newest.get("Name", "")), newest["CreationDate"])


def table_text(workload: str, region: str, image: PcsImage) -> str:
    """The ``[<workload>.pcs_ami]`` table for ``image``."""
    return (
        f"[{workload}.{TABLE}]\n"
        f"# Written by fmc pcs-ami (the newest image of its name pattern, {image.creation_date}).\n"
        f'id = "{image.image_id}"\n'
        f'region = "{region}"\n'
        f'name = "{image.name}"\n'
    )


def with_table(text: str, workload: str, table: str) -> str:
    """``text`` (a profile) with its ``[<workload>.pcs_ami]`` table replaced by ``table``, or
    ``table`` added at the end when it has none."""
    header = re.compile(rf"^\[{re.escape(workload)}\.{TABLE}\][ \t]*(?:#.*)?$", re.M)
    found = header.search(text)
    if found is None:
        return text.rstrip("\n") + "\n\n" + table
    following = re.compile(r"^\[", re.M).search(text, found.end())
    rest = text[following.start() :] if following else ""
    return text[: found.start()] + table + ("\n" + rest if rest else "")


def write_table(request: PcsAmiRequest, image: PcsImage) -> str:
    """Write the table into the profile; returns the new text. The result must read back as
    TOML with the image's id and region, or nothing is written."""
    text = request.path.read_text(encoding="utf-8")
    updated = with_table(
        text, request.workload, table_text(request.workload, request.region, image)
    )
    try:
        written = tomllib.loads(updated)[request.workload][TABLE]
    except (tomllib.TOMLDecodeError, KeyError) as error:
        raise CliError(
            f"pcs-ami: the profile would not read back with the new table ({error}); "
            "nothing written",
            ExitCode.CHECK_FAILED,
        ) from None
    if written.get("id") != image.image_id or written.get("region") != request.region:
        raise CliError(
            "pcs-ami: the table did not read back as written; nothing written",
            ExitCode.CHECK_FAILED,
        )
    request.path.write_text(updated, encoding="utf-8")
    return updated
