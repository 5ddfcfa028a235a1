"""Read a saved nccl-tests ``all_reduce_perf`` log and judge it against the expected bandwidth.

Accepts the output as mpirun prints it (``--tag-output`` prefixes such as ``[1,0]<stdout>:``),
as srun prints it (``-l`` prefixes such as ``0:``), as ``kubectl logs`` shows a launcher, with
or without NCCL INFO/WARN lines interleaved. Pure: no I/O besides the text it is given.

Verdict rules:

* The log must contain the result table and the closing ``# Avg bus bandwidth`` line; a log
  that stops before it (job killed, time limit, crash) fails as truncated.
* Any row with ``#wrong`` > 0, or an ``Out of bounds values : N FAILED`` line, fails: the
  collective returned wrong data and the bandwidth does not matter.
* The bus bandwidth compared is the out-of-place ``busbw`` of the largest message size; it must
  reach :data:`~fm_constructs.planning.nccl_bandwidth.PASS_FRACTION` of the expected figure
  (:func:`~fm_constructs.planning.nccl_bandwidth.expectation_for`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fm_constructs.catalog import InstanceSpec, all_instance_types, get_instance_type
from fm_constructs.planning.nccl_bandwidth import Expectation, expectation_for

# Rank/host prefixes added by launchers: mpirun --tag-output "[1,0]<stdout>:", srun -l "0: ",
# and "[host:rank]" style tags some wrappers add.
_PREFIX = re.compile(r"^\s*(?:\[\d+,\d+\]<std(?:out|err)>:|\d+:\s|\[[\w.-]+:\d+\]\s?)")
_ROW = re.compile(
    r"^\s*(?P<size>\d+)\s+(?P<count>\d+)\s+(?P<type>\w+)\s+(?P<redop>\w+)\s+(?P<root>-?\d+)"
    r"\s+(?P<time>[\d.]+|N/A)\s+(?P<algbw>[\d.]+|N/A)\s+(?P<busbw>[\d.]+|N/A)"
    r"\s+(?P<wrong>\d+|N/A)"
    r"(?:\s+(?P<ip_time>[\d.]+|N/A)\s+(?P<ip_algbw>[\d.]+|N/A)\s+(?P<ip_busbw>[\d.]+|N/A)"
    r"\s+(?P<ip_wrong>\d+|N/A))?\s*$"
)
_AVG = re.compile(r"#\s*Avg bus bandwidth\s*:\s*(?P<value>[\d.]+)")
_OUT_OF_BOUNDS = re.compile(r"#\s*Out of bounds values\s*:\s*(?P<count>\d+)\s+(?P<state>\w+)")
_DEVICE = re.compile(
    r"#\s+Rank\s+(?P<rank>\d+)\b.*?\bon\s+(?P<host>\S+)\s+device\s+(?P<dev>\d+)"
    r"(?:\s+\[[^\]]*\]\s+(?P<gpu>.+?))?\s*$"
)
_NICS = re.compile(r"NET/OFI\s+Selected [Pp]rovider is (?P<provider>[\w-]+).*?found (?P<n>\d+) nic")
_SOCKET = re.compile(r"NCCL INFO (?:Using network Socket|NET/Socket\b)")
_OFI = re.compile(r"NCCL INFO (?:Using network (?:AWS )?Libfabric|NET/OFI\b)")
_NO_PROVIDER = re.compile(
    r"NET/OFI.*(?:No eligible providers|Unable to find a provider|couldn't open)"
    r"|Failed to initialize any NET plugin|fi_getinfo.*-61",
    re.IGNORECASE,
)
_INFO = re.compile(r"NCCL INFO")
_WARN = re.compile(r"NCCL WARN (?P<text>.*)")


@dataclass(frozen=True)
class ResultRow:
    """One line of the result table."""

    size_bytes: int
    data_type: str
    busbw_gb_s: float | None
    wrong: int | None
    in_place_busbw_gb_s: float | None
    in_place_wrong: int | None


@dataclass
class ParsedLog:
    """What the log says: result rows, the summary, ranks per host and NCCL transport hints."""

    rows: list[ResultRow] = field(default_factory=list)
    avg_busbw_gb_s: float | None = None
    out_of_bounds: int | None = None
    out_of_bounds_failed: bool = False
    hosts: dict[str, int] = field(default_factory=dict)
    gpu_names: set[str] = field(default_factory=set)
    info_lines: int = 0
    socket_transport: bool = False
    ofi_transport: bool = False
    efa_nics: int | None = None
    no_provider: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def truncated(self) -> bool:
        return self.avg_busbw_gb_s is None

    @property
    def largest(self) -> ResultRow | None:
        return max(self.rows, key=lambda row: row.size_bytes) if self.rows else None


def _number(text: str | None) -> float | None:
    return None if text in (None, "N/A") else float(text)


def _count(text: str | None) -> int | None:
    return None if text in (None, "N/A") else int(text)


def parse_log(text: str) -> ParsedLog:
    """Parse the output of one ``all_reduce_perf`` run (see the module docstring)."""
    log = ParsedLog()
    for raw in text.splitlines():
        line = _PREFIX.sub("", raw, count=1)
        if _INFO.search(line):
            log.info_lines += 1
            if _SOCKET.search(line):
                log.socket_transport = True
            if _OFI.search(line):
                log.ofi_transport = True
            nics = _NICS.search(line)
            if nics:
                found = int(nics.group("n"))
                log.efa_nics = found if log.efa_nics is None else min(log.efa_nics, found)
        if _NO_PROVIDER.search(line):
            log.no_provider = True
        warn = _WARN.search(line)
        if warn and len(log.warnings) < 5:
            log.warnings.append(warn.group("text").strip())
        device = _DEVICE.search(line)
        if device:
            host = device.group("host")
            log.hosts[host] = log.hosts.get(host, 0) + 1
            if device.group("gpu"):
                log.gpu_names.add(device.group("gpu").strip())
            continue
        row = _ROW.match(line)
        if row:
            log.rows.append(
                ResultRow(
                    size_bytes=int(row.group("size")),
                    data_type=row.group("type"),
                    busbw_gb_s=_number(row.group("busbw")),
                    wrong=_count(row.group("wrong")),
                    in_place_busbw_gb_s=_number(row.group("ip_busbw")),
                    in_place_wrong=_count(row.group("ip_wrong")),
                )
            )
            continue
        avg = _AVG.search(line)
        if avg:
            log.avg_busbw_gb_s = float(avg.group("value"))
            continue
        bounds = _OUT_OF_BOUNDS.search(line)
        if bounds:
            log.out_of_bounds = int(bounds.group("count"))
            log.out_of_bounds_failed = bounds.group("state").upper() != "OK"
    return log


def _gpu_matches(spec: InstanceSpec, gpu_name: str) -> bool:
    """Whether ``gpu_name`` as nccl-tests prints it ("NVIDIA H100 80GB HBM3",
    "NVIDIA A100-SXM4-40GB") is the accelerator of ``spec``: its name as a word, and its memory
    when the name states one."""
    if not re.search(
        rf"(?<![A-Za-z0-9]){re.escape(spec.accelerator_name)}(?![A-Za-z0-9])", gpu_name
    ):
        return False
    memory = re.search(r"(\d+)\s*GB", gpu_name)
    return memory is None or abs(int(memory.group(1)) - spec.accelerator_memory_gib) <= (
        0.15 * spec.accelerator_memory_gib
    )


def ranks_per_host(log: ParsedLog) -> int | None:
    counts = set(log.hosts.values())
    return counts.pop() if len(counts) == 1 else None


def instance_types_in_log(log: ParsedLog) -> tuple[str, ...]:
    """The multi-node EFA types whose GPUs the log names, with as many GPUs per node as the
    log has ranks per host."""
    if len(log.gpu_names) != 1:
        return ()
    (gpu,) = log.gpu_names
    per_host = ranks_per_host(log)
    return tuple(
        spec.name
        for spec in all_instance_types()
        if spec.efa_supported
        and _gpu_matches(spec, gpu)
        and (per_host is None or spec.accelerator_count == per_host)
    )


def contradictions(log: ParsedLog, instance_type: str, nodes: int) -> tuple[str, ...]:
    """What the log says against the shape a judgement was asked for: another host count,
    another GPU, or not every GPU of each node."""
    spec = get_instance_type(instance_type)
    found: list[str] = []
    if log.hosts and len(log.hosts) != nodes:
        found.append(
            f"the log lists ranks on {len(log.hosts)} host(s), not {nodes} "
            f"({', '.join(sorted(log.hosts)[:4])}{', ...' if len(log.hosts) > 4 else ''})"
        )
    for gpu in sorted(log.gpu_names):
        if not _gpu_matches(spec, gpu):
            found.append(f"the log's GPUs are {gpu!r}, a {spec.name} has {spec.accelerator_name}")
    per_host = ranks_per_host(log)
    if log.hosts and per_host != spec.accelerator_count:
        shown = per_host if per_host is not None else sorted(set(log.hosts.values()))
        found.append(
            f"the log has {shown} rank(s) per host, a {spec.name} has "
            f"{spec.accelerator_count} GPUs: the expected figures are for every GPU of each node"
        )
    return tuple(found)


@dataclass(frozen=True)
class Verdict:
    """The judgement of one log: ``passed``, the headline ``reason``, measured and expected
    figures, the rule used, and the likely causes when it failed."""

    passed: bool
    reason: str
    measured_gb_s: float | None
    largest_message_bytes: int | None
    expectation: Expectation | None
    causes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def at(
        cls,
        row: ResultRow,
        *,
        passed: bool,
        reason: str,
        expectation: Expectation | None = None,
        causes: tuple[str, ...] = (),
    ) -> Verdict:
        """The verdict on a log whose largest result row is ``row`` (its bus bandwidth is the
        figure measured)."""
        return cls(
            passed=passed,
            reason=reason,
            measured_gb_s=row.busbw_gb_s,
            largest_message_bytes=row.size_bytes,
            expectation=expectation,
            causes=causes,
        )

    def to_json(self) -> dict[str, Any]:
        exp = self.expectation
        return {
            "passed": self.passed,
            "reason": self.reason,
            "measured_busbw_gb_s": self.measured_gb_s,
            "largest_message_bytes": self.largest_message_bytes,
            "expected_busbw_gb_s": exp.busbw_gb_s if exp else None,
            "threshold_gb_s": exp.threshold_gb_s if exp else None,
            "rule": exp.rule if exp else None,
            "reference_source": exp.reference.source if exp and exp.reference else None,
            "likely_causes": list(self.causes),
            "notes": list(self.notes),
        }


def _wrong_rows(log: ParsedLog) -> list[ResultRow]:
    return [row for row in log.rows if (row.wrong or 0) > 0 or (row.in_place_wrong or 0) > 0]


def likely_causes(log: ParsedLog, instance_type: str, nodes: int) -> tuple[str, ...]:
    """Why the bandwidth is low, most specific first, from what the log shows."""
    spec = get_instance_type(instance_type)
    causes: list[str] = []
    if log.no_provider:
        causes.append(
            "no EFA provider: libfabric found no EFA device in the container (the pod did not "
            f"request vpc.amazonaws.com/efa: {spec.max_efa_interfaces}, the EFA device plugin is "
            "not running on the node, or the image lacks libfabric/aws-ofi-nccl)"
        )
    if log.socket_transport and not log.ofi_transport:
        causes.append(
            "TCP fallback: NCCL used its Socket transport, not EFA (aws-ofi-nccl not loaded: "
            "check LD_LIBRARY_PATH includes /opt/amazon/ofi-nccl/lib and that "
            "'NET/OFI Selected provider is efa' appears with NCCL_DEBUG=INFO)"
        )
    if log.efa_nics is not None and log.efa_nics < spec.max_efa_interfaces:
        causes.append(
            f"missing EFA devices: NCCL found {log.efa_nics} EFA NICs per process, a "
            f"{spec.name} has {spec.max_efa_interfaces} (request all of them in the pod, check "
            "the node's launch template interfaces and 'fi_info -p efa' on the node)"
        )
    if log.hosts and len(log.hosts) != nodes:
        causes.append(
            f"the run spanned {len(log.hosts)} host(s), not {nodes}: check --nodes and the "
            "launcher's host list"
        )
    if log.info_lines == 0:
        causes.append(
            "no NCCL INFO lines in the log, so the transport cannot be read: rerun with "
            "NCCL_DEBUG=INFO and look for 'NET/OFI Selected provider is efa' (EFA) versus "
            "'NET/Socket' (TCP fallback)"
        )
    if not causes or (log.ofi_transport and not log.socket_transport):
        causes.append(
            "one slow node or link: EFA is in use but the ring runs at the pace of its slowest "
            "member; run nccl-tests on pairs of nodes to find it, run the DCGM level-2 "
            "diagnostic on it, and check that every node is in the same cluster placement group"
        )
    return tuple(causes)


def judge(log: ParsedLog, instance_type: str, nodes: int) -> Verdict:
    """Apply the rules of the module docstring."""
    get_instance_type(instance_type)  # a clear error for an unknown type
    largest = log.largest
    if largest is None:
        return Verdict(
            passed=False,
            reason="no all_reduce_perf result rows found: the run failed before measuring "
            "(see the NCCL WARN lines) or this is not an nccl-tests log",
            measured_gb_s=None,
            largest_message_bytes=None,
            expectation=None,
            causes=tuple(log.warnings),
        )
    wrong = _wrong_rows(log)
    if wrong or log.out_of_bounds_failed:
        sizes = ", ".join(str(row.size_bytes) for row in wrong[:5])
        detail = f"#wrong > 0 at message sizes {sizes}" if wrong else ""
        if log.out_of_bounds_failed:
            detail = (detail + "; " if detail else "") + (
                f"{log.out_of_bounds} out-of-bounds values"
            )
        return Verdict.at(
            largest,
            passed=False,
            reason=f"wrong results: {detail}. The collective returned corrupt data; a GPU, "
            "NVLink or NIC is faulty: run the DCGM level-2 diagnostic on every node",
        )
    if log.truncated:
        return Verdict.at(
            largest,
            passed=False,
            reason=f"truncated log: it ends after the {largest.size_bytes}-byte row, before the "
            "'# Avg bus bandwidth' summary (job killed, time limit, or a rank crashed)",
            causes=tuple(log.warnings),
        )
    measured = largest.busbw_gb_s
    if nodes < 2:
        return Verdict.at(
            largest,
            passed=True,
            reason="single node: results are correct; NVLink was measured, EFA was not "
            "(run with --nodes 2 or more to prove the network)",
        )
    expectation = expectation_for(instance_type, nodes, largest.size_bytes)
    if largest.size_bytes < expectation.min_message_bytes:
        return Verdict.at(
            largest,
            passed=False,
            reason=f"the largest message ({largest.size_bytes} bytes) is smaller than the "
            f"{expectation.min_message_bytes} bytes the expected figure holds for: rerun with "
            f"-e {expectation.min_message_bytes >> 20}M or more",
            expectation=expectation,
        )
    if measured is not None and measured >= expectation.threshold_gb_s:
        return Verdict.at(
            largest,
            passed=True,
            reason=f"bus bandwidth {measured:g} GB/s at {largest.size_bytes} bytes reaches "
            f"{expectation.threshold_gb_s:.1f} GB/s ({expectation.busbw_gb_s:g} GB/s expected)",
            expectation=expectation,
        )
    return Verdict.at(
        largest,
        passed=False,
        reason=f"bus bandwidth {measured} GB/s at {largest.size_bytes} bytes is below "
        f"{expectation.threshold_gb_s:.1f} GB/s ({expectation.busbw_gb_s:g} GB/s expected)",
        expectation=expectation,
        causes=likely_causes(log, instance_type, nodes),
    )
