"""Intervals and differences that resample the independent unit.

A corpus number (a BLEU, a perplexity, an accuracy, a share of nugget tokens) is a statistic of
sums over *units*: documents, articles, questions, sentences, ranking tasks. Units are what is
independent: two lengths of one document, the segments cut from one article, the nugget tokens
of one document are not. A `UnitSample` keeps, per unit, the sufficient statistics the metric
sums (``[n_units, k]``) and the name of the statistic that turns the sums into the number
(`STATISTICS`), so that

- its 95% interval is the percentile bootstrap over units (Koehn 2004: units drawn with
  replacement, the statistic recomputed from the summed statistics of each resample), and
- two systems' difference gets its own 95% interval: *paired* where both were scored on the same
  units (each resample draws the same units for both: the variation the two share cancels, so a
  difference shows with fewer units; `scipy.stats.bootstrap(paired=True)`), independent
  resampling of each otherwise.

Rows given the same unit id are summed into one unit (a document scored at two lengths is one
unit). A sample of fewer than `MIN_UNITS` units has no interval and no difference interval: at
that size the percentile bootstrap's 95% interval covers the truth far less often than 95% of
the time (`benchmarks/bootstrap_coverage.py` measures it; docs/report.md), so a difference it
"separates" would be an artefact of the method.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stages.common.bleu_statistic import bleu_from_sums

MIN_UNITS = 20  # fewer units: no interval (benchmarks/results/bootstrap_coverage.json, 4000 reps: coverage under 90% below 20)
RESAMPLES = 2000  # bootstrap resamples per interval
SEED = 0  # fixed: an evaluation or the report is a pure function of its inputs, its intervals too
CONFIDENCE = 0.95


def plural(unit: str) -> str:
    """The plural of a unit's name as the report writes it ("query" -> "queries", "document" -> "documents")."""
    if unit.endswith("y") and len(unit) > 1 and unit[-2] not in "aeiou":
        return unit[:-1] + "ies"
    return unit if unit.endswith("s") else unit + "s"


def _ratio(sums: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return sums[..., 0] / sums[..., 1]


def _exp_ratio(sums: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.exp(sums[..., 0] / sums[..., 1])


# a statistic of the summed unit statistics ``[..., k] -> [...]`` (vectorised over leading axes)
STATISTICS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "ratio": _ratio,  # [value sum, count]: a mean per example / token, a proportion, a share (any scale)
    "exp_ratio": _exp_ratio,  # [NLL sum, tokens]: a perplexity
    "bleu": bleu_from_sums,  # `stages.evaluation.metrics.bleu_statistics`: corpus BLEU (0-100)
}


@dataclass(frozen=True)
class UnitSample:
    """Per independent unit, the sufficient statistics of one metric of one system.

    ``stats`` is ``[n_units, k]`` (float64); ``ids[i]`` names unit ``i`` (the same id in two
    systems' samples is the same unit: what pairs them); ``unit`` says what a unit is
    ("document", "article", "question", ...), ``statistic`` which of `STATISTICS` the metric is.
    """

    unit: str
    statistic: str
    ids: tuple[str, ...]
    stats: np.ndarray

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(f"UnitSample: unknown statistic {self.statistic!r}; use one of {sorted(STATISTICS)}")
        if self.stats.ndim != 2 or len(self.stats) != len(self.ids):
            raise ValueError(f"UnitSample: stats must be [units, k] with one row per id; got shape "
                             f"{self.stats.shape} for {len(self.ids)} ids")
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("UnitSample: ids must be unique (build it with `UnitSample.of`, which sums repeats)")

    @classmethod
    def of(cls, unit: str, statistic: str, ids: Sequence[Any], stats: Sequence[Sequence[float]] | np.ndarray
           ) -> UnitSample:
        """A sample from one row per scored item: rows of the same id (``str(id)``) are summed into
        one unit, in order of first appearance."""
        rows = np.asarray(stats, dtype=np.float64)
        if rows.ndim != 2 or len(rows) != len(ids):
            raise ValueError(f"UnitSample.of({unit!r}): {len(ids)} ids but stats of shape {rows.shape}")
        index: dict[str, int] = {}
        for i in map(str, ids):
            index.setdefault(i, len(index))
        summed = np.zeros((len(index), rows.shape[1]), dtype=np.float64)
        np.add.at(summed, [index[str(i)] for i in ids], rows)
        return cls(unit, statistic, tuple(index), summed)

    @property
    def n(self) -> int:
        """The number of units."""
        return len(self.ids)

    def value(self) -> float:
        """The statistic of all units."""
        return float(STATISTICS[self.statistic](self.stats.sum(axis=0)))

    def interval(self) -> tuple[float, float] | None:
        """The 95% percentile bootstrap interval over units; None below `MIN_UNITS` units or
        where the statistic is undefined on the whole sample. Widened where needed to hold
        the value of the whole sample (a skewed bootstrap distribution of few units can
        leave it outside)."""
        point = self.value()
        if self.n < MIN_UNITS or not math.isfinite(point):
            return None
        low, high = _percentile_interval((self.stats,), lambda s: STATISTICS[self.statistic](s.sum(axis=-2)),
                                         paired=False)
        return min(low, point), max(high, point)

    def to_json(self) -> dict[str, Any]:
        return {"unit": self.unit, "statistic": self.statistic, "ids": list(self.ids),
                "stats": [[float(x) for x in row] for row in self.stats]}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> UnitSample:
        """The sample `to_json` wrote; a `ValueError` naming the field that is malformed."""
        for key, kind in (("unit", str), ("statistic", str), ("ids", list), ("stats", list)):
            if not isinstance(raw.get(key), kind):
                raise ValueError(f"unit sample: field {key!r} must be a {kind.__name__}, got {raw.get(key)!r}")
        stats = np.asarray(raw["stats"], dtype=np.float64).reshape(len(raw["ids"]), -1)
        return cls(raw["unit"], raw["statistic"], tuple(map(str, raw["ids"])), stats)


@dataclass(frozen=True)
class Difference:
    """``a - b`` of two samples' statistics with its 95% bootstrap interval."""

    value: float
    low: float
    high: float
    n: int  # units behind it: the shared units (paired), else the smaller sample's
    unit: str
    paired: bool
    method: str = ""  # how the interval was computed, where not by `difference`'s bootstrap

    def describe(self, fmt: str = "{:+.2f}") -> str:
        how = self.method or ("paired bootstrap" if self.paired else "independent bootstrap")
        return (f"difference {fmt.format(self.value)} [{fmt.format(self.low)}, {fmt.format(self.high)}] "
                f"({how} over {self.n} {plural(self.unit)})")


def pairable(a: UnitSample, b: UnitSample) -> bool:
    """Whether ``a`` and ``b`` were scored on the same units (same kind, same ids)."""
    return a.unit == b.unit and set(a.ids) == set(b.ids)


def difference(a: UnitSample, b: UnitSample) -> Difference | None:
    """``a - b`` with the 95% bootstrap interval of the difference: paired over the units both
    were scored on (`pairable`), else each sample resampled independently. None where either
    sample has fewer than `MIN_UNITS` units or a statistic is undefined on its whole sample."""
    fa, fb = STATISTICS[a.statistic], STATISTICS[b.statistic]
    point = float(fa(a.stats.sum(axis=0)) - fb(b.stats.sum(axis=0)))
    if min(a.n, b.n) < MIN_UNITS or not math.isfinite(point):
        return None
    paired = pairable(a, b)
    if paired:
        order = {u: i for i, u in enumerate(b.ids)}
        b_stats = b.stats[[order[u] for u in a.ids]]
        data: tuple[np.ndarray, ...] = (a.stats, b_stats)
    else:
        data = (a.stats, b.stats)
    low, high = _percentile_interval(
        data, lambda x, y: fa(x.sum(axis=-2)) - fb(y.sum(axis=-2)), paired=paired)
    return Difference(point, min(low, point), max(high, point), a.n if paired else min(a.n, b.n), a.unit, paired)


def _percentile_interval(data: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray],
                         paired: bool) -> tuple[float, float]:
    """`scipy.stats.bootstrap`'s 95% percentile interval of ``statistic`` over the rows (units)
    of each array of ``data`` (``statistic`` receives arrays ``[..., units, k]``); resamples on
    which the statistic is undefined (not finite) are left out."""
    from scipy.stats import bootstrap

    units = max(len(d) for d in data)
    k = sum(d.shape[1] for d in data)
    batch = max(1, min(RESAMPLES, 4_000_000 // max(1, units * k)))  # bounds the [batch, units, k] resample arrays

    def vectorised(*arrays: np.ndarray, axis: int = -1) -> np.ndarray:
        # scipy hands each [units, k] array as [k, (resamples,) units]: the statistics want [(resamples,) units, k]
        return statistic(*(np.moveaxis(x, 0, -1) for x in arrays))

    result = bootstrap(data, vectorised, n_resamples=RESAMPLES, batch=batch, vectorized=True, paired=paired,
                       axis=0, confidence_level=CONFIDENCE, method="percentile", rng=np.random.default_rng(SEED))
    distribution = np.asarray(result.bootstrap_distribution, dtype=np.float64).reshape(-1)
    finite = distribution[np.isfinite(distribution)]
    if not len(finite):
        return math.nan, math.nan
    low, high = np.percentile(finite, [100 * (1 - CONFIDENCE) / 2, 100 * (1 + CONFIDENCE) / 2])
    return float(low), float(high)
