"""The observability data files shipped in this package, and their rendering.

Rules (``rules/*.yaml``), dashboards (``dashboards/*.json``) and the scrape configuration
template (``scrape/*.yaml``) are data, not code: they are reviewed as data, validated by tests
and rendered here with a deliberately tiny placeholder syntax, ``{{name}}`` (no spaces, no
``$``), so that Prometheus' and Grafana's own ``{{ $labels.x }}`` templates pass through
untouched. Pure Python: no CDK import, usable from tests and tools.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from fm_constructs.errors import FmValidationError, Problems
from fm_constructs.rules import constructs as codes
from fm_constructs.rules import observability as observability_rules

#: PyYAML's safe loader, libyaml's parser when PyYAML was built with it (the same documents,
#: about ten times faster: the shipped rule files are parsed at every synthesis).
_SAFE_LOADER: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(
    yaml, "CSafeLoader", yaml.SafeLoader
)

PACKAGE_DIR = Path(__file__).parent
RULES_DIR = PACKAGE_DIR / "rules"
DASHBOARDS_DIR = PACKAGE_DIR / "dashboards"
SCRAPE_DIR = PACKAGE_DIR / "scrape"

#: The scrape configuration template for an EKS GPU cluster.
EKS_SCRAPE_TEMPLATE = SCRAPE_DIR / "eks-gpu-cluster.yaml"

#: Thresholds substituted into the shipped rule files, with their defaults. Each comment says
#: where the value comes from; docs/operations/dashboards-alerts.md repeats them.
DEFAULT_RULE_THRESHOLDS: Mapping[str, float] = {
    # FsxLustreFreeCapacityLow fires below this free share of a mounted Lustre file system.
    # 10 % of a 2.4 TiB file system is a few checkpoints: time to clean up or to grow it (a
    # storage capacity increase takes hours and can only add 2400 GiB steps).
    "fsx_free_capacity_min_ratio": 0.1,
    # TrainingStalled: minutes without a single optimizer step before the alert fires. A hung
    # NCCL collective blocks every rank, and each minute of it idles the whole job: with 8, the
    # notification arrives within 10 minutes of the last step (one evaluation, at most a
    # minute, and the 30-second group wait follow). A job whose synchronous checkpoint or
    # evaluation pass takes longer (a 70B model with optimizer state, about 1 TiB, takes about
    # 17 minutes to FSx at 1 GB/s) either saves asynchronously or raises this.
    "training_stall_minutes": 8,
    # TrainingStepTimeSlow: mean step time over 5 minutes above this multiple of the run's own
    # median over the last 6 hours (for 15 minutes). 1.5 is beyond the step-to-step noise of a
    # synchronous job and well inside what one throttled GPU or a degraded link costs.
    "step_time_slowdown_ratio": 1.5,
    # GpuTemperatureHigh, degrees Celsius (for 10 minutes). nvidia-smi -q lists a GPU's
    # "Max Operating Temp" (85 on A100, 87 on H100) and "Memory Max Operating Temp" (95 for
    # the HBM of both); the alert warns at or just below them, before the GPU throttles.
    "gpu_temperature_max_celsius": 85,
    "hbm_temperature_max_celsius": 90,
    # NodeStoppedReporting and SlurmNodesDown wait this many minutes: the time HyperPod takes
    # to replace a node (a new instance plus its lifecycle scripts), so a replacement that
    # completes raises nothing and a node left down still warns.
    "node_replacement_minutes": 30,
    # GpuXidErrorsRepeated: 5-minute windows with an XID, out of the last twelve. One event
    # shows in one window (exporter counting window, 5 minutes), so 3 means repeated events.
    "xid_repeat_windows_per_hour": 3,
    # GpuSingleBitEccErrorRateHigh (severity info): corrected ECC errors per GPU and hour.
    # NVIDIA publishes no action threshold for corrected errors (row remapping handles them);
    # 1000/h is an order of magnitude above what healthy HBM shows and only informs.
    "gpu_sbe_errors_per_hour": 1000,
    # Inference objectives (p99 over 5 minutes), in seconds: interactive chat targets (first
    # token within 2 s, 10 tokens/s per stream at least); set them from your own SLOs.
    "ttft_p99_objective_seconds": 2.0,
    "inter_token_latency_p99_objective_seconds": 0.1,
}

_PLACEHOLDER = re.compile(r"\{\{([a-z_][a-z0-9_]*)\}\}")

#: Annotations and labels every shipped and user-supplied alert must carry.
REQUIRED_ALERT_LABELS = observability_rules.REQUIRED_ALERT_LABELS
REQUIRED_ALERT_ANNOTATIONS = observability_rules.REQUIRED_ALERT_ANNOTATIONS
ALLOWED_SEVERITIES = observability_rules.ALLOWED_SEVERITIES


def shipped_rule_files() -> list[Path]:
    """The rule files shipped with the package, sorted by name."""
    return sorted(RULES_DIR.glob("*.yaml"))


def shipped_dashboard_files() -> list[Path]:
    """The Grafana dashboards shipped with the package, sorted by name."""
    return sorted(DASHBOARDS_DIR.glob("*.json"))


def placeholders(text: str) -> set[str]:
    """Names of the ``{{name}}`` placeholders in ``text``."""
    return set(_PLACEHOLDER.findall(text))


def render_placeholders(text: str, values: Mapping[str, object], *, source: str) -> str:
    """Replace every ``{{name}}`` in ``text`` with ``str(values[name])``.

    Raises FmValidationError naming ``source`` when a placeholder has no value, so a typo in a
    data file fails synthesis instead of shipping a literal ``{{name}}`` to AWS.
    """
    missing = sorted(placeholders(text) - set(values))
    if missing:
        raise FmValidationError(
            [f"{source}: placeholders {missing} have no value; known: {sorted(values)}"],
            code=codes.OBSERVABILITY_DATA,
        )
    return _PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), text)


def rule_thresholds(overrides: Mapping[str, float] | None) -> dict[str, float]:
    """Defaults merged with ``overrides``; unknown names and non-positive values are errors."""
    problems = Problems(context="rule thresholds", code=codes.OBSERVABILITY_DATA)
    problems.adopt(
        observability_rules.rule_threshold_overrides(
            overrides or {}, known=list(DEFAULT_RULE_THRESHOLDS)
        )
    )
    problems.raise_if_any()
    merged = dict(DEFAULT_RULE_THRESHOLDS)
    merged.update(overrides or {})
    return merged


def load_rule_file(path: Path, thresholds: Mapping[str, float]) -> tuple[str, dict[str, Any]]:
    """Render one rule file and return (rendered text, parsed document), validated.

    Validation: a mapping with a non-empty ``groups`` list; every group has a name and rules;
    every rule has ``record`` or ``alert`` and a non-empty ``expr``; every alert has the
    required labels and annotations and a known severity.
    """
    text = render_placeholders(path.read_text(encoding="utf-8"), thresholds, source=str(path))
    try:
        document = yaml.load(text, Loader=_SAFE_LOADER)
    except yaml.YAMLError as error:
        raise FmValidationError(
            [f"{path}: not valid YAML ({error})"], code=codes.OBSERVABILITY_DATA
        ) from error
    problems = Problems(context=path.name, code=codes.OBSERVABILITY_DATA)
    problems.adopt(observability_rules.rule_document(document))
    problems.raise_if_any()
    return text, document


def render_scrape_configuration(
    template: str, *, cluster_name: str, scrape_interval_seconds: int
) -> str:
    """Render the scrape configuration template (cluster label and scrape interval)."""
    return render_placeholders(
        template,
        {"cluster_name": cluster_name, "scrape_interval": f"{scrape_interval_seconds}s"},
        source="scrape configuration",
    )


def load_dashboard(path: Path) -> dict[str, Any]:
    """Parse one dashboard file; it must be a JSON object with a non-empty uid and title."""
    try:
        dashboard = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise FmValidationError(
            [f"{path}: not valid JSON ({error})"], code=codes.OBSERVABILITY_DATA
        ) from error
    problems = Problems(context=path.name, code=codes.OBSERVABILITY_DATA)
    problems.adopt(observability_rules.dashboard_model(str(path), dashboard))
    problems.raise_if_any()
    return dict(dashboard)


def dashboard_uids(paths: Iterable[Path]) -> list[str]:
    """The uids of ``paths`` in order; duplicates are an error (Grafana would overwrite)."""
    problems = Problems(context="dashboards", code=codes.OBSERVABILITY_DATA)
    named = [(str(load_dashboard(path)["uid"]), path.name) for path in paths]
    problems.adopt(observability_rules.distinct_dashboard_uids(named))
    uids = [uid for uid, _ in named]
    problems.raise_if_any()
    return uids


def as_paths(files: Sequence[str | Path]) -> list[Path]:
    """Normalise user-given file names to existing Paths (missing files are an error)."""
    paths = [Path(f) for f in files]
    problems = Problems(code=codes.OBSERVABILITY_DATA)
    for path in paths:
        if not path.is_file():
            problems.add("file", str(path), "must be an existing file")
    problems.raise_if_any()
    return paths
