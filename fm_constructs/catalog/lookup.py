"""Load the checked-in instance catalog and look types up, with errors that list the choices.

Pure data and lookups: a name that is not catalogued (FM301) or a type without EFA where EFA
is required (FM302) is described here, from the catalog's own names, because the lookups
raise it; the rules that report these codes on a profile or a construct
(:func:`fm_constructs.rules.workloads.catalogued`) build on these lookups, never the reverse.
"""

from __future__ import annotations

import difflib
import json
import re
from functools import cache
from importlib import resources
from typing import Any, cast

from fm_constructs.catalog.model import (
    AcceleratorKind,
    Architecture,
    EksAmiFamily,
    InstanceSpec,
    NetworkCard,
    NvmeStorage,
)
from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.errors import FmValidationError, Problems

_DATA_FILE = "instance_types.json"
#: Where a lookup's error comes from when no construct asked (``instance catalog: ...``).
CATALOG_CONTEXT = "instance catalog"


def _parse(name: str, raw: dict[str, Any]) -> InstanceSpec:
    accelerator = raw["accelerator"]
    cards = tuple(
        NetworkCard(
            index=card["index"],
            bandwidth_gbps=float(card["bandwidth_gbps"]),
            efa_supported="efa" in card["interface_types"],
            efa_only_supported="efa-only" in card["interface_types"],
            max_interfaces=card["max_interfaces"],
        )
        for card in raw["network_cards"]
    )
    nvme = raw["nvme"]
    return InstanceSpec(
        name=name,
        accelerator_kind=cast(AcceleratorKind, accelerator["kind"]),
        accelerator_manufacturer=accelerator["manufacturer"],
        accelerator_name=accelerator["name"],
        accelerator_count=accelerator["count"],
        accelerator_memory_gib=accelerator["memory_mib"] / 1024,
        vcpus=raw["vcpus"],
        memory_gib=raw["memory_gib"],
        architecture=cast(Architecture, raw["architecture"]),
        network_performance=raw["network_performance"],
        network_performance_gbps=float(raw["network_performance_gbps"]),
        network_cards=cards,
        max_efa_interfaces=raw["max_efa_interfaces"],
        ipv4_addresses_per_interface=raw["ipv4_addresses_per_interface"],
        nvme=NvmeStorage(count=nvme["count"], size_gb=nvme["size_gb"]) if nvme else None,
        eks_ami_family=cast(EksAmiFamily, raw["eks_ami_family"]),
        hyperpod_name=raw["hyperpod_name"],
    )


@cache
def _catalog() -> dict[str, InstanceSpec]:
    text = resources.files("fm_constructs.catalog").joinpath(_DATA_FILE).read_text("utf-8")
    data = json.loads(text)
    return {name: _parse(name, raw) for name, raw in data["instance_types"].items()}


def _natural_key(name: str) -> tuple[tuple[int, str], ...]:
    """Sort ``g5.8xlarge`` before ``g5.12xlarge``: numbers compare as numbers."""
    return tuple(
        (int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", name)
    )


def all_instance_types() -> tuple[InstanceSpec, ...]:
    """Every catalogued type, in natural order (family, then size)."""
    catalog = _catalog()
    return tuple(catalog[name] for name in sorted(catalog, key=_natural_key))


def efa_instance_types() -> tuple[str, ...]:
    """Names of the catalogued types that support EFA, in natural order."""
    return tuple(spec.name for spec in all_instance_types() if spec.efa_supported)


def _normalize(name: str) -> str:
    """Accept the HyperPod spelling (``ml.p5.48xlarge``) as well as the EC2 one."""
    candidate = name.strip().lower()
    return candidate.removeprefix("ml.")


def find_instance_type(name: str) -> InstanceSpec | None:
    """The catalogued spec for ``name`` (either spelling), or None when it is not catalogued."""
    return _catalog().get(_normalize(name))


@cache
def ec2_instance_types() -> frozenset[str]:
    """Every EC2 instance type name in botocore's EC2 API model (offline, read from disk)."""
    from botocore.loaders import Loader  # reads the packaged model files, no client

    model = Loader().load_service_model("ec2", "service-2")
    return frozenset(model["shapes"]["InstanceType"]["enum"])


def uncatalogued(name: str, *, key: str = "instance_type") -> Finding:
    """The FM301 finding for ``name``, which is not catalogued: an EC2 type without
    accelerators, or a misspelling (with the closest catalogued names)."""
    known = [s.name for s in all_instance_types()]
    normalized = _normalize(name)
    if normalized in ec2_instance_types():
        allowed = (
            "must be an accelerated (GPU or Trainium) instance type: "
            f"{normalized!r} is an EC2 type without the accelerators this library deploys"
        )
    else:
        allowed = "must be an accelerated instance type from the catalog"
    close = difflib.get_close_matches(normalized, known, n=3, cutoff=0.6)
    fix = f"did you mean {' or '.join(map(repr, close))}?" if close else ""
    fix = (fix + " " if fix else "") + f"catalogued types: {', '.join(known)}"
    return Finding("FM301", Severity.ERROR, key, name, allowed, fix)


def get_instance_type(name: str, *, field: str = "instance_type") -> InstanceSpec:
    """The catalogued spec for ``name`` (``p5.48xlarge`` or ``ml.p5.48xlarge``).

    Raises FmValidationError with the finding of :func:`uncatalogued` (the closest names, or
    "an EC2 type without accelerators") when ``name`` is not in the catalog.
    """
    spec = _catalog().get(_normalize(name))
    if spec is None:
        raise FmValidationError([uncatalogued(name, key=field)], context=CATALOG_CONTEXT)
    return spec


def require_efa(name: str, *, field: str = "instance_type") -> InstanceSpec:
    """Like :func:`get_instance_type`, but the type must support EFA.

    The error names the type, says it has no EFA, and lists the EFA-capable types.
    """
    spec = get_instance_type(name, field=field)
    if not spec.efa_supported:
        raise FmValidationError(
            [
                Finding(
                    "FM302",  # the code of fm_constructs.rules.workloads.efa_for_training
                    Severity.ERROR,
                    field,
                    name,
                    "must support EFA (Elastic Fabric Adapter) for multi-node traffic, and "
                    f"{name!r}, which has no EFA, does not",
                    f"choose one of {', '.join(efa_instance_types())}",
                )
            ],
            context=CATALOG_CONTEXT,
        )
    return spec


def catalogued_spec(
    problems: Problems, name: str, *, efa: bool = False, field: str = "instance_type"
) -> InstanceSpec | None:
    """The catalogued spec a construct is given, as :func:`get_instance_type` (or
    :func:`require_efa` when ``efa``); on a miss None, with the finding added to the
    construct's ``problems`` (``Problems.of(self)``), so the error names the construct's class
    and path (``EfaNodeGroup Stack/Nodes: instance_type: ...``) and keeps its code (FM301,
    FM302) beside the construct's other problems."""
    try:
        return require_efa(name, field=field) if efa else get_instance_type(name, field=field)
    except FmValidationError as error:
        problems.add_findings(error.findings)
        return None
