"""Every pinned version lives in fm_constructs/pins/pins.toml, with its source, and nowhere else."""

from __future__ import annotations

import ast
import ipaddress
import re
from pathlib import Path

import pytest

from fm_constructs import pins
from fm_constructs.kubernetes import model_server
from fm_constructs.observability import grafana
from fm_constructs.orchestration import eks_charts as charts
from fm_constructs.orchestration import keda
from fm_constructs.orchestration.hyperpod import lifecycle
from fm_constructs.planning import kubernetes_versions
from fm_constructs.planning import serving_layout as serving
from fm_constructs.storage import lustre

ROOT = Path(__file__).resolve().parents[2]
SCANNED = [ROOT / "fm_constructs", ROOT / "stacks", ROOT / "app.py"]
#: A dotted version (1.2.3, v0.5.20, 4.2.3-4.1.3-ubuntu22.04), an image tag (repo:1.2) or a
#: Kubernetes minor on its own ("1.35").
VERSION = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-_.+][\w.+-]*)?")
IMAGE_TAG = re.compile(r"[a-z0-9][a-z0-9./_-]*:v?\d+\.\d+[\w.+-]*")
KUBERNETES_MINOR = re.compile(r"1\.\d{2}")
#: Version-looking literals that are not pins, each with the reason.
ALLOWED = {
    ("fm_constructs/__init__.py", "0.1.0"): "the package's own version (pyproject.toml)",
    ("fm_constructs/orchestration/hyperpod/lifecycle.py", "1.0.0"): (
        "format version of the provisioning parameters file, not a dependency"
    ),
    ("fm_constructs/rules/eks.py", "v1.20.4-eksbuild.1"): (
        "an example of the add-on version format in an error message"
    ),
}


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_network(text.split("/")[0])
    except ValueError:
        return False
    return True


def _hits(text: str) -> list[str]:
    found = [m.group(0) for m in VERSION.finditer(text) if not _is_address(m.group(0))]
    found += [m.group(0) for m in IMAGE_TAG.finditer(text) if "://" not in m.group(0)]
    if KUBERNETES_MINOR.fullmatch(text.strip()):
        found.append(text.strip())
    return found


def _python_literals(path: Path) -> list[str]:
    """String constants of a module, docstrings left out (they may cite versions as facts)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in docstrings
    ]


def _text_literals(path: Path) -> list[str]:
    """Lines of a script or data file without their comments."""
    return [line.split("#", 1)[0] for line in path.read_text(encoding="utf-8").splitlines()]


def _files() -> list[Path]:
    out: list[Path] = []
    for base in SCANNED:
        candidates = [base] if base.is_file() else sorted(base.rglob("*"))
        out += [p for p in candidates if p.suffix in {".py", ".sh", ".yaml", ".yml", ".toml"}]
    return [p for p in out if p.name != pins.PINS_FILE]


def test_no_version_literal_outside_the_pins_file() -> None:
    offenders = []
    for path in _files():
        relative = path.relative_to(ROOT).as_posix()
        literals = _python_literals(path) if path.suffix == ".py" else _text_literals(path)
        for literal in literals:
            for hit in _hits(literal):
                if (relative, hit) not in ALLOWED:
                    offenders.append(f"{relative}: {hit!r}")
    assert not offenders, "version literals outside fm_constructs/pins/pins.toml:\n" + "\n".join(
        offenders
    )


#: A major.minor version on its own ("2.15", "10.4"), the form managed services take.
MAJOR_MINOR = re.compile(r"v?\d+\.\d+")


def test_no_version_constant_outside_the_pins_file() -> None:
    """A module-level ``*VERSION = "x.y"`` names a version the scan above cannot tell from a
    number; such versions are pins too (``[services]``)."""
    offenders = []
    for path in (ROOT / "fm_constructs").rglob("*.py"):
        relative = path.relative_to(ROOT).as_posix()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else []
            value = node.value if isinstance(node, ast.Assign) else None
            for target in targets:
                if (
                    isinstance(target, ast.Name)
                    and target.id.endswith("VERSION")
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and MAJOR_MINOR.fullmatch(value.value)
                ):
                    offenders.append(f"{relative}: {target.id} = {value.value!r}")
    assert not offenders


def test_managed_service_versions_come_from_the_pins() -> None:
    assert pins.service("fsx-lustre").version == lustre.LUSTRE_VERSION
    assert pins.service("managed-grafana").version == grafana.DEFAULT_GRAFANA_VERSION
    for pin in pins.load().services.values():
        assert pin.source.startswith("https://"), pin.name


@pytest.mark.parametrize(
    "text",
    ['image: "repo/x:1.2.3"', "VERSION=1.9.1", "docker.io/a/b:v0.27", "1.35", "v0.5.20"],
)
def test_the_scan_sees_version_literals(text: str) -> None:
    assert _hits(text)


@pytest.mark.parametrize("text", ["10.0.0.0/16", "203.0.113.0/24", "0.9", "https://a.b/c:443"])
def test_the_scan_ignores_addresses_and_numbers(text: str) -> None:
    assert not _hits(text)


def test_every_pin_names_its_source() -> None:
    loaded = pins.load()
    entries = [
        *loaded.charts.values(),
        *loaded.images.values(),
        *loaded.binaries.values(),
        *loaded.services.values(),
    ]
    assert entries
    for entry in entries:
        assert entry.source.strip(), entry.name
    assert loaded.kubernetes.source.startswith("https://")
    assert loaded.kubernetes.default in loaded.kubernetes.versions
    assert loaded.kubernetes.ending_soon <= set(loaded.kubernetes.versions)


def test_every_layer_reads_the_pins() -> None:
    for spec in charts.ALL_CHARTS:
        pin = next(p for p in pins.load().charts.values() if p.chart == spec.chart)
        assert (spec.repository, spec.version, spec.source) == (
            pin.repository,
            pin.version,
            pin.source,
        )
    assert keda.KEDA.version == pins.chart("keda").version
    assert pins.image("vllm-openai").reference == serving.VLLM_IMAGE
    assert pins.image("aws-cli").reference == model_server.AWS_CLI_IMAGE
    assert set(charts.CLUSTER_AUTOSCALER_IMAGE_TAGS) == set(kubernetes_versions.SUPPORTED_VERSIONS)
    assert pins.kubernetes().default == kubernetes_versions.DEFAULT_KUBERNETES_VERSION


def test_lifecycle_scripts_get_their_versions_from_the_parameters() -> None:
    params = lifecycle.provisioning_parameters(
        cluster_name="c",
        region="us-east-1",
        orchestrator=lifecycle.Orchestrator.SLURM,
        instance_groups=[],
        fsx=None,
        prometheus_remote_write_url=None,
    )
    assert params["node_exporter_version"] == pins.binary("node_exporter").version
    assert params["prometheus_version"] == pins.binary("prometheus").version
    assert params["dcgm_exporter_image"] == pins.image("dcgm-exporter").reference
    assert params["enroot_version"] == pins.binary("enroot").version
    assert params["pyxis_version"] == pins.binary("pyxis").version
    scripts = lifecycle.scripts_directory()
    metrics = (scripts / "metrics.sh").read_text()
    for key in ("node_exporter_version", "prometheus_version", "dcgm_exporter_image"):
        assert f"$(param {key})" in metrics
    containers = (scripts / "containers.sh").read_text()
    for key in ("enroot_version", "pyxis_version"):
        assert f"$(param {key})" in containers


def test_the_dcgm_exporter_image_reference_refuses_regional_repositories() -> None:
    with pytest.raises(ValueError, match="no fixed reference"):
        _ = pins.image("hyperpod-efa-exporter").reference
