"""The reference package's usage pattern, on top of `NuggetModel`.

Secondary API, for users switching from the authors' ``nugget`` package::

    scorer, encoder, decoder = nuggify(model, NuggetConfig(ratio=0.1, scorer_layer=3))
    encoder_out = encoder(**inputs)
    nuggets = scorer(**inputs, hidden_states=encoder_out.last_hidden_state, nugget_ratio=0.1)
    with scorer.score_context(nuggets):
        out = decoder(encoder_outputs=[nuggets.encoding], attention_mask=nuggets.mask,
                      labels=..., decoder_attention_mask=...)

``decoder`` is the HF model itself (hooks attached), ``encoder`` wraps its encoder so that
each call is scored at layer ``l``. Prefer `get_nugget_model` for new code.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import PreTrainedModel
from transformers.modeling_outputs import BaseModelOutput

from ..scorer import NuggetScorer
from .config import NuggetConfig
from .model import NuggetModel, get_nugget_model


class NuggetEncoder(nn.Module):
    """The HF encoder, run inside a nugget pass; its scores are handed to the scorer."""

    def __init__(self, nugget_model: NuggetModel) -> None:
        super().__init__()
        self.encoder = nugget_model.base_model.get_encoder()
        # A plain reference: registering the NuggetModel would duplicate its parameters.
        self._nugget_model = (nugget_model,)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        boundary_mask: torch.Tensor | None = None,
        nugget_ratio: float | None = None,
        **kwargs: Any,
    ) -> BaseModelOutput:
        """``nugget_ratio`` (default ``config.ratio``) is used at layer ``l`` for feedback."""
        model = self._nugget_model[0]
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        with model.encoder_pass(attention_mask, nugget_ratio, boundary_mask) as p:
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        model.scorer.remember(out.last_hidden_state, p)
        return out


def nuggify(
    model: PreTrainedModel, config: NuggetConfig | None = None, **overrides: Any
) -> tuple[NuggetScorer, NuggetEncoder, PreTrainedModel]:
    """Reference-package entry point: ``scorer, encoder, decoder = nuggify(model)``."""
    nugget_model = get_nugget_model(model, config, **overrides)
    return nugget_model.scorer, NuggetEncoder(nugget_model), nugget_model.base_model
