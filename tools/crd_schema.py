"""Turn CustomResourceDefinition YAML files into the schema file the tests validate against.

    python tools/crd_schema.py --source "<repo> <tag> <path>" CRD.yaml [CRD.yaml ...] > FILE.json

For every CRD, the openAPIV3Schema of its storage version (``status`` left out: the library
never writes it) becomes ``kinds[<Kind>]``; all CRDs must share one ``apiVersion``. The output
is what ``tests/kubernetes_schemas.py`` reads from ``tests/data/crds/``: take the CRD files from
the release tag of the operator version pinned in ``fm_constructs/pins/pins.toml``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml


def storage_version(crd: dict[str, Any]) -> dict[str, Any]:
    versions = crd["spec"]["versions"]
    stored = [v for v in versions if v.get("storage")]
    if len(stored) != 1:
        raise SystemExit(f"{crd['metadata']['name']}: expected one storage version")
    version: dict[str, Any] = stored[0]
    return version


def convert(paths: list[Path], source: str) -> dict[str, Any]:
    api_versions: set[str] = set()
    kinds: dict[str, Any] = {}
    for path in paths:
        for crd in yaml.safe_load_all(path.read_text()):
            if not crd or crd.get("kind") != "CustomResourceDefinition":
                continue
            version = storage_version(crd)
            api_versions.add(f"{crd['spec']['group']}/{version['name']}")
            schema = dict(version["schema"]["openAPIV3Schema"])
            schema["properties"] = {
                k: v for k, v in schema.get("properties", {}).items() if k != "status"
            }
            kinds[crd["spec"]["names"]["kind"]] = schema
    if len(api_versions) != 1:
        raise SystemExit(f"the CRDs must share one apiVersion, got {sorted(api_versions)}")
    (api_version,) = api_versions
    return {"apiVersion": api_version, "source": source, "kinds": dict(sorted(kinds.items()))}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="repository, tag and path of the CRDs")
    parser.add_argument("crds", nargs="+", type=Path)
    args = parser.parse_args(argv)
    json.dump(convert(args.crds, args.source), sys.stdout, separators=(",", ":"))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
