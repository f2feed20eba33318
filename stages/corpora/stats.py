"""Dataset statistics as in the Nugget paper's table 1 (counts, mean lengths in tokens)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def length_stats(prefix: str, lengths: Sequence[int]) -> dict[str, float]:
    """``{prefix}_count``, ``_mean_tokens``, ``_max_tokens`` (zeros for no rows)."""
    n = len(lengths)
    return {
        f"{prefix}_count": n,
        f"{prefix}_mean_tokens": statistics.fmean(lengths) if n else 0.0,
        f"{prefix}_max_tokens": max(lengths) if n else 0,
    }


def scoped(scope: str, stats: dict[str, float]) -> dict[str, float]:
    """Metric names ``scope/key`` (one MLflow metric per split and statistic)."""
    return {f"{scope}/{k}": v for k, v in stats.items()}
