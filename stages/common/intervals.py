"""Standard errors behind the 95% intervals the evaluations publish and the report shows
(half-width 1.96 se): of a mean over examples, and of a share (binomial)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def stderr(values: Sequence[float]) -> float | None:
    """Standard error of the mean of ``values`` (None below two values)."""
    return statistics.stdev(values) / len(values) ** 0.5 if len(values) > 1 else None


def share_se(percent: float, n: int | None) -> float | None:
    """Binomial standard error, in percentage points, of a share (%) of ``n`` items
    (None without items)."""
    if not n:
        return None
    p = percent / 100.0
    return 100.0 * math.sqrt(max(p * (1.0 - p), 0.0) / n)


def means_and_errors(per_example: dict[str, Sequence[float]]) -> tuple[dict[str, float], dict[str, float]]:
    """Per metric, the mean over examples and (from two examples on) its standard error."""
    means = {m: sum(v) / len(v) for m, v in per_example.items()}
    errors = {m: e for m, v in per_example.items() if (e := stderr(v)) is not None}
    return means, errors
