"""Scores for calibrating the autoregressive threshold Lambda (paper 2.5).

Lambda is set so that a ratio r of tokens become nuggets on average: the calibration
stage collects `calibration_scores` over sampled documents and takes
`threshold_for_ratio` (the ``1 - r`` quantile); `realised_ratio` checks it on held-out
text. The scores are those autoregressive mode thresholds: the frozen scorer LM with
its ``scorer_window`` (`autoregressive.ar_scores`).
"""

from __future__ import annotations

import torch

from .autoregressive import ar_scores, threshold_for_ratio
from .model import Nugget2DModel

__all__ = ["calibration_scores", "realised_ratio", "threshold_for_ratio"]


@torch.no_grad()
def calibration_scores(
    model: Nugget2DModel, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Raw scorer outputs of every real token of ``input_ids [batch, n]`` (right-padded),
    flattened to ``[n_real_tokens]``, float32."""
    if attention_mask is None:
        attention_mask = torch.ones_like(input_ids)
    window = model.config.scorer_context
    out = []
    for row, mask in zip(input_ids, attention_mask, strict=True):
        n = int(mask.ne(0).sum())
        if n:
            out.append(ar_scores(model, row[None, :n], window)[0].float())
    return torch.cat(out) if out else torch.zeros(0, device=input_ids.device)


def realised_ratio(scores: torch.Tensor, threshold: float) -> float:
    """Fraction of ``scores`` that make nuggets (``score > threshold``)."""
    return float((scores > threshold).float().mean()) if scores.numel() else 0.0
