"""BART and mBART: ``model.model.{encoder,decoder}.layers``, cross-attention in
``decoder.layers[i].encoder_attn`` (mask keyword ``attention_mask``)."""

from __future__ import annotations

from torch import nn
from transformers import PreTrainedModel

from .base import Seq2SeqAdaptor


class BartAdaptor(Seq2SeqAdaptor):
    def encoder_layers(self, model: PreTrainedModel) -> nn.ModuleList:
        return model.get_encoder().layers

    def embedding_modules(self, model: PreTrainedModel) -> list[nn.Module]:
        encoder = model.get_encoder()
        return [encoder.embed_tokens, encoder.embed_positions, encoder.layernorm_embedding]

    def cross_attention_modules(self, model: PreTrainedModel) -> list[nn.Module]:
        return [layer.encoder_attn for layer in model.get_decoder().layers]
