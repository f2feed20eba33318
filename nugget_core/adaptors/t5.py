"""T5: ``encoder.block`` / ``decoder.block``; cross-attention in
``decoder.block[i].layer[1].EncDecAttention`` (mask keyword ``mask``)."""

from __future__ import annotations

from torch import nn
from transformers import PreTrainedModel

from .base import Seq2SeqAdaptor


class T5Adaptor(Seq2SeqAdaptor):
    cross_mask_kwarg = "mask"

    def encoder_layers(self, model: PreTrainedModel) -> nn.ModuleList:
        return model.get_encoder().block

    def embedding_modules(self, model: PreTrainedModel) -> list[nn.Module]:
        # Shared with the decoder (and tied to the LM head unless configured otherwise).
        return [model.get_encoder().embed_tokens]

    def cross_attention_modules(self, model: PreTrainedModel) -> list[nn.Module]:
        return [block.layer[1].EncDecAttention for block in model.get_decoder().block]

    def attention_scale(self, model: PreTrainedModel) -> float:
        """T5 does not scale ``q k^T`` (the scaling is folded into its initialisation), so
        eq. 5's ``(q k^T + s) / sqrt(d)`` becomes ``q k^T + s`` there."""
        del model
        return 1.0
