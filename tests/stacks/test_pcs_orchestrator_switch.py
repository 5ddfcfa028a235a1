"""Switching a Slurm profile from ``hyperpod-slurm`` to ``pcs`` is one key, on every capacity
PCS takes.

Each variant is the shipped ``config/hyperpod-slurm.toml`` with its capacity table replaced
(On-Demand, a targeted ODCR, an ODCR made in a cluster placement group, a Capacity Block) and
then ``orchestrator`` flipped, the only line that differs (the profile keeps the PCS image
``fmc pcs-ami`` pinned; 'hyperpod-slurm' leaves it unused). The PCS profile loads, ``fmc plan``
accepts it, it synthesizes with cdk-nag on and every template passes cfn-lint; its launch
template keeps the capacity module's rules (the ODCR's target, its placement group, a Capacity
Block's market type and no placement group) and a Capacity Block's node group is capped at the
block's size with PCS's ``CAPACITY_BLOCK`` purchase option. The way back is one key too with
On-Demand capacity; HyperPod takes no EC2 reservation, so an ODCR or Capacity Block profile on
``hyperpod-slurm`` is refused at load with the key and the fix (FM310).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fm_constructs.config import load_profile
from fm_constructs.errors import FmValidationError
from tests.stacks.profiles import ROOT, synthesize_profile
from tests.support import cfn_lint
from tests.unit.cli_stubs import run

RESERVATION = "cr-0a1b2c3d4e5f60718"
PLACEMENT_GROUP = "arn:aws:ec2:us-east-1:111122223333:placement-group/fm-p5en"
CAPACITY = {
    "on-demand": 'kind = "on-demand"\n',
    "odcr": f'kind = "odcr"\nreservation_id = "{RESERVATION}"\nreserved_instance_count = 8\n',
    "odcr-placement-group": (
        f'kind = "odcr"\nreservation_id = "{RESERVATION}"\nreserved_instance_count = 8\n'
        f'placement_group_arn = "{PLACEMENT_GROUP}"\n'
    ),
    "capacity-block": (
        f'kind = "capacity-block"\nreservation_id = "{RESERVATION}"\n'
        'reserved_instance_count = 8\nstart_time = "2027-01-04T11:30:00Z"\n'
        'end_time = "2027-01-18T11:30:00Z"\n'
    ),
}


#: The PCS node image as `fmc pcs-ami --write` pins it; 'hyperpod-slurm' keeps it unused.
PCS_AMI = '[pretraining.pcs_ami]\nid = "ami-0a1b2c3d4e5f60718"\nregion = "us-east-1"\n'


def _hyperpod_slurm(capacity: str, *, pcs_ami: bool = True) -> str:
    """The shipped HyperPod Slurm profile with its [pretraining.capacity] table replaced and,
    with ``pcs_ami``, the pinned PCS image of a user who ran `fmc pcs-ami` once."""
    text = (ROOT / "config" / "hyperpod-slurm.toml").read_text()
    replaced, count = re.subn(
        r"\[pretraining\.capacity\]\n(?:[^\[\n][^\n]*\n)+",
        f"[pretraining.capacity]\n{CAPACITY[capacity]}",
        text,
    )
    assert count == 1
    return replaced + ("\n" + PCS_AMI if pcs_ami else "")


def _flipped(text: str) -> str:
    return text.replace('orchestrator = "hyperpod-slurm"', 'orchestrator = "pcs"')


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def _of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: r for k, r in template["Resources"].items() if r["Type"] == kind}


@pytest.mark.parametrize(
    "capacity",
    [pytest.param(c, id=c, marks=pytest.mark.xdist_group(f"pcs-switch-{c}")) for c in CAPACITY],
)
def test_flipping_the_orchestrator_key_loads_plans_and_synthesizes(
    tmp_path: Path, capacity: str
) -> None:
    hyperpod = _hyperpod_slurm(capacity)
    pcs = _flipped(hyperpod)
    changed = [
        (a, b) for a, b in zip(hyperpod.splitlines(), pcs.splitlines(), strict=True) if a != b
    ]
    assert changed == [('orchestrator = "hyperpod-slurm"', 'orchestrator = "pcs"')]

    hyperpod_path = _write(tmp_path, "hyperpod", hyperpod)
    if capacity == "on-demand":
        load_profile(hyperpod_path)  # the way back is one key too
    else:
        with pytest.raises(FmValidationError, match=r"pretraining\.capacity\.kind.*FM310"):
            load_profile(hyperpod_path)

    path = _write(tmp_path, "pcs", pcs)
    profile = load_profile(path)
    plan = run("plan", "--config", str(path))
    assert plan.code == 0, plan.err
    assert "PCS cluster size SMALL" in plan.out

    synthesized = synthesize_profile(f"pcs-switch-{capacity}", profile)  # cdk-nag raises
    for name, template in synthesized.templates.items():
        assert cfn_lint(template, profile.platform.region) == [], name
    template = synthesized.templates["fm-hp-pretraining"]
    groups = {
        r["Properties"]["Name"]: r["Properties"]
        for r in _of(template, "AWS::PCS::ComputeNodeGroup").values()
    }
    accelerated = groups["accelerated"]
    (launch_template,) = (
        r["Properties"]["LaunchTemplateData"]
        for k, r in _of(template, "AWS::EC2::LaunchTemplate").items()
        if "Accelerated" in k
    )
    reservation = launch_template.get("CapacityReservationSpecification")
    scaling = accelerated["ScalingConfiguration"]
    if capacity == "on-demand":
        assert accelerated["PurchaseOption"] == "ONDEMAND"
        assert reservation is None
        assert scaling == {"MinInstanceCount": 8, "MaxInstanceCount": 8}
    elif capacity.startswith("odcr"):
        assert accelerated["PurchaseOption"] == "ONDEMAND"
        assert reservation == {
            "CapacityReservationPreference": "capacity-reservations-only",
            "CapacityReservationTarget": {"CapacityReservationId": RESERVATION},
        }
        assert scaling == {"MinInstanceCount": 8, "MaxInstanceCount": 8}
        # The capacity module's rule: launch into the group the reservation was made in, or
        # add none (the reserved hosts are already placed).
        placement = launch_template.get("Placement")
        if capacity == "odcr-placement-group":
            assert placement == {"GroupName": "fm-p5en"}
        else:
            assert placement is None
        assert not _of(template, "AWS::EC2::PlacementGroup")
    else:
        assert accelerated["PurchaseOption"] == "CAPACITY_BLOCK"
        assert reservation == {"CapacityReservationTarget": {"CapacityReservationId": RESERVATION}}
        assert launch_template["InstanceMarketOptions"] == {"MarketType": "capacity-block"}
        assert "Placement" not in launch_template
        assert not _of(template, "AWS::EC2::PlacementGroup")
        # At most the block's size; dynamic, so Slurm starts nodes only while it is active.
        assert scaling == {"MinInstanceCount": 0, "MaxInstanceCount": 8}


def test_a_flip_before_the_image_is_pinned_names_the_key_and_the_command(tmp_path: Path) -> None:
    path = _write(tmp_path, "pcs", _flipped(_hyperpod_slurm("odcr", pcs_ami=False)))
    with pytest.raises(FmValidationError) as refused:
        load_profile(path)
    (finding,) = refused.value.findings
    assert (finding.code, finding.key) == ("FM337", "pretraining.pcs_ami.id")
    assert f"fmc pcs-ami --config {path} --write" in finding.line()


def test_a_capacity_block_larger_than_the_node_group_is_capped_at_load(tmp_path: Path) -> None:
    text = _flipped(_hyperpod_slurm("capacity-block")).replace(
        "instance_count = 8\n", "instance_count = 12\n", 1
    )
    with pytest.raises(FmValidationError, match=r"pretraining\.instance_count.*\(8\)"):
        load_profile(_write(tmp_path, "pcs", text))


def test_reservations_split_by_node_group_are_refused_on_pcs(tmp_path: Path) -> None:
    text = _flipped(_hyperpod_slurm("on-demand")).replace(
        'kind = "on-demand"\n',
        'kind = "odcr"\nreserved_instance_count = 8\n\n'
        f'[[pretraining.capacity.node_groups]]\nreservation_id = "{RESERVATION}"\n'
        "instance_count = 8\n",
    )
    with pytest.raises(FmValidationError) as refused:
        load_profile(_write(tmp_path, "pcs", text))
    message = str(refused.value)
    assert "pretraining.capacity.node_groups" in message and "FM336" in message
    assert "resource_group_arn" in message
