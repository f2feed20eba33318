"""BART: post-LN decoder layers ``model.model.decoder.layers[i]`` whose cross-attention
``encoder_attn`` is followed by the layer's own dropout, residual and
``encoder_attn_layer_norm``; LM head ``lm_head`` + ``final_logits_bias``."""

from __future__ import annotations

import torch
from transformers import PreTrainedModel

from .family import LayerSettings, Seq2SeqFamily, place_like
from .gating import GatingLayer


class BartFamily(Seq2SeqFamily):
    def encoder_layer_settings(self, model: PreTrainedModel) -> LayerSettings:
        c = model.config
        return LayerSettings(
            d_model=int(c.d_model),
            heads=int(c.encoder_attention_heads),
            ffn_dim=int(c.encoder_ffn_dim),
            dropout=float(c.dropout),
            activation=str(c.activation_function),
            layer_norm_eps=1e-5,  # BART's layer norms are nn.LayerNorm with the default epsilon
        )

    def remove_cross_attention(self, model: PreTrainedModel) -> None:
        # BartDecoderLayer only touches these when given encoder_hidden_states.
        for layer in model.get_decoder().layers:
            del layer.encoder_attn
            del layer.encoder_attn_layer_norm

    def install_gating(self, model: PreTrainedModel, d_repr: int) -> None:
        # Same call signature as encoder_attn; the layer's residual + encoder_attn_layer_norm
        # around it are exactly fig. 2(c)'s "add & norm".
        d_model = int(model.config.d_model)
        for index, layer in enumerate(model.get_decoder().layers):
            layer_idx = getattr(layer.encoder_attn, "layer_idx", None)
            layer.encoder_attn = place_like(GatingLayer(d_model, d_repr, index if layer_idx is None else layer_idx),
                                            model)

    def lm_logits(self, model: PreTrainedModel, hidden: torch.Tensor) -> torch.Tensor:
        return model.lm_head(hidden) + model.final_logits_bias.to(hidden.device)
