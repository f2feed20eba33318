"""How often the report's 95% bootstrap intervals hold the truth, by number of units.

The report's intervals are percentile bootstraps over independent units
(`stages.common.resampling`). With few units the percentile interval is too narrow (its spread
is the plug-in one, biased by (n - 1) / n, and a resample of n units takes few distinct values),
so a 95% interval covers the true value less often than 95% of the time and a difference it
"separates" may be none. This script measures the coverage on synthetic units shaped like the
report's: documents of varying length with a skewed per-document score (a ratio of sums: a
per-token mean, a share, an accuracy over clustered questions), and the same for a perplexity
(exp of a ratio) and for a paired difference of two systems scored on the same documents. The
smallest n whose coverage stays at or above 90% for every statistic is `MIN_UNITS`.

    python benchmarks/bootstrap_coverage.py [--reps 1000] [--out benchmarks/results/bootstrap_coverage.json]
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np

from stages.common.resampling import MIN_UNITS, RESAMPLES, UnitSample, difference

SIZES = (3, 4, 5, 6, 8, 10, 12, 15, 20, 30, 50)
TARGET = 0.90  # the coverage below which an interval is refused


def _units(rng: np.random.Generator, n: int, kind: str) -> np.ndarray:
    """``[n, 2]`` unit statistics; the true value of the statistic is 2.0 (ratio) or e^2 (perplexity)."""
    lengths = 1 + rng.poisson(20, n)
    if kind == "ratio":
        per_token = rng.gamma(2.0, 1.0, n)  # skewed per-document means, expectation 2
    else:
        per_token = rng.lognormal(math.log(2.0) - 0.125, 0.5, n)  # NLL per token, expectation 2
    return np.stack([per_token * lengths, lengths], axis=1)


def coverage(kind: str, n: int, reps: int, rng: np.random.Generator) -> float:
    truth = {"ratio": 2.0, "exp_ratio": math.exp(2.0)}
    hits = 0
    for _ in range(reps):
        if kind == "paired":
            base = _units(rng, n, "ratio")
            other = base.copy()
            other[:, 0] = base[:, 0] + rng.normal(0.3, 1.0, n) * base[:, 1]  # true difference -0.3 (a - b)
            d = difference(UnitSample.of("document", "ratio", range(n), base),
                           UnitSample.of("document", "ratio", range(n), other))
            assert d is not None
            hits += d.low <= -0.3 <= d.high
            continue
        sample = UnitSample.of("document", kind, range(n), _units(rng, n, "ratio" if kind == "ratio" else "ppl"))
        interval = sample.interval()
        assert interval is not None
        low, high = interval
        hits += low <= truth[kind] <= high
    return hits / reps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/bootstrap_coverage.json"))
    args = parser.parse_args()
    import stages.common.resampling as resampling

    rng = np.random.default_rng(20261127)
    start = time.time()
    table: dict[str, dict[int, float]] = {}
    for kind in ("ratio", "exp_ratio", "paired"):
        table[kind] = {}
        for n in SIZES:
            saved, resampling.MIN_UNITS = resampling.MIN_UNITS, 1
            try:
                table[kind][n] = coverage(kind, n, args.reps, rng)
            finally:
                resampling.MIN_UNITS = saved
            print(f"{kind:10s} n={n:3d} coverage {table[kind][n]:.3f}", flush=True)
    smallest = min(n for n in SIZES if all(table[k][m] >= TARGET for k in table for m in SIZES if m >= n))
    result = {"what": "coverage of the 95% percentile bootstrap interval (stages.common.resampling) by units",
              "reps": args.reps, "resamples": RESAMPLES, "target": TARGET, "coverage": table,
              "smallest_n_at_target": smallest, "MIN_UNITS_in_code": MIN_UNITS,
              "seconds": round(time.time() - start, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"smallest n with coverage >= {TARGET} from there on: {smallest} (MIN_UNITS in code: {MIN_UNITS}); "
          f"-> {args.out}")


if __name__ == "__main__":
    main()
