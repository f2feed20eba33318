"""The two RE poolings of contextualised states into one vector (before the projection W)."""

from __future__ import annotations

import torch


def first_position(hidden: torch.Tensor) -> torch.Tensor:
    """``h(y_1)`` of eq. 1: ``hidden [batch, n, d]`` at the prepended [CLS] position -> ``[batch, d]``."""
    return hidden[:, 0]


def sqrt_mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Eq. 2 before W: ``sum_{i<=T} h(x_i) / sqrt(T)`` over the ``T`` real tokens of each row.

    Dividing by ``sqrt(T)`` rather than ``T`` is the paper's choice (the sum of T roughly
    independent unit-scale vectors has norm ~ sqrt(T), so the pooled vector keeps a
    length-independent scale); it is not the plain mean of `nugget_core.baselines`.
    """
    weights = attention_mask.to(hidden.dtype).unsqueeze(-1)
    counts = weights.sum(dim=1)
    if bool((counts == 0).any()):
        raise ValueError("sqrt_mean_pool: a row of attention_mask has no real token")
    return (hidden * weights).sum(dim=1) / counts.sqrt()
