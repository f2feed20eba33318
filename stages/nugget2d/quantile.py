"""Threshold calibration (Nugget2D §2.5 "Choice of Lambda"): Lambda is the (1 - r)
quantile of scorer outputs pooled over sampled documents, so that a ratio r of tokens
become nuggets on average; the ratio it realises is then measured per held-out
document (mean and spread across documents), and the scores drawn as a histogram."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from stages.common.figures import finish, new_figure, note_if_equal, note_no_data

if TYPE_CHECKING:
    from matplotlib.figure import Figure


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


def score_histogram(scores: torch.Tensor, threshold: float, ratio: float, bins: int, path: Path) -> Figure:
    """Histogram of the calibration scores with Lambda marked, saved to ``path``."""
    fig, ax = new_figure()
    values = scores.detach().float().reshape(-1).cpu().numpy()
    ax.hist(values, bins=bins, color="#4c72b0", label="calibration tokens")
    ax.axvline(threshold, color="#c44e52", linestyle="--", label=f"Lambda = {threshold:.3f} (r = {ratio:g})")
    if values.size:
        note_if_equal(ax, values)
    else:
        note_no_data(ax, "no calibration scores")
    return finish(fig, ax, f"Nugget2D scorer outputs of n={values.size} calibration tokens",
                  "scorer output (unitless score)", "tokens (count)", path)


def histogram_png(scores: torch.Tensor, threshold: float, ratio: float, bins: int, path: Path) -> Path:
    """`score_histogram` written to ``path``; returns ``path``."""
    score_histogram(scores, threshold, ratio, bins, path)
    return path
