"""Rule of the pinned AMI of AWS PCS nodes (``[<workload>.pcs_ami]``): present on 'pcs', an
AMI id in form, and recorded for the platform's region (an AMI id names an image in one region
only, so a profile copied to another region would launch nothing).

The library pins no AMI id of its own: PCS publishes no SSM parameter for its images, and its
sample AMIs are for demonstration and Amazon Linux only, where the node scripts need Ubuntu.
``fmc pcs-ami`` resolves the newest image of a name pattern (read-only, EC2 DescribeImages)
and writes the table; the profile then pins it until the command is run again.
"""

from __future__ import annotations

import re

from fm_constructs.rules.findings import Finding, define

PCS_AMI = define(
    "FM337",
    "AWS PCS nodes launch from a pinned AMI: [<workload>.pcs_ami] must give its id (ami- and 8 "
    "or 17 hex digits) and the region it is in, the platform's region.",
    "Run `fmc pcs-ami --config <profile> --write`: it finds the newest PCS-ready image (the "
    "pinned name pattern, read-only) and writes [<workload>.pcs_ami].",
)

AMI_ID = re.compile(r"ami-(?:[0-9a-f]{8}|[0-9a-f]{17})")


def _command(source: str) -> str:
    return f"fmc pcs-ami --config {source or '<profile>'} --write"


def pcs_ami(
    workload: str,
    ami_id: str | None,
    ami_region: str | None,
    *,
    region: str,
    source: str = "",
) -> list[Finding]:
    """The findings of workload ``workload``'s ``pcs_ami`` table (``ami_id``, ``ami_region``)
    on 'pcs' in ``region``; ``source`` is the profile's file, named in the fix."""
    prefix = f"{workload}.pcs_ami"
    fix = f"run `{_command(source)}`"
    if ami_id is None:
        return [
            PCS_AMI.finding(
                f"{prefix}.id",
                None,
                "'pcs' launches its nodes from a pinned AMI (Ubuntu with the PCS agent, the "
                "PCS Slurm installer and the NVIDIA and EFA drivers), and none is set",
                fix,
            )
        ]
    out: list[Finding] = []
    if not AMI_ID.fullmatch(ami_id):
        out.append(
            PCS_AMI.finding(
                f"{prefix}.id",
                ami_id,
                "must be an AMI id: ami- followed by 8 or 17 lowercase hex digits",
                fix,
            )
        )
    if ami_region != region:
        out.append(
            PCS_AMI.finding(
                f"{prefix}.region",
                ami_region,
                f"must be the platform's region {region!r}: an AMI id names an image in one "
                "region only",
                f"{fix} (it resolves the image in {region})",
            )
        )
    return out
