"""Training-goal arithmetic: compute, accelerator hours and days on the planned cluster.

Dense transformer training costs about 6 x parameters x tokens FLOPs (forward 2, backward 4
per parameter and token; Kaplan et al. 2020, "Scaling Laws for Neural Language Models").
Achieved throughput is peak dense BF16 x MFU (model FLOPs utilization; 35-55 % is typical of
well-tuned large runs). Accelerator hours = FLOPs / (peak x MFU) / 3600.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from fm_constructs.cli.flops import PeakFlops

_SUFFIXES = {"": 1.0, "K": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12, "P": 1e15}
_QUANTITY = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([KMBGTP]?)\s*$", re.I)


def parse_quantity(text: str) -> float:
    """'70B' -> 7e10, '15T' -> 1.5e13, '1.5e12' -> 1.5e12 (K, M, B/G, T, P suffixes).

    Raises ValueError with the accepted forms (argparse shows it as a usage error).
    """
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"must be a number such as 70e9, 70B or 15T, got {text!r}")
    value = float(match.group(1)) * _SUFFIXES[match.group(2).upper()]
    if not value > 0 or not math.isfinite(value):
        raise ValueError(f"must be greater than 0, got {text!r}")
    return value


#: Smallest model and token count a training goal takes: a bare ``70`` is 70 parameters, not
#: 70 billion, and would estimate a run of a fraction of a second without saying why.
MIN_GOAL_QUANTITY = 1e6


def parse_goal_quantity(text: str, what: str) -> float:
    """A training-goal count (``what``: "parameters", "tokens") of at least a million.

    Raises ValueError naming the suffixed spelling the caller most likely meant.
    """
    value = parse_quantity(text)
    if value < MIN_GOAL_QUANTITY:
        raise ValueError(
            f"{text!r} is {value:,.15g} {what}; a training goal counts at least a million: "
            f"write {text.strip()}B for {value:,.15g} billion (suffixes K, M, B, T; or 7e10)"
        )
    return value


@dataclass(frozen=True)
class TrainingGoal:
    """What to train: model size, training tokens and the MFU the run is expected to reach."""

    parameters: float
    tokens: float
    mfu: float

    @property
    def flops(self) -> float:
        """Total training compute, ~6 x N x D."""
        return 6.0 * self.parameters * self.tokens


@dataclass(frozen=True)
class GoalEstimate:
    """The goal on a concrete cluster."""

    goal: TrainingGoal
    accelerators: int
    peak: PeakFlops
    accelerator_hours: float
    wall_clock_hours: float

    @property
    def days(self) -> float:
        return self.wall_clock_hours / 24


def estimate(goal: TrainingGoal, *, accelerators: int, peak: PeakFlops) -> GoalEstimate:
    """Accelerator hours and wall-clock time of ``goal`` on ``accelerators`` devices."""
    accelerator_hours = goal.flops / (peak.flops_per_second * goal.mfu) / 3600
    return GoalEstimate(
        goal=goal,
        accelerators=accelerators,
        peak=peak,
        accelerator_hours=accelerator_hours,
        wall_clock_hours=accelerator_hours / accelerators,
    )
