"""The hard wall-clock budget of one command (``--max-seconds``).

A lent GPU call is killed at its limit and returns only what was written by then, so the
burst never starts a unit of work (a ratio, a pair of systems) whose estimated time exceeds
what is left; it records that unit as "not run: no time" instead. The clock starts when the
command starts (`benchmarks.headline.__main__` reads it before importing torch), so imports,
CUDA start-up and data loading count too.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

NO_TIME = "not run: no time"
MARGIN_S = 3.0  # per unit of work, for what no estimate covers (writing results, fig. 5's counts, freeing memory)


@dataclass
class Deadline:
    """``max_seconds`` from ``started`` (a `time.monotonic` reading); None = no limit."""

    max_seconds: float | None
    started: float = field(default_factory=time.monotonic)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def left(self) -> float:
        return math.inf if self.max_seconds is None else self.max_seconds - self.elapsed()

    def allows(self, estimate: float) -> bool:
        """Whether work estimated at ``estimate`` seconds can finish in what is left."""
        return estimate <= self.left()

    def describe(self) -> dict[str, float | None]:
        return {"max_seconds": self.max_seconds, "elapsed": round(self.elapsed(), 1)}


def scoring_estimate(measured: list[float], preset_estimate: float) -> float:
    """A scoring step's expected seconds: 1.25x the slowest measured so far (+2 s), or the
    preset's guess before any was measured."""
    return 1.25 * max(measured) + 2.0 if measured else preset_estimate


def share_seconds(left: float, units: float, overhead: float, cap: float, floor: float) -> float:
    """Training seconds per unit of training when ``units`` of them (ratios; or Nugget2D's run
    plus ICAE's, counted in Nugget2D's) and ``overhead`` seconds of everything else (builds,
    scoring, a margin) must fit in ``left``: at most ``cap`` (the preset's), at least ``floor``
    (below it the run would show nothing; the per-unit check then decides what starts). 2% of
    the share is kept back, so the check right after the plan never fails by a rounding."""
    if math.isinf(left):
        return cap
    return max(floor, min(cap, 0.98 * (left - overhead) / units))
