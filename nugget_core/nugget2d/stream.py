"""`Nugget2DStream`: incremental autoregressive decoding with bounded memory.

One sequence (batch 1) is decoded one token at a time with exactly the semantics of
`autoregressive.ar_forward`. Three stores of per-layer KV states stay bounded:

- ``recent``: theta states of the last ``omega_r - 1`` tokens;
- ``nuggets``: phi states of the nuggets that can still be attended (dropped once
  older than ``omega_r + omega_d`` or beyond the ``max_nuggets`` most recent);
- ``scorer``: frozen-LM states of layers ``< l`` for the last ``scorer_window - 1``
  tokens (the scorer's own context).

Each step is one HF forward of 1 token (2 when the token is a nugget: its theta copy
and its phi copy, routed per token) on a cache built from the stores.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from ..typed_access import logits_of
from .autoregressive import ARWindows, nugget_eligibility
from .greedy import GreedyStepper
from .kv import LayerKV
from .model import Nugget2DModel


class Nugget2DStream(GreedyStepper):
    """Incremental decoder state for one sequence (see module docstring)."""

    def __init__(self, model: Nugget2DModel, threshold: float | None = None) -> None:
        threshold = model.config.threshold if threshold is None else threshold
        if threshold is None:
            raise ValueError("autoregressive mode needs a threshold (Lambda): calibrate it")
        self.model = model
        self.threshold = float(threshold)
        self.windows = ARWindows.from_model(model)
        self.position = 0
        self.recent = LayerKV([], [])
        self.nuggets = LayerKV([], [])
        self.scorer_kv = LayerKV([], [])
        device = model.soft_prompt.device
        self.nugget_positions = torch.zeros(0, dtype=torch.long, device=device)
        self.nugget_scores = torch.zeros(0, dtype=model.dtype, device=device)
        self.selected: list[bool] = []

    # --- memory accounting ---------------------------------------------------------

    @property
    def kv_positions(self) -> int:
        """KV positions held per layer by the LM stores (recent + nuggets)."""
        return self.recent.length + self.nuggets.length

    def kv_bytes(self) -> int:
        """Bytes held by all stores, scorer included."""
        return self.recent.nbytes() + self.nuggets.nbytes() + self.scorer_kv.nbytes()

    # --- decoding --------------------------------------------------------------------

    def _score(self, token: torch.Tensor) -> torch.Tensor:
        model, p = self.model, self.position
        cache = self.scorer_kv.to_cache() if self.scorer_kv.keys else DynamicCache()
        past = self.scorer_kv.length
        mask = torch.zeros(1, 1, 1, past + 1, dtype=model.dtype, device=token.device)
        features = model.features(
            token,
            mask,
            position_ids=torch.tensor([[p]], device=token.device),
            past_key_values=cache,
        )
        if model.config.scorer_layer > 0:
            keep = self.windows.scorer - 1
            full = LayerKV.from_cache(cache)
            self.scorer_kv = full.slice(max(full.length - keep, 0)) if keep else LayerKV([], [])
        return model.scorer.score(features.to(model.dtype), torch.ones_like(token))[0, 0]

    @torch.no_grad()
    def step(self, token_id: int | torch.Tensor) -> torch.Tensor:
        """Feed one token; returns the next-token logits ``[vocab]``."""
        model, w, p = self.model, self.windows, self.position
        device = self.nugget_positions.device
        token = torch.as_tensor(token_id, device=device).reshape(1, 1)
        score = self._score(token)
        is_nugget = bool(score > self.threshold)
        eligible = nugget_eligibility(
            torch.tensor([[p]], device=device),
            self.nugget_positions[None],
            torch.ones_like(self.nugget_positions)[None],
            w,
        )[0, 0]
        past = self.nuggets.select(eligible).cat(self.recent) if eligible.any() else self.recent
        n_past, n_nug = past.length, int(eligible.sum())
        q = 2 if is_nugget else 1
        visible = torch.ones(1, q, n_past + q, dtype=torch.bool, device=device)
        visible[0, 0, n_past + 1 :] = False  # theta copy: not the phi twin
        if is_nugget:
            visible[0, 1, n_past] = False  # phi copy: not the theta twin
        # Keys: eligible nuggets, recent tokens, the token's theta copy [, its phi copy].
        key_scores = torch.zeros(1, n_past + q, dtype=model.dtype, device=device)
        key_scores[0, :n_nug] = self.nugget_scores[eligible]
        if is_nugget:
            key_scores[0, -1] = score
        gates = torch.tensor([[[0.0], [1.0]]], dtype=model.dtype, device=device)[:, :q]
        cache = past.to_cache() if past.keys else DynamicCache()
        out = model.lm_forward(
            gates=(gates, 1.0 - gates),  # (phi, theta): row 0 the theta copy, row 1 the phi copy
            inputs_embeds=model.embed(token.expand(1, q)),
            attention_mask=model.attention_mask(visible, key_scores),
            position_ids=torch.full((1, q), p, device=device),
            past_key_values=cache,
            use_cache=True,
        )
        new = LayerKV.from_cache(cache).slice(n_past)
        keep = w.recent - 1
        recent = self.recent.cat(new.slice(0, 1))
        self.recent = recent.slice(max(recent.length - keep, 0)) if keep else LayerKV([], [])
        if is_nugget:
            self.nuggets = self.nuggets.cat(new.slice(1, 2))
            self.nugget_positions = torch.cat(
                [self.nugget_positions, self.nugget_positions.new_tensor([p])]
            )
            self.nugget_scores = torch.cat([self.nugget_scores, score.reshape(1)])
        self.selected.append(is_nugget)
        self.position += 1
        self._prune()
        return logits_of(out)[0, 0]

    def _prune(self) -> None:
        """Drop nuggets that no later query can attend (windows only move forward)."""
        w, nxt = self.windows, self.position
        pos = self.nugget_positions
        alive = torch.ones_like(pos, dtype=torch.bool)
        if w.distant is not None:
            alive &= pos > nxt - w.recent - w.distant
        if w.cap is not None:
            distant = alive & (pos <= nxt - w.recent)
            later = distant.flip(0).long().cumsum(0).flip(0) - distant.long()
            alive &= ~distant | (later < w.cap)
        if not bool(alive.all()):
            self.nuggets = self.nuggets.select(alive)
            self.nugget_positions = pos[alive]
            self.nugget_scores = self.nugget_scores[alive]
