"""The instance catalog agrees with EC2's own DescribeInstanceTypes data (shipped in moto) and
with the SageMaker API model, so it cannot drift from AWS's numbers unnoticed."""

from __future__ import annotations

import gzip
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

import botocore.loaders
import moto
import pytest

from fm_constructs.catalog import (
    InstanceSpec,
    all_instance_types,
    efa_instance_types,
    get_instance_type,
    require_efa,
)
from fm_constructs.errors import FmValidationError

REQUIRED_TYPES = (
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
    "p6-b300.48xlarge",
    "trn1.32xlarge",
    "trn1n.32xlarge",
    "trn2.48xlarge",
    "g5.48xlarge",
    "g6.48xlarge",
    "g6e.48xlarge",
    "g7e.48xlarge",
)
#: Documented corrections to moto's data (per-device GiB), with the reason in the data file.
CURATED_ACCELERATOR_MEMORY_GIB = {"trn2.3xlarge": 96.0, "trn2.48xlarge": 96.0}


@cache
def moto_types() -> dict[str, Any]:
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


@cache
def hyperpod_types() -> frozenset[str]:
    model = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    return frozenset(model["shapes"]["ClusterInstanceType"]["enum"])


SPECS = all_instance_types()
IDS = [spec.name for spec in SPECS]


def test_required_types_are_catalogued() -> None:
    names = {spec.name for spec in SPECS}
    assert set(REQUIRED_TYPES) <= names


def test_every_efa_size_of_a_catalogued_family_is_included() -> None:
    families = {spec.family for spec in SPECS}
    expected = {
        name
        for name, raw in moto_types().items()
        if name.split(".")[0] in families and raw["NetworkInfo"].get("EfaSupported")
    }
    assert expected <= set(efa_instance_types())


def test_every_entry_is_in_moto() -> None:
    # Every type we ship is cross-checked below; a type missing from moto would need its own
    # documented source and its own test.
    assert [name for name in IDS if name not in moto_types()] == []


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_entry_matches_describe_instance_types(spec: InstanceSpec) -> None:
    raw = moto_types()[spec.name]
    network = raw["NetworkInfo"]

    assert spec.vcpus == raw["VCpuInfo"]["DefaultVCpus"]
    assert spec.memory_gib * 1024 == raw["MemoryInfo"]["SizeInMiB"]
    assert [spec.architecture] == [
        a for a in raw["ProcessorInfo"]["SupportedArchitectures"] if a != "i386"
    ]

    if spec.accelerator_kind == "gpu":
        (device,) = raw["GpuInfo"]["Gpus"]
        assert spec.eks_ami_family == "NVIDIA"
    else:
        (device,) = raw["NeuronInfo"]["NeuronDevices"]
        assert spec.eks_ami_family == "NEURON"
    assert spec.accelerator_name == device["Name"]
    assert spec.accelerator_count == device["Count"]
    expected_memory = CURATED_ACCELERATOR_MEMORY_GIB.get(
        spec.name, device["MemoryInfo"]["SizeInMiB"] / 1024
    )
    assert spec.accelerator_memory_gib == expected_memory

    assert spec.network_performance == network["NetworkPerformance"]
    raw_cards = sorted(network["NetworkCards"], key=lambda card: card["NetworkCardIndex"])
    assert len(spec.network_cards) == network["MaximumNetworkCards"] == len(raw_cards)
    for card, raw_card in zip(spec.network_cards, raw_cards, strict=True):
        types = raw_card.get("InterfaceTypes", ["interface"])
        assert card.index == raw_card["NetworkCardIndex"]
        assert card.bandwidth_gbps == raw_card["PeakBandwidthInGbps"]
        assert card.efa_supported == ("efa" in types)
        assert card.efa_only_supported == ("efa-only" in types)
        assert card.max_interfaces == raw_card["MaximumNetworkInterfaces"]

    if network.get("EfaSupported"):
        assert spec.max_efa_interfaces == network["EfaInfo"]["MaximumEfaInterfaces"]
        # Full bandwidth needs one EFA per EFA-capable card, and the maximum allows it.
        assert len(spec.efa_card_indexes) == spec.max_efa_interfaces
    else:
        assert spec.max_efa_interfaces == 0
        assert spec.efa_card_indexes == ()
    assert spec.ipv4_addresses_per_interface == network["Ipv4AddressesPerInterface"]

    storage = raw.get("InstanceStorageInfo")
    if storage:
        (disk,) = storage["Disks"]
        assert spec.nvme is not None
        assert (spec.nvme.count, spec.nvme.size_gb) == (disk["Count"], disk["SizeInGB"])
        assert spec.nvme_total_gb == storage["TotalSizeInGB"]
    else:
        assert spec.nvme is None


def _documented_gbps(text: str) -> float:
    """EC2's instance NetworkPerformance as a number: "3200 Gigabit" -> 3200,
    "8x 100 Gigabit" -> 800, "Up to 25 Gigabit" -> 25."""
    match = re.fullmatch(r"(?:Up to )?(?:(\d+)x )?([\d.]+) Gigabit", text)
    assert match is not None, text
    return float(match.group(1) or 1) * float(match.group(2))


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_efa_bandwidth_is_the_instance_network_performance(spec: InstanceSpec) -> None:
    # Rule: per-node EFA bandwidth = the instance's NetworkPerformance in DescribeInstanceTypes,
    # never the sum of per-card PeakBandwidthInGbps (not additive on g6e, short on p6-b200).
    network = moto_types()[spec.name]["NetworkInfo"]
    documented = _documented_gbps(network["NetworkPerformance"])
    assert spec.network_performance_gbps == documented
    expected = documented if network.get("EfaSupported") else 0.0
    assert spec.total_efa_bandwidth_gbps == expected, (
        f"{spec.name}: EFA bandwidth must be the instance's documented "
        f"{network['NetworkPerformance']!r}, got {spec.total_efa_bandwidth_gbps}"
    )


@pytest.mark.parametrize(
    ("name", "gbps"),
    [
        ("g6e.24xlarge", 200),  # 2 cards each listing 200
        ("g6e.48xlarge", 400),  # 4 cards each listing 400: AWS sells 400, not 1,600
        ("p6-b200.48xlarge", 3200),  # 8 cards listing 200 each: 3.2 Tbps EFAv4
        ("p6-b300.48xlarge", 6400),  # 16 EFA cards; ENA-only card 0 not counted
        ("p5.48xlarge", 3200),
        ("p4d.24xlarge", 400),
        ("trn1n.32xlarge", 1600),
        ("trn2.3xlarge", 200),
    ],
)
def test_efa_bandwidth_of_types_whose_cards_do_not_add_up(name: str, gbps: int) -> None:
    assert get_instance_type(name).total_efa_bandwidth_gbps == gbps


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_hyperpod_name_matches_sagemaker_api(spec: InstanceSpec) -> None:
    offered = f"ml.{spec.name}" in hyperpod_types()
    assert spec.hyperpod_name == (f"ml.{spec.name}" if offered else None)


def test_p6_b300_card_zero_is_ena_only() -> None:
    spec = get_instance_type("p6-b300.48xlarge")
    assert len(spec.network_cards) == 17
    assert not spec.network_card(0).efa_supported
    assert spec.efa_card_indexes == tuple(range(1, 17))
    assert spec.max_efa_interfaces == 16
    assert spec.total_efa_bandwidth_gbps == 16 * 400


def test_p5en_has_sixteen_200_gbps_cards() -> None:
    spec = get_instance_type("p5en.48xlarge")
    assert [card.bandwidth_gbps for card in spec.network_cards] == [200.0] * 16
    assert spec.max_efa_interfaces == 16
    assert spec.total_efa_bandwidth_gbps == 3200


def test_p5_has_thirty_two_cards() -> None:
    spec = get_instance_type("p5.48xlarge")
    assert spec.efa_card_indexes == tuple(range(32))
    assert spec.max_efa_interfaces == 32
    assert spec.total_efa_bandwidth_gbps == 3200
    assert spec.total_accelerator_memory_gib == 640


def test_trn2_uses_neuron_documented_device_memory() -> None:
    spec = get_instance_type("trn2.48xlarge")
    assert spec.accelerator_kind == "trainium"
    assert spec.total_accelerator_memory_gib == 16 * 96


def test_single_card_types() -> None:
    spec = get_instance_type("g5.48xlarge")
    assert spec.max_efa_interfaces == 1
    assert spec.efa_card_indexes == (0,)


def test_convenience_properties() -> None:
    spec = get_instance_type("p4d.24xlarge")
    assert spec.family == "p4d"
    assert spec.is_accelerated
    assert spec.efa_supported and spec.efa_only_supported
    assert spec.nvme_total_gb == 8000
    with pytest.raises(KeyError):
        spec.network_card(9)


def test_hyperpod_spelling_is_accepted() -> None:
    assert get_instance_type("ml.p5.48xlarge").name == "p5.48xlarge"


def test_unknown_type_names_value_and_lists_known_types() -> None:
    with pytest.raises(FmValidationError, match=r"got 'p9\.48xlarge'") as caught:
        get_instance_type("p9.48xlarge")
    assert "p5en.48xlarge" in str(caught.value)
    # The closest names, and no pointer to a repository tool the installed package lacks.
    assert "did you mean 'p5.48xlarge'" in str(caught.value)
    assert "tools/" not in str(caught.value) and caught.value.codes == ("FM301",)


def test_non_efa_type_is_known_but_rejected_for_efa() -> None:
    assert get_instance_type("g6e.xlarge").efa_supported is False
    with pytest.raises(FmValidationError, match="has no EFA") as caught:
        require_efa("g6e.xlarge", field="node_groups[0].instance_type")
    message = str(caught.value)
    # A lookup outside any construct says where the error comes from.
    assert message.startswith("instance catalog: node_groups[0].instance_type:")
    assert "p5.48xlarge" in message and "trn2.48xlarge" in message
    assert "g6e.xlarge" not in message.split("choose one of", 1)[1]


def test_efa_list_is_in_natural_order() -> None:
    names = efa_instance_types()
    assert names.index("g5.8xlarge") < names.index("g5.12xlarge")
    assert names.index("p5.4xlarge") < names.index("p5.48xlarge")
