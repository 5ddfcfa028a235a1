"""Expected NCCL ``all_reduce_perf`` bus bandwidth across nodes, each figure with its source.

``fmc validate`` compares a measured nccl-tests run with these figures. A figure is only listed
when a public page shows it measured on that instance type and node count; nothing here is
extrapolated. Where no figure exists the judge falls back to the EFA line rate of the node
(:func:`line_rate_expectation`), and says so.

Units: nccl-tests prints GB/s with 1 GB = 10^9 bytes; EC2 quotes network bandwidth in Gbps
(10^9 bits/s), so a node's EFA line rate in GB/s is its EFA Gbps divided by 8.

Why the line rate is a fair floor: with NCCL's ring algorithm every node sends and receives
``2(n-1)/n x S`` bytes of an ``S``-byte all-reduce over the network, so the bus bandwidth
``S/t x 2(n-1)/n`` cannot exceed the node's network bandwidth; the tree and NVLS-tree
algorithms NCCL picks for large messages on two or more nodes move less data per node and
report more (both sourced figures below exceed their node's line rate). A healthy EFA run at
large message sizes therefore reaches at least the line rate, while a TCP fallback over the
single ENA interface stays far below it.
"""

from __future__ import annotations

from dataclasses import dataclass

from fm_constructs.catalog import get_instance_type

#: Share of the expected figure a run must reach to pass.
PASS_FRACTION = 0.9
#: Without a sourced figure, messages smaller than this are latency-bound and say nothing
#: about bandwidth: the judge refuses to compare them with the line rate.
MIN_LINE_RATE_MESSAGE_BYTES = 1 << 30

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


REFERENCE_FIGURES: tuple[ReferenceFigure, ...] = (
    ReferenceFigure("p4de.24xlarge", 2, 2 << 30, 78.33, _AWSOME_NCCL),
    ReferenceFigure("p5.48xlarge", 2, 2 << 30, 443.72, _AWSOME_NCCL),
    ReferenceFigure("p5.48xlarge", 2, 16 << 30, 487.09, _AWSOME_NCCL),
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


def line_rate_expectation(instance_type: str, nodes: int) -> Expectation:
    """The fallback: expected bus bandwidth = the node's EFA line rate (see module docstring)."""
    rate = efa_line_rate_gb_s(instance_type)
    return Expectation(
        instance_type=_ec2_name(instance_type),
        nodes=nodes,
        busbw_gb_s=rate,
        rule=(
            f"no reference figure for {nodes} x {_ec2_name(instance_type)}: expected bus "
            f"bandwidth is the node's EFA line rate ({rate * 8:g} Gbps = {rate:g} GB/s), which "
            "NCCL's ring all-reduce cannot exceed and healthy EFA runs reach at messages of "
            f"{_size(MIN_LINE_RATE_MESSAGE_BYTES)} and more; pass at "
            f"{PASS_FRACTION:.0%} of it"
        ),
        reference=None,
        min_message_bytes=MIN_LINE_RATE_MESSAGE_BYTES,
    )


def expectation_for(instance_type: str, nodes: int, largest_message_bytes: int) -> Expectation:
    """What a run on ``nodes`` x ``instance_type`` whose largest message was
    ``largest_message_bytes`` is judged against: the sourced figure at the largest reference
    size not above the run's largest message; else (no figure for this type and node count)
    the line rate. When every sourced figure is for a larger message than the run used, the
    smallest figure is returned and the judge reports that the run stopped too early."""
    figures = references_for(instance_type, nodes)
    if not figures:
        return line_rate_expectation(instance_type, nodes)
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
