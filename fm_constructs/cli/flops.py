"""Peak dense BF16 throughput per accelerator, from a checked-in table with its sources.

Used by the training-goal estimate. Accelerators without a verified figure are absent on
purpose, and the estimate says so instead of guessing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class PeakFlops:
    """Peak dense BF16 TFLOPS of one accelerator and where the figure comes from."""

    accelerator: str
    bf16_dense_tflops: float
    source: str

    @property
    def flops_per_second(self) -> float:
        return self.bf16_dense_tflops * 1e12


@cache
def _table() -> dict[str, PeakFlops]:
    text = resources.files("fm_constructs.cli").joinpath("data/peak_flops.json").read_text("utf-8")
    raw = json.loads(text)["accelerators"]
    return {
        name: PeakFlops(
            accelerator=name,
            bf16_dense_tflops=float(entry["bf16_dense_tflops"]),
            source=str(entry["source"]),
        )
        for name, entry in raw.items()
    }


def peak_flops(accelerator_name: str) -> PeakFlops | None:
    """The figure for a catalog accelerator name ('H100', 'Trainium2'), or None."""
    return _table().get(accelerator_name)


def known_accelerators() -> tuple[str, ...]:
    return tuple(sorted(_table()))
