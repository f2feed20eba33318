"""The 95% intervals the evaluations publish and the report shows.

- A mean of continuous per-example values (BLEU, ROUGE, a reciprocal rank): ± 1.96 standard
  errors of the mean (`stderr`, `means_and_errors`).
- A proportion (accuracy, recall@k, a token's share): the Wilson score interval (`wilson`,
  `share_interval`), never the Wald one: Wald's p ± 1.96 sqrt(p(1-p)/n) is ± 0 at 0 of n and
  at n of n, so an extreme would look certain and a comparison with it "shown" too easily.
  Wilson's interval stays inside [0, 1] and is asymmetric near the extremes: at 0 of n it is
  [0, z² / (n + z²)], at n of n [n / (n + z²), 1].
- A corpus-level statistic that is no mean of per-example values (corpus BLEU, a perplexity
  exp(sum NLL / sum tokens)): the 95% percentile bootstrap interval over its units, documents or
  segments (`bootstrap_interval`; Koehn 2004): each resample draws the units with replacement and
  recomputes the statistic from the sums of their sufficient statistics (n-gram matches and
  lengths; NLL and token counts), so nothing is re-tokenised or re-scored.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence

import numpy as np

Z95 = 1.96  # the normal quantile of every 95% interval the report shows
BOOTSTRAP_RESAMPLES = 1000  # Koehn 2004's number of resamples
BOOTSTRAP_SEED = 0  # fixed: an evaluation stage is a pure function of its inputs, its intervals too


def stderr(values: Sequence[float]) -> float | None:
    """Standard error of the mean of ``values`` (None below two values)."""
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else None


def wilson(successes: float, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval (proportions in [0, 1]) of ``successes`` of ``n`` trials."""
    if n <= 0:
        raise ValueError(f"wilson: n={n} must be > 0")
    if not 0 <= successes <= n:
        raise ValueError(f"wilson: successes={successes} must lie in [0, n={n}]")
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def share_interval(percent: float, n: int | None) -> tuple[float, float] | None:
    """The Wilson 95% interval, in percent, of a share (%) of ``n`` items (None without items)."""
    if not n:
        return None
    low, high = wilson(min(max(percent, 0.0), 100.0) / 100.0 * n, n)
    return 100.0 * low, 100.0 * high


def hits_interval(hits: Sequence[bool | int]) -> tuple[float, float] | None:
    """The Wilson 95% interval, in percent, of the share of true ``hits`` (None without any)."""
    return share_interval(100.0 * sum(map(bool, hits)) / len(hits), len(hits)) if hits else None


def means_and_errors(per_example: dict[str, Sequence[float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Per metric, the mean over examples and (from two examples on) its standard error."""
    means = {m: sum(v) / len(v) for m, v in per_example.items()}
    errors = {m: e for m, v in per_example.items() if (e := stderr(v)) is not None}
    return means, errors


def bootstrap_interval(stats: Sequence[Sequence[float]], statistic: Callable[[np.ndarray], float],
                       resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> tuple[float, float] | None:
    """The 95% percentile bootstrap interval of a corpus statistic over its units (Koehn 2004).

    Args:
        stats: per unit (document, segment) its sufficient statistics, ``[n, k]``: what the
            statistic sums over the corpus (n-gram matches and lengths, NLL and tokens).
        statistic: the corpus statistic from the ``[k]`` sums over some units; a resample on
            which it is undefined (not finite, e.g. no word in the units drawn) is left out.
        resamples: how many times the ``n`` units are drawn with replacement.
        seed: of the draws, so the interval is a pure function of ``stats``.

    Returns:
        (low, high), widened where needed to hold the statistic of the whole corpus (a skewed
        bootstrap distribution of few units can leave it outside); None below
        `stages.common.resampling.MIN_UNITS` units, where the percentile interval covers the truth
        far less often than 95% of the time (benchmarks/bootstrap_coverage.py).
    """
    from stages.common.resampling import MIN_UNITS

    units = np.asarray(stats, dtype=np.float64)
    if units.ndim != 2:
        raise ValueError(f"bootstrap_interval: stats must be [units, statistics], got shape {units.shape}")
    if len(units) < MIN_UNITS:
        return None
    rng = np.random.default_rng(seed)
    values = np.array([statistic(units[rng.integers(0, len(units), len(units))].sum(axis=0))
                       for _ in range(resamples)])
    values = values[np.isfinite(values)]
    point = statistic(units.sum(axis=0))
    if not len(values) or not math.isfinite(point):
        return None
    low, high = np.percentile(values, [2.5, 97.5])
    return min(float(low), point), max(float(high), point)


def perplexity_interval(nll: Sequence[float], counts: Sequence[int]) -> tuple[float, float] | None:
    """The 95% bootstrap interval (`bootstrap_interval`) of a perplexity exp(sum nll / sum counts)
    over units (segments, documents) with NLL ``nll`` (nats) over ``counts`` tokens / words each."""
    if len(nll) != len(counts):
        raise ValueError(f"perplexity_interval: {len(nll)} NLL sums but {len(counts)} counts")

    def perplexity(sums: np.ndarray) -> float:
        return math.exp(sums[0] / sums[1]) if sums[1] > 0 else math.nan

    return bootstrap_interval(list(zip(nll, counts, strict=True)), perplexity)
