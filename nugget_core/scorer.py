"""`NuggetScorer`: the trainable Nugget parts (scorer FFN, value projection W^V, type
embeddings) and the selection from layer-l states to `Nuggets`.

It is also the ``scorer`` of the reference package's usage pattern (see `nuggify`):
``scorer(**inputs, hidden_states=..., nugget_ratio=r)`` and ``scorer.score_context(...)``.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Protocol

import torch
from torch import nn

from .modes import SelectorKind
from .nuggets import Nuggets, gather_tokens, selection_to_indices
from .residual import CrossAttentionResidual
from .selectors import build_selector


class ScorerSettings(Protocol):
    """The fields of `NuggetConfig` (or ``Nugget2DConfig.scorer_config()``) the scorer reads."""

    scorer_hidden: int | None
    selector: SelectorKind
    value_projection: bool
    feedback: bool


@dataclass
class EncoderPass:
    """What the scorer saw during one encoder forward (filled by `EncoderTap`)."""

    attention_mask: torch.Tensor  # [batch, n]
    ratio: float
    boundary_mask: torch.Tensor | None = None  # [batch, n] bool
    scores: torch.Tensor | None = None  # [batch, n], -inf at padding
    selected: torch.Tensor | None = None  # [batch, n] bool


class NuggetScorer(nn.Module):
    """Scores tokens, selects nuggets, projects them, and supplies the feedback embeddings."""

    def __init__(self, d_model: int, config: ScorerSettings) -> None:
        super().__init__()
        self.config = config
        hidden = config.scorer_hidden or d_model
        self.ffn: nn.Module | None = None
        if config.selector is SelectorKind.TOPK:
            self.ffn = nn.Sequential(nn.Linear(d_model, hidden), nn.GELU(), nn.Linear(hidden, 1))
        self.value_proj: nn.Linear | None = None
        if config.value_projection:
            self.value_proj = nn.Linear(d_model, d_model, bias=False)
            # Identity start: a pretrained decoder first sees the states it was trained on.
            nn.init.eye_(self.value_proj.weight)
        self.type_embeddings: nn.Embedding | None = None
        if config.feedback:
            self.type_embeddings = nn.Embedding(2, d_model)  # 0: non-nugget, 1: nugget
            # Zero start: feedback begins as a no-op on the pretrained encoder.
            nn.init.zeros_(self.type_embeddings.weight)
        self.selector = build_selector(config.selector)
        # Runtime links for the reference-package pattern; plain attributes, not modules.
        self._residual: CrossAttentionResidual | None = None
        self._recent: tuple[weakref.ref[torch.Tensor], EncoderPass] | None = None

    def score(self, features: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """``features [batch, n, d]`` -> scores ``[batch, n]``, ``-inf`` at padding.
        Rule-based selectors have no scorer: their scores are 0 (no residual)."""
        if self.ffn is None:
            scores = features.new_zeros(features.shape[:2])
        else:
            scores = self.ffn(features).squeeze(-1)
        return scores.masked_fill(attention_mask.eq(0), float("-inf"))

    def select(self, scores: torch.Tensor, p: EncoderPass, ratio: float) -> torch.Tensor:
        """``[batch, n]`` bool selection for the pass's mask and boundaries."""
        return self.selector(scores, p.attention_mask, ratio, p.boundary_mask)

    def feedback(self, features: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
        """Add the nugget / non-nugget type embedding to ``features [batch, n, d]``."""
        if self.type_embeddings is None:
            return features
        return features + self.type_embeddings(selected.long()).to(features.dtype)

    def make_nuggets(
        self, hidden_states: torch.Tensor, scores: torch.Tensor, selected: torch.Tensor
    ) -> Nuggets:
        """Gather the selected rows of the last encoder layer ``[batch, n, d]``, in text
        order, and apply the value projection."""
        indices, mask = selection_to_indices(selected)
        encoding = gather_tokens(hidden_states, indices, mask)
        if self.value_proj is not None:
            encoding = self.value_proj(encoding)
        return Nuggets(encoding, mask, gather_tokens(scores, indices, mask), indices)

    def nuggets_from_pass(
        self, hidden_states: torch.Tensor, p: EncoderPass, ratio: float | None = None
    ) -> Nuggets:
        """Nuggets of an encoder pass; ``ratio`` may differ from the pass's only without
        feedback (with feedback the encoder already used the pass's selection)."""
        if p.scores is None or p.selected is None:
            raise RuntimeError("the encoder pass never reached the scorer layer")
        selected = p.selected
        if ratio is not None and ratio != p.ratio:
            if self.type_embeddings is not None:
                raise ValueError(
                    f"nugget_ratio={ratio} differs from the ratio the encoder used for "
                    f"feedback ({p.ratio}); encode with that ratio instead"
                )
            selected = self.select(p.scores, p, ratio)
        return self.make_nuggets(hidden_states, p.scores, selected)

    # --- reference-package pattern -------------------------------------------------

    def remember(self, hidden_states: torch.Tensor, p: EncoderPass) -> None:
        self._recent = (weakref.ref(hidden_states), p)

    def forward(
        self,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        hidden_states: torch.Tensor | None = None,
        nugget_ratio: float | None = None,
        **_: object,
    ) -> Nuggets:
        """Nuggets for ``hidden_states``, the output of the encoder returned by `nuggify`.

        ``input_ids``/``attention_mask`` are accepted for the reference signature; the
        scores come from the encoder pass that produced ``hidden_states``.
        """
        recent = self._recent
        if hidden_states is None or recent is None or recent[0]() is not hidden_states:
            raise ValueError(
                "NuggetScorer needs hidden_states=<last_hidden_state of the encoder returned "
                "by nuggify(...)>, from its most recent call"
            )
        return self.nuggets_from_pass(hidden_states, recent[1], nugget_ratio)

    @contextmanager
    def score_context(self, nuggets: Nuggets) -> Iterator[None]:
        """Within the block, the decoder's cross-attention adds ``nuggets.scores``."""
        if self._residual is None:
            raise RuntimeError("this scorer is not attached to a model (use nuggify)")
        with self._residual.active(nuggets.scores):
            yield
