"""Threshold calibration (Nugget2D §2.5 "Choice of Lambda"): Lambda is the (1 - r)
quantile of scorer outputs pooled over sampled documents, so that a ratio r of tokens
become nuggets on average; the ratio it realises is then measured per held-out
document (mean and spread across documents), and the scores drawn as a histogram."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path

import torch


def calibrate(scores: Sequence[torch.Tensor], ratio: float) -> float:
    """Lambda from per-document score vectors pooled together."""
    from nugget_core.nugget2d import threshold_for_ratio

    pooled = torch.cat([s.reshape(-1).float() for s in scores])
    if pooled.numel() == 0:
        raise ValueError("no scores to calibrate on")
    return threshold_for_ratio(pooled, ratio)


def document_ratios(scores: Sequence[torch.Tensor], threshold: float) -> list[float]:
    """Fraction of each document's tokens selected (``score > threshold``)."""
    from nugget_core.nugget2d import realised_ratio

    return [realised_ratio(s.reshape(-1), threshold) for s in scores if s.numel()]


def spread(values: Sequence[float], prefix: str) -> dict[str, float]:
    """Mean, standard deviation, min and max across documents (each counts once)."""
    if not values:
        raise ValueError(f"{prefix}: no documents")
    return {
        f"{prefix}_mean": statistics.fmean(values),
        f"{prefix}_std": statistics.pstdev(values),
        f"{prefix}_min": min(values),
        f"{prefix}_max": max(values),
        f"{prefix}_docs": float(len(values)),
    }


def histogram_png(scores: torch.Tensor, threshold: float, ratio: float, bins: int, path: Path) -> Path:
    """Histogram of the calibration scores with Lambda marked."""
    import matplotlib

    matplotlib.use("Agg")  # headless: stages run in Ray workers without a display
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.hist(scores.float().numpy(), bins=bins, color="#4c72b0")
    ax.axvline(threshold, color="#c44e52", linestyle="--", label=f"Lambda = {threshold:.3f} (r = {ratio:g})")
    ax.set_xlabel("scorer output")
    ax.set_ylabel("tokens")
    ax.set_title(f"Nugget2D scores of {scores.numel()} calibration tokens")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
