"""Regenerate fm_constructs/catalog/instance_types.json from AWS's own published data.

Sources, in order of authority:

1. EC2 DescribeInstanceTypes output as shipped inside moto
   (``moto/ec2/resources/instance_types.json.gz``): accelerators, vCPUs, memory, architecture,
   the instance's network performance, network cards (bandwidth, interface types per card),
   maximum EFA interfaces, NVMe instance store, IPv4 addresses per interface.
2. The SageMaker API model shipped inside botocore (``ClusterInstanceType`` enum): which types
   HyperPod offers, under their ``ml.`` names.
3. Hand-curated corrections, each with its source, in ``CURATED`` below.

Run from the repository root after upgrading moto or botocore, then review the diff:

    python tools/regenerate_instance_catalog.py

The unit tests cross-check every entry against the same sources, so a stale file fails CI.
"""

from __future__ import annotations

import gzip
import json
import re
import sys
from pathlib import Path
from typing import Any

import botocore
import botocore.loaders
import moto

#: Families the catalog covers (every size moto lists for them, EFA-capable or not).
#: trn2u (Trn2 UltraServer) is left out: moto has no accelerator data for it, and it is bought
#: as UltraServer capacity rather than launched as single instances.
FAMILIES = (
    "p4d",
    "p4de",
    "p5",
    "p5e",
    "p5en",
    "p6-b200",
    "p6-b300",
    "trn1",
    "trn1n",
    "trn2",
    "g5",
    "g6",
    "g6e",
    "g7e",
)

#: Corrections to moto's data, each with the source that justifies it.
CURATED: dict[str, dict[str, Any]] = {
    family_size: {
        "accelerator_memory_mib": 96 * 1024,
        "source": (
            "AWS Neuron documentation (Trainium2 architecture; training best practices): "
            "each Trainium2 device has 96 GiB of HBM; moto reports 512 GiB per device"
        ),
    }
    for family_size in ("trn2.3xlarge", "trn2.48xlarge")
}

#: EKS-optimized AL2023 AMI family per accelerator kind (AMI types AL2023_<arch>_NVIDIA and
#: AL2023_<arch>_NEURON in the EKS API's AMITypes enum).
AMI_FAMILY = {"gpu": "NVIDIA", "trainium": "NEURON"}

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "fm_constructs" / "catalog" / "instance_types.json"


def load_moto_instance_types() -> dict[str, Any]:
    path = Path(moto.__file__).parent / "ec2" / "resources" / "instance_types.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def load_hyperpod_instance_types() -> frozenset[str]:
    model = botocore.loaders.create_loader().load_service_model("sagemaker", "service-2")
    return frozenset(model["shapes"]["ClusterInstanceType"]["enum"])


def _accelerator(raw: dict[str, Any]) -> dict[str, Any]:
    if "GpuInfo" in raw:
        (gpu,) = raw["GpuInfo"]["Gpus"]
        return {
            "kind": "gpu",
            "manufacturer": gpu["Manufacturer"],
            "name": gpu["Name"],
            "count": gpu["Count"],
            "memory_mib": gpu["MemoryInfo"]["SizeInMiB"],
        }
    if "NeuronInfo" in raw:
        (device,) = raw["NeuronInfo"]["NeuronDevices"]
        if not device["Name"].startswith("Trainium"):
            raise SystemExit(f"{raw['InstanceType']}: unexpected Neuron device {device['Name']}")
        return {
            "kind": "trainium",
            "manufacturer": "AWS",
            "name": device["Name"],
            "count": device["Count"],
            "memory_mib": device["MemoryInfo"]["SizeInMiB"],
        }
    raise SystemExit(f"{raw['InstanceType']}: no accelerator information")


def network_performance_gbps(text: str) -> float:
    """Gbps of EC2's ``NetworkPerformance`` text: ``"400 Gigabit"`` is 400, ``"8x 100
    Gigabit"`` is 800 and ``"Up to 25 Gigabit"`` (burst, not sustained) is 25.

    This instance-level figure is what EC2 sells; the per-card ``PeakBandwidthInGbps`` values
    are not additive on every type (g6e.48xlarge repeats its 400 Gbps total on each of its
    four cards; p6-b200.48xlarge lists 200 per card for a 3,200 Gbps instance).
    """
    match = re.fullmatch(r"(?:Up to )?(?:(\d+)x )?(\d+(?:\.\d+)?) Gigabit", text.strip())
    if match is None:
        raise SystemExit(f"unexpected NetworkPerformance {text!r}")
    return float(match.group(1) or 1) * float(match.group(2))


def build_entry(name: str, raw: dict[str, Any], hyperpod: frozenset[str]) -> dict[str, Any]:
    network = raw["NetworkInfo"]
    architectures = [a for a in raw["ProcessorInfo"]["SupportedArchitectures"] if a != "i386"]
    if len(architectures) != 1:
        raise SystemExit(f"{name}: ambiguous architectures {architectures}")
    memory_mib = raw["MemoryInfo"]["SizeInMiB"]
    if memory_mib % 1024:
        raise SystemExit(f"{name}: memory {memory_mib} MiB is not a whole number of GiB")
    accelerator = _accelerator(raw)
    cards = []
    for card in sorted(network["NetworkCards"], key=lambda c: c["NetworkCardIndex"]):
        cards.append(
            {
                "index": card["NetworkCardIndex"],
                "bandwidth_gbps": card["PeakBandwidthInGbps"],
                "interface_types": sorted(card.get("InterfaceTypes", ["interface"])),
                "max_interfaces": card["MaximumNetworkInterfaces"],
            }
        )
    storage = raw.get("InstanceStorageInfo")
    nvme = None
    if storage:
        (disk,) = storage["Disks"]
        nvme = {"count": disk["Count"], "size_gb": disk["SizeInGB"]}
    entry: dict[str, Any] = {
        "accelerator": accelerator,
        "vcpus": raw["VCpuInfo"]["DefaultVCpus"],
        "memory_gib": memory_mib // 1024,
        "architecture": architectures[0],
        "network_performance": network["NetworkPerformance"],
        "network_performance_gbps": network_performance_gbps(network["NetworkPerformance"]),
        "network_cards": cards,
        "max_efa_interfaces": (
            network["EfaInfo"]["MaximumEfaInterfaces"] if network.get("EfaSupported") else 0
        ),
        "ipv4_addresses_per_interface": network["Ipv4AddressesPerInterface"],
        "nvme": nvme,
        "eks_ami_family": AMI_FAMILY[accelerator["kind"]],
        "hyperpod_name": f"ml.{name}" if f"ml.{name}" in hyperpod else None,
    }
    curated = CURATED.get(name)
    if curated:
        accelerator["memory_mib"] = curated["accelerator_memory_mib"]
        entry["curated"] = {"accelerator.memory_mib": curated["source"]}
    return entry


def _family(name: str) -> str:
    return name.split(".", 1)[0]


def build_catalog() -> dict[str, Any]:
    raw_types = load_moto_instance_types()
    hyperpod = load_hyperpod_instance_types()
    names = sorted(n for n in raw_types if _family(n) in FAMILIES)
    missing = sorted(set(FAMILIES) - {_family(n) for n in names})
    if missing:
        raise SystemExit(f"families missing from moto's data: {missing}")
    return {
        "about": (
            "Accelerated EC2 instance types for foundation-model training and inference. "
            "Generated by tools/regenerate_instance_catalog.py; do not edit by hand."
        ),
        "sources": {
            "ec2": f"moto {moto.__version__} ec2/resources/instance_types.json.gz "
            "(EC2 DescribeInstanceTypes)",
            "hyperpod": f"botocore {botocore.__version__} sagemaker ClusterInstanceType enum",
            "eks_ami_family": "EKS AMITypes AL2023_<arch>_NVIDIA / AL2023_<arch>_NEURON",
        },
        "instance_types": {name: build_entry(name, raw_types[name], hyperpod) for name in names},
    }


def render(catalog: dict[str, Any]) -> str:
    """One network card per line keeps the file reviewable (p5 has 32 of them)."""
    lines = ["{"]
    lines.append(f'  "about": {json.dumps(catalog["about"])},')
    lines.append(f'  "sources": {json.dumps(catalog["sources"], indent=4)[:-1]}  }},')
    lines.append('  "instance_types": {')
    entries = list(catalog["instance_types"].items())
    for position, (name, entry) in enumerate(entries):
        lines.append(f"    {json.dumps(name)}: {{")
        fields = list(entry.items())
        for field_position, (key, value) in enumerate(fields):
            comma = "," if field_position < len(fields) - 1 else ""
            if key == "network_cards":
                lines.append('      "network_cards": [')
                for card_position, card in enumerate(value):
                    card_comma = "," if card_position < len(value) - 1 else ""
                    lines.append(f"        {json.dumps(card)}{card_comma}")
                lines.append(f"      ]{comma}")
            else:
                lines.append(f"      {json.dumps(key)}: {json.dumps(value)}{comma}")
        lines.append("    }" + ("," if position < len(entries) - 1 else ""))
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main() -> int:
    catalog = build_catalog()
    text = render(catalog)
    json.loads(text)  # the hand-rolled layout must still be valid JSON
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {len(catalog['instance_types'])} instance types to {OUTPUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
