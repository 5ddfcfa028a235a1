"""Expected NCCL ``all_reduce_perf`` bus bandwidth across nodes, per instance type and node
count, each figure with its source or the rule that gives it.

``fmc validate`` compares a measured nccl-tests run with these figures. A reference figure is
listed only when a public page shows it measured on that instance type and node count
(:data:`REFERENCE_FIGURES`). Elsewhere the expectation is a stated model
(:func:`model_expectation`): the node's EFA line rate times the share of it a healthy
all-reduce reaches at that node count (:func:`ring_efficiency`).

Units: nccl-tests prints GB/s with 1 GB = 10^9 bytes; EC2 quotes network bandwidth in Gbps
(10^9 bits/s), so a node's EFA line rate in GB/s is its EFA Gbps divided by 8.

Why the model has the shape it has. With NCCL's ring algorithm each node sends and receives
``2(n-1)/n x S`` bytes of an ``S``-byte all-reduce over the network, so the bus bandwidth
``S/t x 2(n-1)/n`` cannot exceed the node's network bandwidth. Published healthy runs from four
nodes up reach about 89 % of the line rate on p5 (357, 355, 356 GB/s at 4, 8, 16 nodes) and
92 % on p5en (370 GB/s at 16 nodes), then less as the ring lengthens: 80 % at 32 p5 nodes (321
GB/s). On two nodes NCCL picks tree or NVLS-tree algorithms, which move less data per node, and
p5 reports more than its line rate (487 GB/s at 16 GiB); p6-b300 reports 82 % of its line rate
at 16 GiB and 94 % at 64 GiB. The model takes 89 % up to 16 nodes and 9 points less at each
doubling beyond (80 % at 32, 71 % at 64 ...), never below 50 %; the pass threshold is
:data:`PASS_FRACTION` of the expectation. A node whose links run at half rate slows the whole
ring to about half the healthy figure, and a TCP fallback over the ENA interface to a few
percent of it: both stay below the threshold at every node count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from fm_constructs.catalog import get_instance_type

#: Share of the expected figure a run must reach to pass.
PASS_FRACTION = 0.9
#: Without a sourced figure, messages smaller than this are latency-bound and say nothing
#: about bandwidth: the judge refuses to compare them with the model.
MIN_LINE_RATE_MESSAGE_BYTES = 1 << 30
#: The model's share of the line rate up to :data:`FLAT_EFFICIENCY_NODES` nodes, the points it
#: loses at each doubling beyond, and its floor (see the module docstring).
RING_EFFICIENCY = 0.89
FLAT_EFFICIENCY_NODES = 16
EFFICIENCY_LOSS_PER_DOUBLING = 0.09
MIN_EFFICIENCY = 0.5

_AWSOME_NCCL = (
    "https://github.com/aws-samples/awsome-distributed-training/blob/"
    "7217859f67bc693c52ff175ccc6082c41dbd7a1b/micro-benchmarks/nccl-tests/README.md "
    "(section 'Results', all_reduce_perf float sum, out-of-place busbw)"
)


@dataclass(frozen=True)
class ReferenceFigure:
    """A measured ``all_reduce_perf`` out-of-place bus bandwidth: ``busbw_gb_s`` at
    ``message_bytes`` on ``nodes`` nodes of ``instance_type`` (all GPUs of each node), and the
    public page that shows it."""

    instance_type: str
    nodes: int
    message_bytes: int
    busbw_gb_s: float
    source: str


_HYPERPOD_EKS_P5 = (
    "https://github.com/crazyguitar/aws-gpu-communication-benchmark/blob/fd167f9/data/"
    "nccl_all_reduce.csv (p5.48xlarge on SageMaker HyperPod EKS, all_reduce_perf out-of-place "
    "busbw at 8 GiB; a third-party measurement)"
)
_AWSOME_AI_P5EN = (
    "https://github.com/aws-samples/awsome-distributed-ai (architectures: "
    "topology-aware-nccl-tests/README.md, 16 x p5en.48xlarge all_reduce_perf out-of-place busbw "
    "at 16 GiB)"
)
_AWSOME_AI_PCS = (
    "https://github.com/aws-samples/awsome-distributed-ai/blob/main/architectures/aws-pcs/"
    "tests/compute-test.md (2 x p6-b300.48xlarge all_reduce_perf out-of-place busbw)"
)

REFERENCE_FIGURES: tuple[ReferenceFigure, ...] = (
    ReferenceFigure("p4de.24xlarge", 2, 2 << 30, 78.33, _AWSOME_NCCL),
    ReferenceFigure("p5.48xlarge", 2, 2 << 30, 443.72, _AWSOME_NCCL),
    ReferenceFigure("p5.48xlarge", 2, 16 << 30, 487.09, _AWSOME_NCCL),
    ReferenceFigure("p5.48xlarge", 4, 8 << 30, 357.0, _HYPERPOD_EKS_P5),
    ReferenceFigure("p5.48xlarge", 8, 8 << 30, 355.0, _HYPERPOD_EKS_P5),
    ReferenceFigure("p5.48xlarge", 16, 8 << 30, 356.0, _HYPERPOD_EKS_P5),
    ReferenceFigure("p5.48xlarge", 32, 8 << 30, 321.0, _HYPERPOD_EKS_P5),
    ReferenceFigure("p5en.48xlarge", 16, 16 << 30, 370.0, _AWSOME_AI_P5EN),
    ReferenceFigure("p6-b300.48xlarge", 2, 16 << 30, 654.0, _AWSOME_AI_PCS),
    ReferenceFigure("p6-b300.48xlarge", 2, 64 << 30, 751.0, _AWSOME_AI_PCS),
)


@dataclass(frozen=True)
class Expectation:
    """What a run is judged against.

    ``busbw_gb_s`` is the expected bus bandwidth; a run passes at ``threshold_gb_s``
    (:data:`PASS_FRACTION` of it). ``reference`` is the sourced figure used, or None when the
    figure comes from the line rate (``rule`` then states how). ``min_message_bytes`` is the
    smallest largest-message size the comparison is valid for.
    """

    instance_type: str
    nodes: int
    busbw_gb_s: float
    rule: str
    reference: ReferenceFigure | None
    min_message_bytes: int

    @property
    def threshold_gb_s(self) -> float:
        return self.busbw_gb_s * PASS_FRACTION


def references_for(instance_type: str, nodes: int) -> tuple[ReferenceFigure, ...]:
    """The sourced figures for ``nodes`` nodes of ``instance_type``, smallest message first."""
    name = _ec2_name(instance_type)
    found = [f for f in REFERENCE_FIGURES if f.instance_type == name and f.nodes == nodes]
    return tuple(sorted(found, key=lambda f: f.message_bytes))


def efa_line_rate_gb_s(instance_type: str) -> float:
    """Sum of the EFA-capable network cards' bandwidth of one node, in GB/s (FmValidationError
    for a type the catalog does not know)."""
    return get_instance_type(_ec2_name(instance_type)).total_efa_bandwidth_gbps / 8


def ring_efficiency(nodes: int) -> float:
    """The model's share of the line rate a healthy all-reduce reaches on ``nodes`` nodes."""
    if nodes <= FLAT_EFFICIENCY_NODES:
        return RING_EFFICIENCY
    doublings = math.log2(nodes / FLAT_EFFICIENCY_NODES)
    return max(MIN_EFFICIENCY, RING_EFFICIENCY - EFFICIENCY_LOSS_PER_DOUBLING * doublings)


def model_expectation(instance_type: str, nodes: int) -> Expectation:
    """Without a reference figure: the EFA line rate times :func:`ring_efficiency`."""
    rate = efa_line_rate_gb_s(instance_type)
    share = ring_efficiency(nodes)
    return Expectation(
        instance_type=_ec2_name(instance_type),
        nodes=nodes,
        busbw_gb_s=rate * share,
        rule=(
            f"no reference figure for {nodes} x {_ec2_name(instance_type)}: model, "
            f"{share:.0%} of the node's EFA line rate ({rate * 8:g} Gbps = {rate:g} GB/s; "
            f"{RING_EFFICIENCY:.0%} up to {FLAT_EFFICIENCY_NODES} nodes, "
            f"{EFFICIENCY_LOSS_PER_DOUBLING * 100:.0f} points less per doubling beyond) at "
            f"messages of {_size(MIN_LINE_RATE_MESSAGE_BYTES)} and more; pass at "
            f"{PASS_FRACTION:.0%} of it"
        ),
        reference=None,
        min_message_bytes=MIN_LINE_RATE_MESSAGE_BYTES,
    )


def expectation_for(instance_type: str, nodes: int, largest_message_bytes: int) -> Expectation:
    """What a run on ``nodes`` x ``instance_type`` whose largest message was
    ``largest_message_bytes`` is judged against: the sourced figure at the largest reference
    size not above the run's largest message; else (no figure for this type and node count)
    the model (:func:`model_expectation`). When every sourced figure is for a larger message
    than the run used, the smallest figure is returned and the judge reports that the run
    stopped too early."""
    figures = references_for(instance_type, nodes)
    if not figures:
        return model_expectation(instance_type, nodes)
    usable = [f for f in figures if f.message_bytes <= largest_message_bytes]
    figure = usable[-1] if usable else figures[0]
    return Expectation(
        instance_type=figure.instance_type,
        nodes=nodes,
        busbw_gb_s=figure.busbw_gb_s,
        rule=(
            f"reference figure: {figure.busbw_gb_s:g} GB/s at {_size(figure.message_bytes)} "
            f"on {nodes} x {figure.instance_type} ({figure.source}); pass at "
            f"{PASS_FRACTION:.0%} of it"
        ),
        reference=figure,
        min_message_bytes=figure.message_bytes,
    )


def _ec2_name(instance_type: str) -> str:
    """``ml.p5.48xlarge`` (HyperPod) -> ``p5.48xlarge``."""
    return instance_type.removeprefix("ml.")


def _size(num_bytes: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if num_bytes >= 1 << shift and num_bytes % (1 << shift) == 0:
            return f"{num_bytes >> shift} {unit}"
    return f"{num_bytes} B"
