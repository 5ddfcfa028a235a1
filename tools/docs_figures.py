"""Regenerate every figure quoted in docs/ from the code that produces it.

Docs mark a generated block with ``<!-- figures:NAME -->`` ... ``<!-- /figures:NAME -->``.
Two kinds of figures:

* ``FIGURES``: computed from the code alone (sizing tables, ``fmc plan`` output, the option
  tables of the constructs, taken from their signatures);
* ``SYNTH_FIGURES``: drawn from a synthesized profile (the architecture diagrams of
  tools/diagrams.py); rendering them synthesizes the profile, a few seconds each.

``python tools/docs_figures.py [--check] [--no-synth] [PREFIX ...]`` rewrites the blocks in
place (``make docs-figures``; ``make diagrams`` passes the prefix ``architecture``), or with
``--check`` exits 1 when a committed block is stale. ``tests/unit/test_docs.py`` checks
``FIGURES`` and ``tests/stacks/test_architecture_docs.py`` checks ``SYNTH_FIGURES`` against the
synthesis the stack tests share.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import io
import re
import sys
from collections.abc import Callable, Collection, Mapping
from contextlib import chdir, redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import diagrams  # noqa: E402

from fm_constructs.planning.fsx_sizing import (  # noqa: E402
    format_sizing_table,
    reference_sizings,
)


def _fsx_sizing() -> str:
    return format_sizing_table(reference_sizings())


def _fsx_sizing_reasoning() -> str:
    lines: list[str] = []
    for name, result in reference_sizings().items():
        lines.append(f"{name}:")
        lines.extend(f"  {line}" for line in result.reasoning)
    return "```text\n" + "\n".join(lines) + "\n```"


def _plan(profile: str) -> Callable[[], str]:
    def figure() -> str:
        from fm_constructs.cli.main import main

        out = io.StringIO()
        # Run from the repository root with a relative path, as a user would: the output
        # names the profile file and must not depend on where the checkout lives.
        with chdir(ROOT), redirect_stdout(out):
            main(["plan", "--config", f"config/{profile}.toml"])
        command = f"$ fmc plan --config config/{profile}.toml"
        return f"```text\n{command}\n" + out.getvalue().rstrip() + "\n```"

    return figure


def _ip_budget_default_1024() -> str:
    """The IP budget and limits of ``fmc plan`` for config/default.toml with
    ``pretraining.instance_count = 1024`` and ``max_pods_per_node = 16`` (the 1,024 x p5
    variant on three ODCRs: the pool in one node subnet of a secondary block)."""
    import dataclasses

    from fm_constructs.cli.plan import build_plan, render_plan
    from fm_constructs.cli.pricing import load_prices
    from fm_constructs.config import load_profile

    with chdir(ROOT):
        profile = load_profile("config/default.toml")
    from fm_constructs.config.model import CapacityConfig, CapacityKind, ReservationConfig

    # Bought as three ODCRs, one per managed node group (342 + 341 + 341).
    capacity = CapacityConfig(
        kind=CapacityKind.ODCR,
        node_groups=tuple(
            ReservationConfig(reservation_id=f"cr-0a0000000000000a{i}", instance_count=n)
            for i, n in enumerate((342, 341, 341), start=1)
        ),
    )
    pretraining = dataclasses.replace(
        profile.pretraining, instance_count=1024, max_pods_per_node=16, capacity=capacity
    )
    text = render_plan(
        build_plan(dataclasses.replace(profile, pretraining=pretraining), load_prices())
    )
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("IP budget:"))
    end = next(
        i for i, line in enumerate(lines) if line.startswith(("training goal", "cost by the hour"))
    )
    body = "\n".join(lines[start:end]).rstrip()
    return (
        "```text\n$ fmc plan --config config/default.toml   "
        "# with pretraining.instance_count = 1024, max_pods_per_node = 16,\n"
        "#   capacity: one ODCR per node group ([[pretraining.capacity.node_groups]])\n...\n"
        + body
        + "\n...\n```"
    )


def _aws_limits() -> str:
    """Every AWS limit the library counts against, with its quota code and source."""
    from fm_constructs.planning.aws_limits import LIMITS

    rows = [
        "| limit | service | default | per | adjustable | quota code | source |",
        "|---|---|---:|---|---|---|---|",
    ]
    for limit in LIMITS.values():
        rows.append(
            f"| {limit.name} | {limit.service} | {limit.value:,} {limit.unit} | {limit.scope} | "
            f"{'yes' if limit.adjustable else 'no'} | {limit.quota_code or '-'} | "
            f"[{limit.source.split('/')[2]}]({limit.source}) |"
        )
    return "\n".join(rows)


def _plan_totals() -> str:
    """Every shipped profile's ``fmc plan`` total, with what it leaves out."""
    from fm_constructs.cli.plan import build_plan
    from fm_constructs.cli.pricing import HOURS_PER_MONTH, load_prices
    from fm_constructs.config import load_profile

    rows = [
        "| profile | region | $/hour | of which platform | ~$/month 24/7 | missing prices |",
        "|---|---|---|---|---|---|",
    ]
    prices = load_prices()
    for path in sorted((ROOT / "config").glob("*.toml")):
        plan = build_plan(load_profile(path), prices)
        platform = plan.platform_usd_per_hour
        missing = "; ".join(
            (c.priced or c.item) + (f" ({c.owner})" if c.owner else "")
            for c in plan.costs
            if c.usd_per_hour is None
        )
        rows.append(
            f"| `{path.stem}` | {plan.region} | ${plan.usd_per_hour:,.2f}"
            f"{' (partial)' if plan.partial else ''} | ${platform:,.2f} | "
            f"${plan.usd_per_hour * HOURS_PER_MONTH:,.0f} | {missing or 'none'} |"
        )
    return "\n".join(rows)


def _plan_default_total() -> str:
    """The default profile's total, as ``fmc plan`` prints it, for the getting-started page."""
    from fm_constructs.cli.plan import build_plan
    from fm_constructs.cli.pricing import HOURS_PER_MONTH, load_prices
    from fm_constructs.config import load_profile

    plan = build_plan(load_profile(ROOT / "config" / "default.toml"), load_prices())
    platform = plan.platform_usd_per_hour
    return (
        f"At list prices (as of {plan.prices_as_of}, On-Demand, {plan.region}) the default "
        f"profile costs **${plan.usd_per_hour:,.2f} an hour** while everything runs "
        f"(~${plan.usd_per_hour * HOURS_PER_MONTH:,.0f} a month), of which "
        f"${platform:,.2f} is the platform itself (NAT gateways, interface endpoints, the EKS "
        "control plane and system nodes, Grafana)"
        + (", leaving out lines without a price" if plan.partial else "")
        + "; `fmc plan` prints each line and its source."
    )


#: Constructs and option classes whose keyword options the docs list (figure
#: ``options-<lowercase class name>``), as ``module:Class``.
OPTION_CLASSES = (
    "fm_constructs.network:GpuClusterVpc",
    "fm_constructs.network:EfaSecurityGroup",
    "fm_constructs.compute:ClusterPlacementGroup",
    "fm_constructs.compute:OnDemandCapacityReservation",
    "fm_constructs.compute:GpuLaunchTemplate",
    "fm_constructs.storage:DataBucket",
    "fm_constructs.storage:LustreFileSystem",
    "fm_constructs.storage:DataRepositoryAssociation",
    "fm_constructs.storage:FsxSizingRequest",
    "fm_constructs.orchestration:GpuEksCluster",
    "fm_constructs.orchestration:EfaNodeGroup",
    "fm_constructs.orchestration:DevicePlugins",
    "fm_constructs.orchestration:WorkloadOperators",
    "fm_constructs.orchestration:ClusterAddons",
    "fm_constructs.orchestration.hyperpod:HyperPodCluster",
    "fm_constructs.orchestration.hyperpod:InstanceGroup",
    "fm_constructs.orchestration.hyperpod:LifecycleScripts",
    "fm_constructs.orchestration.hyperpod:HyperPodEksDependencies",
    "fm_constructs.observability:PrometheusWorkspace",
    "fm_constructs.observability:AlertRules",
    "fm_constructs.observability:AlertTopic",
    "fm_constructs.observability:ManagedScraper",
    "fm_constructs.observability:GrafanaWorkspace",
    "fm_constructs.observability:GrafanaDashboards",
    "fm_constructs.observability:FsxLustreAlarms",
    "fm_constructs.observability:HyperPodHealthEvents",
    "fm_constructs.observability:PrometheusWorkspaceAlarms",
    "fm_constructs.patterns:EksWorkload",
    "fm_constructs.patterns:HyperPodAcceleratedWorkload",
    "fm_constructs.patterns:InferenceService",
    "fm_constructs.patterns:ModelServerSpec",
    "fm_constructs.patterns:AutoscalingPolicy",
    "fm_constructs.patterns:EksClusterScraping",
    "fm_constructs.patterns:ObservabilityPlatform",
)


def _default_text(value: Any) -> str:
    """A default as a reader writes it: enums by member, jsii objects by their own rendering."""
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if hasattr(value, "to_human_string"):  # aws_cdk.Duration
        return f"Duration ({value.to_human_string()})"
    text = repr(value)
    if " object at 0x" in text:
        raise ValueError(f"no stable rendering for default {text}; extend _default_text")
    return text


def _options(spec: str) -> Callable[[], str]:
    def figure() -> str:
        module_name, class_name = spec.split(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        init = cls.__init__ if "__init__" in vars(cls) else cls
        rows = ["| option | type | default |", "|---|---|---|"]
        for name, param in inspect.signature(init).parameters.items():
            if name in {"self", "scope", "construct_id"}:
                continue
            annotation = param.annotation
            if not isinstance(annotation, str):
                annotation = inspect.formatannotation(annotation)
            default = (
                "required"
                if param.default is inspect.Parameter.empty
                else f"`{_default_text(param.default)}`"
            )
            type_text = annotation.replace("|", "\\|")
            rows.append(f"| `{name}` | `{type_text}` | {default} |")
        return "\n".join(rows)

    return figure


def _alerts() -> str:
    """Every shipped alert: file, name, severity and runbook, from the rule files (thresholds
    rendered with their defaults)."""
    from fm_constructs.observability import data

    rows = ["| rule file | alert | severity | for | what to do |", "|---|---|---|---|---|"]
    values = data.rule_thresholds(None)
    for path in data.shipped_rule_files():
        for group in data.load_rule_file(path, values)[1]["groups"]:
            for rule in group["rules"]:
                if "alert" not in rule:
                    continue
                runbook = " ".join(str(rule.get("annotations", {}).get("runbook", "")).split())
                runbook = runbook.replace("|", "\\|") or "-"
                rows.append(
                    f"| `{path.name}` | `{rule['alert']}` | {rule['labels']['severity']} | "
                    f"{rule.get('for', '0m')} | {runbook} |"
                )
    return "\n".join(rows)


def _failures() -> str:
    """The failure table: every failure, the alerts and alarms that catch it, their series,
    exporter versions, severity and time to page (fm_constructs.observability.failures)."""
    from fm_constructs.observability import failures

    return failures.markdown_table()


def _metric_sources() -> str:
    """Per metrics source and orchestrator: version installed, dashboards and alerts it feeds."""
    from fm_constructs.observability import inventory

    return inventory.markdown_table()


def _dashboards() -> str:
    """Every shipped Grafana dashboard with its panels, from the dashboard files."""
    import json

    rows = ["| file | dashboard | rows and panels |", "|---|---|---|"]
    dashboards_dir = ROOT / "fm_constructs" / "observability" / "dashboards"
    for path in sorted(dashboards_dir.glob("*.json")):
        data = json.loads(path.read_text())
        panels = ", ".join(
            f"**{p['title']}**" if p.get("type") == "row" else p["title"]
            for p in data.get("panels", [])
        )
        rows.append(f"| `{path.name}` | {data['title']} | {panels} |")
    return "\n".join(rows)


def _nccl_expectations() -> str:
    """Expected all_reduce_perf bus bandwidth of each EFA GPU type the profiles use, at 2 to 32
    nodes: the sourced figure, else the stated model (what ``fmc validate`` compares with)."""
    from fm_constructs.planning import nccl_bandwidth as bw

    rows = [
        "| instance type | nodes | expected busbw | pass at | from |",
        "|---|---|---|---|---|",
    ]
    types = (
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
    )
    for name in types:
        for nodes in (2, 4, 8, 16, 32):
            expectation = bw.expectation_for(name, nodes, 16 << 30)
            origin = (
                f"[measured]({expectation.reference.source.split(' ')[0]}) at "
                f"{expectation.reference.message_bytes >> 30} GiB"
                if expectation.reference
                else f"model: {bw.ring_efficiency(nodes):.0%} of the EFA line rate"
            )
            rows.append(
                f"| {name} | {nodes} | {expectation.busbw_gb_s:.1f} GB/s | "
                f"{expectation.threshold_gb_s:.1f} GB/s | {origin} |"
            )
    return "\n".join(rows)


def _first_job(kind: str) -> Callable[[], str]:
    """A job of the first-job guide for the default profile's pre-training workload, 2 nodes,
    as the renderers in ``fm_constructs.kubernetes.jobs`` produce it."""

    def figure() -> str:
        import yaml

        from fm_constructs.kubernetes import jobs
        from fm_constructs.kubernetes.node_shape import WorkloadTarget

        target = WorkloadTarget("pretraining", "p5.48xlarge")
        render = {"dcgm": jobs.dcgm_diag_job, "fsdp": jobs.fsdp_trainjob}[kind]
        return "```yaml\n" + yaml.safe_dump(render(target, 2), sort_keys=False) + "```"

    return figure


def _first_job_slurm() -> str:
    """The sbatch commands of the Slurm first-job guide (hyperpod-slurm profile, 2 nodes)."""
    from fm_constructs.cli.validate import sbatch_command, torchrun_sbatch_command
    from fm_constructs.config import load_profile

    workload = load_profile(str(ROOT / "config" / "hyperpod-slurm.toml")).pretraining
    fsdp = torchrun_sbatch_command(
        2,
        "/fsx/datasets/fsdp/train_fsdp.py",
        "--data",
        "/fsx/datasets/tokens.bin",
        "--checkpoint-dir",
        "/fsx/checkpoints/fsdp-first-job",
    )
    return (
        "```bash\n# nccl-tests across 2 nodes (what fmc validate prints)\n"
        f"{sbatch_command(workload, 2)}\n\n# the FSDP job\n{fsdp}\n```"
    )


FIGURES: dict[str, Callable[[], str]] = {
    "alerts": _alerts,
    "failures": _failures,
    "first-job-slurm": _first_job_slurm,
    "first-job-dcgm": _first_job("dcgm"),
    "first-job-fsdp": _first_job("fsdp"),
    "nccl-expectations": _nccl_expectations,
    "dashboards": _dashboards,
    "metric-sources": _metric_sources,
    "fsx-sizing": _fsx_sizing,
    "fsx-sizing-reasoning": _fsx_sizing_reasoning,
    "plan-default": _plan("default"),
    "plan-hyperpod-slurm": _plan("hyperpod-slurm"),
    "plan-pretraining-1024": _plan("pretraining-1024"),
    "ip-budget-default-1024": _ip_budget_default_1024,
    "aws-limits": _aws_limits,
    "plan-totals": _plan_totals,
    "plan-default-total": _plan_default_total,
    **{f"options-{spec.split(':')[1].lower()}": _options(spec) for spec in OPTION_CLASSES},
}

#: Figures drawn from a synthesized profile: name -> (profile, renderer of its templates).
SYNTH_FIGURES: dict[str, tuple[str, Callable[[diagrams.Templates], str]]] = {
    f"architecture-{path.stem}": (path.stem, diagrams.render_markdown)
    for path in sorted((ROOT / "config").glob("*.toml"))
} | {
    f"retained-{path.stem}": (path.stem, diagrams.retained_resources)
    for path in sorted((ROOT / "config").glob("*.toml"))
}

Synthesizer = Callable[[str], Mapping[str, Mapping[str, Any]]]

_BLOCK = re.compile(r"(<!-- figures:([a-z0-9-]+) -->\n)(.*?)(<!-- /figures:\2 -->)", re.DOTALL)


def render(
    text: str,
    *,
    synthesize: Synthesizer | None = None,
    prefixes: tuple[str, ...] = (),
    names: Collection[str] | None = None,
) -> str:
    """``text`` with figures blocks replaced by freshly generated content.

    Only blocks whose name starts with one of ``prefixes`` (all when empty) and, when
    ``names`` is given, is one of ``names`` are rendered.
    ``SYNTH_FIGURES`` blocks are rendered only with ``synthesize`` (profile name -> stack
    name -> template); without it they are left as they are.
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(2)
        if (prefixes and not name.startswith(prefixes)) or (
            names is not None and name not in names
        ):
            return match.group(0)
        if name in FIGURES:
            body = FIGURES[name]()
        elif name in SYNTH_FIGURES and synthesize is not None:
            profile, renderer = SYNTH_FIGURES[name]
            body = renderer(synthesize(profile))
        elif name in SYNTH_FIGURES:
            return match.group(0)
        else:
            raise KeyError(f"no generator for figures block {name!r}")
        return match.group(1) + body + "\n" + match.group(4)

    return _BLOCK.sub(replace, text)


def stale_documents(
    *, synthesize: Synthesizer | None = None, prefixes: tuple[str, ...] = ()
) -> list[Path]:
    """Docs whose generated blocks differ from what the code produces now."""
    return [
        path
        for path in sorted(ROOT.glob("docs/**/*.md"))
        if render(path.read_text(), synthesize=synthesize, prefixes=prefixes) != path.read_text()
    ]


def main(argv: list[str]) -> int:
    prefixes = tuple(a for a in argv if not a.startswith("--"))
    synthesize = None if "--no-synth" in argv else diagrams.synthesize_profile
    if "--check" in argv:
        stale = stale_documents(synthesize=synthesize, prefixes=prefixes)
        for path in stale:
            print(f"stale figures in {path.relative_to(ROOT)}: run make docs-figures")
        return 1 if stale else 0
    for path in sorted(ROOT.glob("docs/**/*.md")):
        text = path.read_text()
        new = render(text, synthesize=synthesize, prefixes=prefixes)
        if new != text:
            path.write_text(new)
            print(f"updated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
