"""T5: pre-LN blocks ``decoder.block[i].layer = [self-attention, cross-attention, FFN]``;
LM head ``lm_head`` after scaling by ``d_model ** -0.5`` when the embeddings are tied.

The gating decoder replaces the whole cross-attention sublayer ``layer[1]`` by
`T5GatingSublayer`, which computes ``LayerNorm(h + dropout(G(h)))``: RE fig. 2(c)'s
"add & norm" after the gating layer (post-LN), not T5's pre-LN layout
``h + dropout(attention(T5LayerNorm(h)))``. The paper draws the gating decoder this way
and trains T5-small with it; the new sublayer (and its nn.LayerNorm) is randomly
initialised anyway.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import PretrainedConfig, PreTrainedModel

from ..typed_access import child
from .family import LayerSettings, Seq2SeqFamily, place_like
from .gating import GatingLayer


class T5GatingSublayer(nn.Module):
    """Stands in for ``T5LayerCrossAttention`` (same call signature and return tuple)."""

    def __init__(self, config: PretrainedConfig, d_repr: int, layer_idx: int) -> None:
        super().__init__()
        self.gating = GatingLayer(int(config.d_model), d_repr, layer_idx)
        self.layer_norm = nn.LayerNorm(int(config.d_model), eps=float(config.layer_norm_epsilon))
        self.dropout = nn.Dropout(float(config.dropout_rate))

    def forward(
        self,
        hidden_states: torch.Tensor,
        key_value_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_bias: torch.Tensor | None = None,
        past_key_values: Any = None,
        cache: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor | None, None]:
        """``(LayerNorm(h + dropout(G(h))), position_bias, None)``; T5Block hands the
        position bias on to the next block's cross sublayer, which ignores it too. The
        running sum of incremental decoding lives in ``past_key_values`` (see `GatingLayer`)."""
        gated, _ = self.gating(hidden_states, key_value_states=key_value_states, past_key_values=past_key_values,
                               cache=cache)  # transformers >= 5.24's name of the same cache
        return self.layer_norm(hidden_states + self.dropout(gated)), position_bias, None


class T5Family(Seq2SeqFamily):
    def encoder_layer_settings(self, model: PreTrainedModel) -> LayerSettings:
        c = model.config
        return LayerSettings(
            d_model=int(c.d_model),
            heads=int(c.num_heads),
            ffn_dim=int(c.d_ff),
            dropout=float(c.dropout_rate),
            activation=str(c.dense_act_fn),  # "relu" for T5 (v1.0); v1.1's gated FFN is not copied
            layer_norm_eps=float(c.layer_norm_epsilon),
        )

    def remove_cross_attention(self, model: PreTrainedModel) -> None:
        # T5Block reads layer[1] only when given encoder_hidden_states and the FFN as layer[-1].
        for block in model.get_decoder().block:
            del block.layer[1]

    def install_gating(self, model: PreTrainedModel, d_repr: int) -> None:
        for index, block in enumerate(model.get_decoder().block):
            layer_idx = getattr(block.layer[1].EncDecAttention, "layer_idx", None)
            sublayer = T5GatingSublayer(model.config, d_repr, index if layer_idx is None else layer_idx)
            block.layer[1] = place_like(sublayer, model)

    def lm_logits(self, model: PreTrainedModel, hidden: torch.Tensor) -> torch.Tensor:
        # T5ForConditionalGeneration.forward: tied embeddings -> rescale before the head.
        if model.config.scale_decoder_outputs:
            hidden = hidden * (child(model, "model_dim", int) ** -0.5)
        return model.lm_head(hidden)
