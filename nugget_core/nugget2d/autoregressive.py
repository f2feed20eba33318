"""Autoregressive Nugget2D (paper 2.5): parallel (training) and incremental decoding.

Semantics, for a token at position ``p`` (both paths compute exactly this):

- a token is a nugget when its score (frozen LM, layer l, attending to the last
  ``scorer_window`` tokens) exceeds ``threshold`` (Lambda);
- the LM with theta attends directly to the tokens in ``(p - omega_r, p]`` and to the
  *phi states* of the nuggets at positions ``<= p - omega_r`` (and ``> p - omega_r -
  omega_d`` when a distant window is set; at most the ``max_nuggets`` most recent);
- a nugget's phi states are computed by the LM with phi *at that token only*, seeing
  the same context as the token itself (paper eq. 11: phi is applied to nugget tokens
  only, so nothing is encoded twice except the nuggets);
- the nugget scores are added to the logits of every attention to a nugget key
  (residual, straight-through by default).

`ar_forward` computes this for all positions in one pass: the sequence is ``[theta
stream (T tokens) ; phi stream (N nugget tokens)]`` with a 4D mask, and the
`AdapterRouter` routes phi / theta per token. This is the paper's training
approximation (sample ``omega_d + omega_r`` tokens, predict the last ``omega_r``; see
`ar_loss`) with its fixed distant/recent split replaced by the sliding one that
incremental decoding uses, so that training and decoding agree exactly.
`Nugget2DStream` decodes one token at a time with memory bounded by the windows.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from ..nuggets import gather_tokens, selection_to_indices
from ..typed_access import logits_of
from .bias import nugget_attention_mask
from .model import Nugget2DModel


@dataclass
class ARWindows:
    """``recent`` (omega_r), ``distant`` (omega_d, None = unbounded), ``cap`` (max
    nuggets, None = no cap), ``scorer`` (frozen scorer LM window)."""

    recent: int
    distant: int | None
    cap: int | None
    scorer: int

    @classmethod
    def from_model(cls, model: Nugget2DModel) -> ARWindows:
        c = model.config
        return cls(c.recent_window, c.distant_window, c.max_nuggets, c.scorer_context)


def sliding_window_mask(n: int, window: int, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """``[1, 1, n, n]`` float mask on ``device``: token i sees j in ``(i - window, i]``."""
    i = torch.arange(n, device=device)
    visible = (i[None, :] <= i[:, None]) & (i[None, :] > i[:, None] - window)
    return nugget_attention_mask(visible[None], dtype)


def nugget_eligibility(
    query_pos: torch.Tensor, nugget_pos: torch.Tensor, nugget_mask: torch.Tensor, w: ARWindows
) -> torch.Tensor:
    """``[batch, q, N]`` bool: which nuggets a query at ``query_pos [batch, q]`` attends.

    ``nugget_pos [batch, N]`` must be in text order (the cap keeps the latest)."""
    q, n = query_pos[:, :, None], nugget_pos[:, None, :]
    eligible = (n <= q - w.recent) & nugget_mask.bool()[:, None, :]
    if w.distant is not None:
        eligible &= n > q - w.recent - w.distant
    if w.cap is not None:
        later = eligible.flip(-1).long().cumsum(-1).flip(-1) - eligible.long()
        eligible &= later < w.cap
    return eligible


@dataclass
class AROutput:
    """``logits [batch, T, vocab]``, ``scores [batch, T]``, ``selected [batch, T]`` bool,
    and (from `ar_loss`) the scalar ``loss``."""

    logits: torch.Tensor
    scores: torch.Tensor
    selected: torch.Tensor
    loss: torch.Tensor | None = None


def ar_scores(model: Nugget2DModel, input_ids: torch.Tensor, window: int) -> torch.Tensor:
    """Scores ``[batch, T]`` with the frozen scorer LM restricted to ``window`` tokens."""
    mask = sliding_window_mask(input_ids.shape[1], window, model.dtype, input_ids.device)
    features = model.features(input_ids, mask.expand(input_ids.shape[0], -1, -1, -1))
    return model.scorer.score(features.to(model.dtype), torch.ones_like(input_ids))


def threshold_for_ratio(scores: torch.Tensor, ratio: float) -> float:
    """Lambda such that a fraction ``ratio`` of ``scores`` (any shape) lies above it."""
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio={ratio!r} must be in (0, 1]")
    return float(torch.quantile(scores.float(), 1.0 - ratio))


def ar_select(
    model: Nugget2DModel,
    scores: torch.Tensor,
    threshold: float | None = None,
    ratio: float | None = None,
) -> torch.Tensor:
    """``[batch, T]`` bool: tokens whose score exceeds Lambda.

    Lambda is ``threshold`` when given; else, with ``ratio``, the in-batch ``1 - ratio``
    quantile of ``scores`` (a ratio r of the batch's tokens: training before a
    calibrated Lambda exists); else ``model.config.threshold``.
    """
    if threshold is None and ratio is not None:
        threshold = threshold_for_ratio(scores.detach(), ratio)
    threshold = model.config.threshold if threshold is None else threshold
    if threshold is None:
        raise ValueError("autoregressive mode needs a threshold (Lambda): calibrate it")
    return scores.detach() > threshold


def ar_forward(
    model: Nugget2DModel,
    input_ids: torch.Tensor,
    threshold: float | None = None,
    selected: torch.Tensor | None = None,
    ratio: float | None = None,
) -> AROutput:
    """All next-token logits of ``input_ids [batch, T]`` (no padding) in one pass.

    Nuggets are ``selected [batch, T]`` when given, else `ar_select` (``threshold``, then
    ``ratio``, then ``model.config.threshold``).
    """
    w = ARWindows.from_model(model)
    batch, t = input_ids.shape
    device = input_ids.device
    scores = ar_scores(model, input_ids, w.scorer)
    if selected is None:
        selected = ar_select(model, scores, threshold, ratio)
    idx, nmask = selection_to_indices(selected)
    idx, nmask = idx.to(device), nmask.to(device)
    n = idx.shape[1]
    theta_pos = torch.arange(t, device=device).expand(batch, -1)
    query_pos = torch.cat([theta_pos, idx], dim=1)  # [batch, T + N]
    is_phi = torch.arange(t + n, device=device) >= t
    # theta keys: the recent window; a phi query sees earlier tokens, not its theta twin.
    kt = theta_pos[:, None, :]
    qp = query_pos[:, :, None]
    recent = (kt > qp - w.recent) & ((kt < qp) | ((kt == qp) & ~is_phi[None, :, None]))
    # phi keys: eligible distant nuggets, and a phi query's own key.
    phi = nugget_eligibility(query_pos, idx, nmask, w)
    own = torch.zeros_like(phi)
    own[:, t:, :] = torch.eye(n, dtype=torch.bool, device=device)
    visible = torch.cat([recent, phi | own], dim=2)
    # Keys: T theta tokens (no residual), then the N phi nugget copies (their scores).
    key_scores = torch.cat([scores.new_zeros(batch, t), gather_tokens(scores, idx, nmask)], 1)
    embeds = model.embed(torch.cat([input_ids, torch.gather(input_ids, 1, idx)], dim=1))
    phi_gate = torch.cat([torch.zeros_like(theta_pos), nmask], dim=1)[..., None]
    theta_gate = (~is_phi).long().expand(batch, -1)[..., None]
    out = model.lm_forward(
        gates=(phi_gate.to(model.dtype), theta_gate.to(model.dtype)),
        inputs_embeds=embeds,
        attention_mask=model.attention_mask(visible, key_scores),
        position_ids=query_pos,
        use_cache=False,
    )
    return AROutput(logits_of(out)[:, :t], scores, selected)


def ar_loss(
    model: Nugget2DModel,
    input_ids: torch.Tensor,
    predict_last: int | None = None,
    threshold: float | None = None,
    ratio: float | None = None,
) -> AROutput:
    """Training approximation: on samples ``input_ids [batch, T]`` of ``omega_d + omega_r``
    tokens, ``loss`` = the mean NLL of the last ``predict_last`` (default omega_r) tokens.

    Nugget selection as in `ar_forward` (``threshold``, else the in-batch ``ratio``
    quantile, else ``model.config.threshold``). Returns the `AROutput` (logits of all
    ``T`` positions, scores, selection) with ``loss`` set.
    """
    predict_last = predict_last or model.config.recent_window
    out = ar_forward(model, input_ids, threshold=threshold, ratio=ratio)
    out.loss = last_tokens_nll(out.logits, input_ids, predict_last)
    return out


def last_tokens_nll(logits: torch.Tensor, input_ids: torch.Tensor, predict_last: int) -> torch.Tensor:
    """Mean NLL of the last ``predict_last`` tokens of ``input_ids [batch, T]`` under the
    next-token ``logits [batch, T, V]`` (the AR training loss of the model and its baselines)."""
    start = max(input_ids.shape[1] - predict_last, 1)
    return nn.functional.cross_entropy(logits[:, start - 1 : -1].flatten(0, 1).float(), input_ids[:, start:].flatten())
