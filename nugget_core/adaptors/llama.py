"""The LLaMA family for Nugget2D: LLaMA, Mistral and Qwen2 causal LMs.

In transformers these three share one layout (``model.model.{embed_tokens, layers,
norm, rotary_emb}``, rotary keys cached after rotation, attention through
``ALL_ATTENTION_FUNCTIONS`` with the mask given to the model's forward) so one adaptor
covers them; another family with this layout is one `register_adaptor` call.
"""

from __future__ import annotations

from torch import nn
from transformers import PreTrainedModel

from ..typed_access import child
from .base import CausalLMAdaptor


class LlamaFamilyAdaptor(CausalLMAdaptor):
    """Locates the pieces of a LLaMA-family ``*ForCausalLM``."""

    def backbone(self, model: PreTrainedModel) -> nn.Module:
        """The decoder stack (``LlamaModel`` & co.), below the LM head."""
        return child(model, "model", nn.Module)

    def layers(self, model: PreTrainedModel) -> nn.ModuleList:
        return child(self.backbone(model), "layers", nn.ModuleList)

    def embed_tokens(self, model: PreTrainedModel) -> nn.Embedding:
        return child(self.backbone(model), "embed_tokens", nn.Embedding)

    def rotary(self, model: PreTrainedModel) -> nn.Module:
        return child(self.backbone(model), "rotary_emb", nn.Module)

    def check(self, model: PreTrainedModel) -> None:
        if not hasattr(model, "model") or not hasattr(model.model, "layers"):
            raise ValueError(
                f"{type(model).__name__} is not a *ForCausalLM with model.model.layers"
            )
