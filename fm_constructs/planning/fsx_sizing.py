"""FSx for Lustre sizing for training workloads, and the FSx validity rules it relies on.

Pure Python (floor 1): the storage constructs, the config loader and the CLI share these
functions, so what ``plan`` prints is what the construct builds.

Validity rules (checked against the FSx API reference shipped in botocore, ``fsx`` 2018-03-01,
and the FSx for Lustre user guide):

* Storage capacity (CreateFileSystem ``StorageCapacity``): SCRATCH_2, PERSISTENT_1 and
  PERSISTENT_2 on SSD take 1200 GiB, 2400 GiB, then increments of 2400 GiB.
* Per-unit storage throughput (``PerUnitStorageThroughput``, MB/s per TiB): PERSISTENT_2 SSD
  125, 250, 500, 1000; PERSISTENT_1 SSD 50, 100, 200; SCRATCH_2 takes none.
* Aggregate throughput is capacity (TiB) x per-unit throughput, where FSx counts a 2400 GiB file
  system as 2.4 TiB (the API reference's own example), i.e. ``capacity_gib / 1000``.
* Metadata IOPS (``MetadataConfiguration.Iops``, USER_PROVISIONED mode, PERSISTENT_2 only):
  1500, 3000, 6000, 12000, then multiples of 12000 up to 192000.
* EFA-enabled file systems: PERSISTENT_2 with a metadata configuration, Lustre 2.15, and a
  storage capacity in multiples of 38400 GiB at 125 MB/s/TiB, 19200 at 250, 9600 at 500 and
  4800 at 1000 (user guide, "Increasing storage capacity"; the same quantum of ~4.7 GB/s).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from fm_constructs.domain.findings import Finding, Severity
from fm_constructs.errors import FmValidationError

#: The code of an invalid :class:`FsxSizingRequest` (its meaning is registered with the
#: construct codes, :data:`fm_constructs.rules.constructs.FSX_SIZING`).
FSX_SIZING_CODE = "FM823"
#: What an invalid request's error names (``FsxSizingRequest: model_parameters: ...``).
FSX_SIZING_CONTEXT = "FsxSizingRequest"


def _problem(field: str, value: object, requirement: str) -> Finding:
    """An error of an invalid :class:`FsxSizingRequest` field (or two, ``a / b``)."""
    return Finding(FSX_SIZING_CODE, Severity.ERROR, field, value, requirement)


# --------------------------------------------------------------------------------------------
# Validity rules
# --------------------------------------------------------------------------------------------


class LustreDeploymentType(StrEnum):
    """FSx for Lustre deployment types this library supports (SSD storage).

    SCRATCH_1 is left out on purpose: it is the legacy scratch type, cannot grow, and has no
    data repository associations.
    """

    PERSISTENT_2 = "PERSISTENT_2"
    PERSISTENT_1 = "PERSISTENT_1"
    SCRATCH_2 = "SCRATCH_2"


#: Smallest capacity, then the increment, for each deployment type (SSD), in GiB.
_FIRST_CAPACITY_GIB = 1200
_CAPACITY_INCREMENT_GIB = 2400

PER_UNIT_THROUGHPUTS: dict[LustreDeploymentType, tuple[int, ...]] = {
    LustreDeploymentType.PERSISTENT_2: (125, 250, 500, 1000),
    LustreDeploymentType.PERSISTENT_1: (50, 100, 200),
    LustreDeploymentType.SCRATCH_2: (),
}

#: Valid USER_PROVISIONED metadata IOPS values.
METADATA_IOPS: tuple[int, ...] = (1500, 3000, 6000, *range(12000, 192000 + 1, 12000))

#: EFA-enabled file systems grow in these capacity quanta (GiB) per per-unit throughput tier.
EFA_CAPACITY_STEP_GIB: dict[int, int] = {125: 38400, 250: 19200, 500: 9600, 1000: 4800}
#: EFA connections an EFA-enabled file system accepts across all its clients, one per EFA
#: interface a client's LNet uses (user guide, "Configuring EFA clients", Step 4).
EFA_CONNECTIONS = 1024

#: Per-unit throughput used when none is given, per deployment type (None: not applicable).
DEFAULT_PER_UNIT_THROUGHPUT: dict[LustreDeploymentType, int | None] = {
    LustreDeploymentType.PERSISTENT_2: 250,
    LustreDeploymentType.PERSISTENT_1: 200,
    LustreDeploymentType.SCRATCH_2: None,
}

#: Capacity used when neither an explicit size nor a sizing request is given.
DEFAULT_STORAGE_CAPACITY_GIB = 1200
#: Longest automatic backup retention FSx accepts (days; FSx API AutomaticBackupRetentionDays).
MAX_BACKUP_RETENTION_DAYS = 90


def is_valid_storage_capacity(deployment_type: LustreDeploymentType, capacity_gib: int) -> bool:
    """Whether FSx accepts ``capacity_gib`` for ``deployment_type`` (SSD): 1200, 2400, 4800, ...

    All three supported deployment types share the same rule; the parameter keeps call sites
    explicit and leaves room for types with other increments.
    """
    del deployment_type  # same rule for SCRATCH_2, PERSISTENT_1 and PERSISTENT_2 on SSD
    if isinstance(capacity_gib, bool) or not isinstance(capacity_gib, int):
        return False
    return capacity_gib == _FIRST_CAPACITY_GIB or (
        capacity_gib >= _CAPACITY_INCREMENT_GIB and capacity_gib % _CAPACITY_INCREMENT_GIB == 0
    )


def next_valid_storage_capacity(deployment_type: LustreDeploymentType, minimum_gib: float) -> int:
    """The smallest valid capacity (GiB) that is at least ``minimum_gib``."""
    del deployment_type
    if minimum_gib <= _FIRST_CAPACITY_GIB:
        return _FIRST_CAPACITY_GIB
    return math.ceil(minimum_gib / _CAPACITY_INCREMENT_GIB) * _CAPACITY_INCREMENT_GIB


def storage_capacity_rule(deployment_type: LustreDeploymentType) -> str:
    """Human-readable rule for error messages."""
    return (
        f"for {deployment_type.value} must be 1200, 2400, or a multiple of 2400 GiB "
        "(4800, 7200, ...)"
    )


def valid_per_unit_throughputs(deployment_type: LustreDeploymentType) -> tuple[int, ...]:
    """Per-unit storage throughputs (MB/s/TiB) FSx accepts; empty when the type takes none."""
    return PER_UNIT_THROUGHPUTS[deployment_type]


def is_valid_metadata_iops(iops: int) -> bool:
    """Whether ``iops`` is a valid USER_PROVISIONED metadata IOPS value."""
    return not isinstance(iops, bool) and iops in METADATA_IOPS


def efa_capacity_step_gib(per_unit_throughput: int) -> int | None:
    """Capacity quantum (GiB) of an EFA-enabled file system at this tier, None if no such tier."""
    return EFA_CAPACITY_STEP_GIB.get(per_unit_throughput)


def is_valid_efa_capacity(capacity_gib: int, per_unit_throughput: int) -> bool:
    """Whether an EFA-enabled PERSISTENT_2 file system may have ``capacity_gib`` at this tier."""
    step = efa_capacity_step_gib(per_unit_throughput)
    return step is not None and capacity_gib >= step and capacity_gib % step == 0


def aggregate_throughput_mb_s(capacity_gib: int, per_unit_throughput: int) -> float:
    """Baseline file-system throughput in MB/s as FSx computes it (capacity GiB / 1000 x tier)."""
    return capacity_gib * per_unit_throughput / 1000


# --------------------------------------------------------------------------------------------
# Cost model
# --------------------------------------------------------------------------------------------

#: PERSISTENT_2 SSD storage price, USD per GB-month, by per-unit throughput (MB/s/TiB).
#: Source: aws.amazon.com/fsx/lustre/pricing, US East (N. Virginia), as listed in 2025
#: (the 125 tier's $0.145 is also what independent estimators quote). Prices drift and vary by
#: Region; the sizing only depends on their ratios (roughly 1 : 1.45 : 2.3 : 4.1), which have
#: stayed similar across Regions and years. FSx bills throughput through this per-GB price:
#: there is no separate throughput charge on SSD file systems.
PERSISTENT_2_PRICE_USD_PER_GB_MONTH: dict[int, float] = {
    125: 0.145,
    250: 0.210,
    500: 0.340,
    1000: 0.600,
}
PRICE_TABLE_SOURCE = "aws.amazon.com/fsx/lustre/pricing, us-east-1, PERSISTENT_2 SSD, 2025"

# --------------------------------------------------------------------------------------------
# Sizing
# --------------------------------------------------------------------------------------------

#: Bytes per parameter of a full training checkpoint (default of FsxSizingRequest).
#: Mixed-precision training with Adam keeps fp32 master weights (4 B), Adam's first and
#: second moments (4 B + 4 B) and bf16 working weights (2 B): 14 B/param that a resumable
#: checkpoint must hold. We size for 16 B/param, the ZeRO paper's model-state figure, which
#: leaves ~14 % for what frameworks add (RNG and data-loader state, bf16 gradients kept by some
#: frameworks, metadata and sharding overhead). Overestimating costs a little throughput;
#: underestimating misses the write-time target on every checkpoint.
DEFAULT_BYTES_PER_PARAMETER = 16.0
#: Data-loading read throughput one training node asks of Lustre when the profile gives none,
#: MB/s. Pre-tokenized text needs far less (8 GPUs at ~10k tokens/s each, 4 bytes a token:
#: under 1 MB/s); image, audio and video pipelines read tens to hundreds of MB/s per node. 50
#: MB/s covers mixed pipelines and the burst of every node opening its first shards at once;
#: set ``read_mb_s_per_node`` for a measured figure.
DEFAULT_READ_MB_S_PER_NODE = 50.0

_BYTES_PER_GIB = 1024**3
_BYTES_PER_MB = 1000**2  # FSx throughput is in MB/s; decimal MB is the conservative reading


@dataclass(frozen=True, kw_only=True)
class FsxSizingRequest:
    """What a training job needs from its Lustre file system.

    Give either ``checkpoint_size_gib`` or ``model_parameters`` (with ``bytes_per_parameter``).

    Attributes:
        target_checkpoint_write_seconds: how long writing one full checkpoint to Lustre may
            take at the file system's baseline throughput.
        checkpoint_size_gib: size of one full checkpoint, GiB.
        model_parameters: parameter count (e.g. ``70e9``), used when the size is not given.
        bytes_per_parameter: checkpoint bytes per parameter; see DEFAULT_BYTES_PER_PARAMETER.
        dataset_size_gib: data kept on Lustre (lazily loaded from S3), GiB.
        checkpoints_to_keep: complete checkpoints kept on Lustre; one more is counted for the
            checkpoint being written while the oldest is still kept.
        headroom_fraction: extra capacity on top of data and checkpoints (0.2 = 20 %), so the
            file system never runs full (Lustre slows down when OSTs fill up).
        efa_enabled: size for an EFA-enabled file system (its larger capacity quanta).
        read_clients: nodes reading training data at once (the workload's largest size; 0
            sizes for checkpoints alone).
        read_mb_s_per_client: data-loading throughput each of them needs, MB/s. Reads and
            checkpoint writes are not added: a synchronous checkpoint pauses data loading, so
            the file system needs the larger of the two.
    """

    target_checkpoint_write_seconds: float
    checkpoint_size_gib: float | None = None
    model_parameters: float | None = None
    bytes_per_parameter: float = DEFAULT_BYTES_PER_PARAMETER
    dataset_size_gib: float = 0.0
    checkpoints_to_keep: int = 2
    headroom_fraction: float = 0.2
    efa_enabled: bool = False
    read_clients: int = 0
    read_mb_s_per_client: float = DEFAULT_READ_MB_S_PER_NODE

    @property
    def read_mb_s(self) -> float:
        """Aggregate data-loading throughput, MB/s."""
        return self.read_clients * self.read_mb_s_per_client

    def findings(self) -> list[Finding]:
        """Every problem with this request as an error finding of :data:`FSX_SIZING_CODE`
        (empty when it is usable): the rule :func:`size_fsx_lustre` checks first."""
        out: list[Finding] = []
        if (self.checkpoint_size_gib is None) == (self.model_parameters is None):
            out.append(
                _problem(
                    "checkpoint_size_gib / model_parameters",
                    {
                        "checkpoint_size_gib": self.checkpoint_size_gib,
                        "model_parameters": self.model_parameters,
                    },
                    "give exactly one of them",
                )
            )
        if self.checkpoint_size_gib is not None and not self.checkpoint_size_gib > 0:
            out.append(_problem("checkpoint_size_gib", self.checkpoint_size_gib, "must be > 0 GiB"))
        if self.model_parameters is not None and not self.model_parameters > 0:
            out.append(
                _problem("model_parameters", self.model_parameters, "must be > 0 (e.g. 70e9)")
            )
        if not self.bytes_per_parameter > 0:
            out.append(
                _problem(
                    "bytes_per_parameter",
                    self.bytes_per_parameter,
                    "must be > 0 (16 for mixed-precision Adam training checkpoints)",
                )
            )
        if not self.target_checkpoint_write_seconds > 0:
            out.append(
                _problem(
                    "target_checkpoint_write_seconds",
                    self.target_checkpoint_write_seconds,
                    "must be > 0 seconds",
                )
            )
        if not self.dataset_size_gib >= 0:
            out.append(_problem("dataset_size_gib", self.dataset_size_gib, "must be >= 0 GiB"))
        if isinstance(self.checkpoints_to_keep, bool) or not (
            isinstance(self.checkpoints_to_keep, int) and self.checkpoints_to_keep >= 1
        ):
            out.append(
                _problem("checkpoints_to_keep", self.checkpoints_to_keep, "must be an int >= 1")
            )
        if not 0 <= self.headroom_fraction <= 4:
            out.append(
                _problem("headroom_fraction", self.headroom_fraction, "must be between 0 and 4")
            )
        return out

    @property
    def resolved_checkpoint_size_gib(self) -> float:
        """Checkpoint size in GiB, from the explicit size or parameters x bytes per parameter."""
        if self.checkpoint_size_gib is not None:
            return self.checkpoint_size_gib
        assert self.model_parameters is not None
        return self.model_parameters * self.bytes_per_parameter / _BYTES_PER_GIB


@dataclass(frozen=True, kw_only=True)
class FsxSizingResult:
    """A PERSISTENT_2 SSD configuration that meets a sizing request, and why it was chosen."""

    storage_capacity_gib: int
    throughput_mb_s_per_tib: int
    aggregate_throughput_mb_s: float
    checkpoint_size_gib: float
    checkpoint_write_seconds: float
    required_capacity_gib: float
    monthly_storage_cost_usd: float
    reasoning: tuple[str, ...] = field(default_factory=tuple)
    deployment_type: LustreDeploymentType = LustreDeploymentType.PERSISTENT_2

    def summary(self) -> str:
        """One line for reports: capacity, tier, throughput, write time, cost."""
        return (
            f"{self.storage_capacity_gib} GiB at {self.throughput_mb_s_per_tib} MB/s/TiB = "
            f"{self.aggregate_throughput_mb_s:,.0f} MB/s; checkpoint "
            f"{self.checkpoint_size_gib:,.1f} GiB written in "
            f"{self.checkpoint_write_seconds:,.0f} s; "
            f"~${self.monthly_storage_cost_usd:,.0f}/month"
        )


def size_fsx_lustre(request: FsxSizingRequest) -> FsxSizingResult:
    """Choose the cheapest PERSISTENT_2 (capacity, per-unit throughput) meeting ``request``.

    For each tier the smallest valid capacity that holds the data *and* writes a checkpoint
    within the target is found (valid capacities are closed under max, so the larger of the two
    minimums is valid); the candidate with the lowest monthly price wins (ties: more throughput).
    Capacity and throughput are bought together on SSD, so a throughput-bound job is often
    cheapest on a high tier with less capacity, and a capacity-bound one on the 125 tier.

    Raises FmValidationError listing every problem with the request.
    """
    findings = request.findings()
    if findings:
        raise FmValidationError(findings, context=FSX_SIZING_CONTEXT)
    deployment = LustreDeploymentType.PERSISTENT_2
    checkpoint_gib = request.resolved_checkpoint_size_gib
    checkpoint_mb = checkpoint_gib * _BYTES_PER_GIB / _BYTES_PER_MB
    slots = request.checkpoints_to_keep + 1
    data_gib = request.dataset_size_gib + checkpoint_gib * slots
    required_gib = data_gib * (1 + request.headroom_fraction)
    write_mb_s = checkpoint_mb / request.target_checkpoint_write_seconds
    needed_mb_s = max(write_mb_s, request.read_mb_s)

    candidates: list[tuple[float, float, int, int]] = []
    lines: list[str] = [
        f"checkpoint: {checkpoint_gib:,.1f} GiB"
        + (
            f" ({request.model_parameters:,.0f} params x {request.bytes_per_parameter:g} B)"
            if request.checkpoint_size_gib is None
            else ""
        ),
        f"space: ({request.dataset_size_gib:,.0f} GiB dataset + {slots} x {checkpoint_gib:,.1f} "
        f"GiB checkpoints) x {1 + request.headroom_fraction:g} headroom = {required_gib:,.0f} GiB",
        f"throughput: {checkpoint_mb:,.0f} MB / {request.target_checkpoint_write_seconds:g} s = "
        f"{write_mb_s:,.0f} MB/s",
    ]
    if request.read_clients:
        lines.append(
            f"data loading: {request.read_clients:,} nodes x {request.read_mb_s_per_client:g} "
            f"MB/s = {request.read_mb_s:,.0f} MB/s; sized for the larger, {needed_mb_s:,.0f} MB/s"
        )
    for tier in PER_UNIT_THROUGHPUTS[deployment]:
        for_space = next_valid_storage_capacity(deployment, required_gib)
        # aggregate = capacity_gib * tier / 1000  >=  needed  <=>  capacity >= needed*1000/tier
        for_write = next_valid_storage_capacity(deployment, needed_mb_s * 1000 / tier)
        capacity = max(for_space, for_write)
        if request.efa_enabled:
            step = EFA_CAPACITY_STEP_GIB[tier]
            capacity = math.ceil(capacity / step) * step
        cost = capacity * PERSISTENT_2_PRICE_USD_PER_GB_MONTH[tier]
        throughput = aggregate_throughput_mb_s(capacity, tier)
        candidates.append((cost, -throughput, capacity, tier))
        lines.append(
            f"  {tier:>4} MB/s/TiB: {capacity:,} GiB (space {for_space:,}, write {for_write:,}"
            + (", EFA quantum" if request.efa_enabled else "")
            + f") -> {throughput:,.0f} MB/s, ${cost:,.0f}/month"
        )
    cost, neg_throughput, capacity, tier = min(candidates)
    throughput = -neg_throughput
    write_seconds = checkpoint_mb / throughput
    lines.append(
        f"chosen: {capacity:,} GiB at {tier} MB/s/TiB, the cheapest candidate "
        f"(prices: {PRICE_TABLE_SOURCE})"
    )
    return FsxSizingResult(
        storage_capacity_gib=capacity,
        throughput_mb_s_per_tib=tier,
        aggregate_throughput_mb_s=throughput,
        checkpoint_size_gib=checkpoint_gib,
        checkpoint_write_seconds=write_seconds,
        required_capacity_gib=required_gib,
        monthly_storage_cost_usd=cost,
        reasoning=tuple(lines),
    )


# --------------------------------------------------------------------------------------------
# Reference cases (quoted in the docs; reproduce with `python -m fm_constructs.planning.fsx_sizing`)
# --------------------------------------------------------------------------------------------

#: name -> request: dense models at 16 B/param, a 2-minute checkpoint target, 3 checkpoints kept,
#: and a working set of tokenized data on Lustre that grows with the model.
REFERENCE_REQUESTS: dict[str, FsxSizingRequest] = {
    "7B": FsxSizingRequest(
        model_parameters=7e9,
        target_checkpoint_write_seconds=120,
        dataset_size_gib=1000,
        checkpoints_to_keep=3,
    ),
    "70B": FsxSizingRequest(
        model_parameters=70e9,
        target_checkpoint_write_seconds=120,
        dataset_size_gib=4000,
        checkpoints_to_keep=3,
    ),
    "405B": FsxSizingRequest(
        model_parameters=405e9,
        target_checkpoint_write_seconds=120,
        dataset_size_gib=16000,
        checkpoints_to_keep=3,
    ),
}


def reference_sizings() -> dict[str, FsxSizingResult]:
    """Sizing results for the reference 7B, 70B and 405B requests."""
    return {name: size_fsx_lustre(request) for name, request in REFERENCE_REQUESTS.items()}


def format_sizing_table(results: dict[str, FsxSizingResult]) -> str:
    """A Markdown table of sizing results, one row per named request."""
    rows = [
        "| model | checkpoint GiB | capacity GiB | MB/s/TiB | aggregate MB/s | write s | $/month |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in results.items():
        rows.append(
            f"| {name} | {r.checkpoint_size_gib:,.1f} | {r.storage_capacity_gib:,} | "
            f"{r.throughput_mb_s_per_tib} | {r.aggregate_throughput_mb_s:,.0f} | "
            f"{r.checkpoint_write_seconds:,.0f} | {r.monthly_storage_cost_usd:,.0f} |"
        )
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the reference sizing table and each result's reasoning."""
    del argv
    results = reference_sizings()
    print(format_sizing_table(results))
    for name, result in results.items():
        print(f"\n{name}:")
        for line in result.reasoning:
            print(f"  {line}")


if __name__ == "__main__":
    main()
