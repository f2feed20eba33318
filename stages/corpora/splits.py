"""Deterministic train/dev/test assignment of whole documents from a seed."""

from __future__ import annotations

import numpy as np

SPLITS = ("train", "dev", "test")


def _size(n: int, fraction: float) -> int:
    # a non-zero fraction never rounds to an empty split (a silent empty dev set would
    # make every later dev metric NaN)
    return max(1, round(n * fraction)) if fraction > 0 else 0


def assign_splits(n: int, dev_fraction: float, test_fraction: float, seed: int) -> list[str]:
    """Split name of each of ``n`` documents; same seed -> same assignment."""
    n_dev, n_test = _size(n, dev_fraction), _size(n, test_fraction)
    if n - n_dev - n_test < 1:
        raise ValueError(
            f"{n} documents cannot fill dev ({n_dev}), test ({n_test}) and a non-empty train split"
        )
    order = np.random.default_rng(seed).permutation(n)
    out = ["train"] * n
    for i in order[:n_test]:
        out[i] = "test"
    for i in order[n_test : n_test + n_dev]:
        out[i] = "dev"
    return out
