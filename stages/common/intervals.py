"""The 95% intervals the evaluations publish and the report shows.

- A mean of continuous per-example values (BLEU, ROUGE, a reciprocal rank): ± 1.96 standard
  errors of the mean (`stderr`, `means_and_errors`).
- A proportion (accuracy, recall@k, a token's share): the Wilson score interval (`wilson`,
  `share_interval`), never the Wald one: Wald's p ± 1.96 sqrt(p(1-p)/n) is ± 0 at 0 of n and
  at n of n, so an extreme would look certain and a comparison with it "shown" too easily.
  Wilson's interval stays inside [0, 1] and is asymmetric near the extremes: at 0 of n it is
  [0, z² / (n + z²)], at n of n [n / (n + z²), 1].
- A statistic of sums over independent units (corpus BLEU, a perplexity exp(sum NLL / sum
  tokens), a share of tokens, any metric of clustered examples): the 95% percentile bootstrap
  over the units, `stages.common.resampling.UnitSample` (Koehn 2004), which also pairs two
  systems scored on the same units.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

Z95 = 1.96  # the normal quantile of every 95% interval the report shows


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
