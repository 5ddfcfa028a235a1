"""nccl-tests ``all_reduce_perf`` output in the shapes real runs print, for the log judge's tests.

The layout follows nccl-tests' own printf formats (header block, ``# Using devices`` lines,
the two-level column header, one row per size with out-of-place and in-place columns, the
``Out of bounds`` and ``Avg bus bandwidth`` summary), then a launcher adds its prefixes:
mpirun ``--tag-output`` (``[1,0]<stdout>:``), srun ``-l`` (``0: ``), or none (kubectl logs
of a launcher run without ``--tag-output``). NCCL INFO/WARN lines are interleaved the way
NCCL prints them (``host:pid:tid [dev] NCCL INFO ...``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

HEADER = (
    "#                                                              out-of-place"
    "                       in-place          \n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong"
    "     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       "
    "     (us)  (GB/s)  (GB/s)       "
)


def efa_info(host: str, nics: int) -> list[str]:
    return [
        f"{host}:2841:2841 [0] NCCL INFO NET/OFI Initializing aws-ofi-nccl 1.16.0",
        f"{host}:2841:2841 [0] NCCL INFO NET/OFI Using Libfabric version 2.1",
        f"{host}:2841:2841 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa "
        f"(found {nics} nics)",
        f"{host}:2841:2841 [0] NCCL INFO Using network Libfabric",
        f"{host}:2841:2890 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Libfabric/0"
        "/GDRDMA",
    ]


def socket_info(host: str) -> list[str]:
    return [
        f"{host}:2841:2841 [0] NCCL INFO NET/Plugin: Could not find: libnccl-net.so.",
        f"{host}:2841:2841 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0>",
        f"{host}:2841:2841 [0] NCCL INFO Using network Socket",
        f"{host}:2841:2890 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0",
    ]


def busbw_curve(peak: float) -> Callable[[int], float]:
    """A bus-bandwidth curve rising to ``peak`` GB/s at the largest sizes."""

    def at(size: int) -> float:
        return peak * size / (size + (64 << 20))

    return at


def nccl_log(
    *,
    hosts: Sequence[str] = ("ip-10-1-0-11", "ip-10-1-0-12"),
    gpus: int = 8,
    max_bytes: int = 16 << 30,
    busbw: Callable[[int], float] | None = None,
    prefix: str = "mpirun",
    info: Sequence[str] = (),
    wrong_at: int | None = None,
    out_of_bounds: int = 0,
    truncate_after: int | None = None,
    gpu_name: str = "NVIDIA H100 80GB HBM3",
) -> str:
    """One run's output; ``truncate_after`` stops after that many result rows."""
    curve = busbw or busbw_curve(480.0)
    ranks = len(hosts) * gpus
    body: list[str] = [
        f"# nThread 1 nGpus 1 minBytes 8 maxBytes {max_bytes} step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    for rank in range(ranks):
        host = hosts[rank // gpus]
        body.append(
            f"#  Rank {rank:2d} Group  0 Pid  {2841 + rank % gpus:5d} on {host:>12} device  "
            f"{rank % gpus} [0x{0x53 + rank % gpus:02x}] {gpu_name}"
        )
    body += ["#", *HEADER.splitlines()]
    size = 8
    rows = 0
    truncated = False
    while size <= max_bytes:
        if truncate_after is not None and rows >= truncate_after:
            truncated = True
            break
        bw = curve(size)
        algbw = bw * ranks / (2 * (ranks - 1)) if ranks > 1 else bw
        time_us = size / (algbw * 1e3) if algbw > 0 else 0.0
        wrong = 3 if wrong_at is not None and size >= wrong_at else 0
        body.append(
            f"{size:12d}  {size // 4:12d}     float     sum      -1  {time_us:7.1f}  "
            f"{algbw:6.2f}  {bw:6.2f}  {wrong:6d}  {time_us:7.1f}  {algbw:6.2f}  {bw:6.2f}  "
            f"{wrong:6d}"
        )
        rows += 1
        size *= 2
    if not truncated:
        state = "OK" if out_of_bounds == 0 else "FAILED"
        body += [
            f"# Out of bounds values : {out_of_bounds} {state}",
            f"# Avg bus bandwidth    : {curve(max_bytes) / 3:.4f} ",
            "#",
        ]
    # NCCL prints its INFO lines while the communicator is set up, before the table.
    lines = [*info, *body]
    return "\n".join(_prefixed(line, prefix) for line in lines) + "\n"


def _prefixed(line: str, prefix: str) -> str:
    if prefix == "mpirun":
        return f"[1,0]<stdout>:{line}"
    if prefix == "srun":
        return f"0: {line}"
    return line
