"""The MLflow metrics of the Nugget evaluations' measured numbers and competence floors: every
number with the n it stands on, every 95% interval with its ends (docs/algorithms.md, "Units,
intervals and floors")."""

from __future__ import annotations

from stages.common.floors import Floor
from stages.common.resampling import UnitSample


def sample_metrics(key: str, sample: UnitSample, bounds: tuple[float, float] | None) -> dict[str, float]:
    """``key``: the value of ``sample``; ``<key>_n``: its units (documents, queries, articles);
    ``<key>_low`` / ``<key>_high``: the ends of its 95% bootstrap interval over them (``bounds``,
    `UnitSample.interval`, computed once by the caller), where it has one (from
    `stages.common.resampling.MIN_UNITS` units)."""
    ends = {} if bounds is None else {f"{key}_low": bounds[0], f"{key}_high": bounds[1]}
    return {key: sample.value(), f"{key}_n": float(sample.n), **ends}


def floor_metrics(key: str, floor: Floor, n: int) -> dict[str, float]:
    """``key``: the floor's value; ``<key>_n``: the units it was computed on (the evaluation's own)."""
    return {key: floor.value, f"{key}_n": float(n)}
